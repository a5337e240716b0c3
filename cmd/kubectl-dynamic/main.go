// Command kubectl-dynamic is the kubectl plugin of dynamic-ingress-operator
// (docs/kubectl-dynamic.md): `kubectl dynamic status|preview|wait|override|approve|history`
// show a state's switches, what a response would change, wait for a flip to
// be in place, pin a switch, approve another's pin, and show a state's last response changes. It reads the cluster as the user's
// kubeconfig allows and writes only where a command says so. The decisions
// it shows are the manager's own (package decision); this is wiring only.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/plugin"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	args := os.Args[1:]
	if filepath.Base(os.Args[0]) == completionHelper {
		// kubectl completes `kubectl dynamic ...` by running this name
		// with the words typed so far: cobra's own completion command.
		args = append([]string{cobra.ShellCompRequestCmd}, args...)
	}
	code := run(ctx, args, genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	stop()
	os.Exit(code)
}

// exitStatus ends a command with a status and no message: preview
// --exit-code when something would change.
// completionHelper is the executable kubectl runs to complete a plugin's
// arguments: a link to kubectl-dynamic under this name on the PATH gives
// `kubectl dynamic <TAB>` the names of states and switches
// (docs/kubectl-dynamic.md).
const completionHelper = "kubectl_complete-dynamic"

type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// exitError is an error printed as usual that exits with code instead of
// 1 (preview --exit-code: 2 for an error, as kubectl diff).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// run runs the command line args and returns the exit status: 0, 1 for
// errors (one line on stderr, naming the object), 2 for usage.
func run(ctx context.Context, args []string, streams genericiooptions.IOStreams) int {
	root := newRootCommand(streams)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	var status exitStatus
	switch {
	case err == nil:
		return 0
	case errors.As(err, &status):
		return int(status)
	}
	_, _ = fmt.Fprintln(streams.ErrOut, "error: "+oneLine(err.Error()))
	var coded *exitError
	switch {
	case isUsage(err):
		return 2
	case errors.As(err, &coded):
		return coded.code
	}
	return 1
}

// isUsage says whether err is about the command line rather than the
// cluster.
func isUsage(err error) bool {
	var usage *plugin.UsageError
	return errors.As(err, &usage)
}

// oneLine folds a message onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// options are what every command shares: the kubeconfig flags, as kubectl
// has them, and the client they make.
type options struct {
	config  *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
	// allNamespaces is -A: list states, and a cluster state's followers,
	// in every namespace.
	allNamespaces bool
}

// namespace is -n, or the kubeconfig context's namespace.
func (o *options) namespace() (string, error) {
	ns, _, err := o.config.ToRawKubeConfigLoader().Namespace()
	return ns, err
}

// client is a client of the cluster the kubeconfig flags name.
func (o *options) client() (client.WithWatch, error) {
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg = plugin.RESTConfig(cfg)
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1beta1.AddToScheme, gatewayv1.Install} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return client.NewWithWatch(cfg, client.Options{Scheme: scheme})
}

func newRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &options{config: genericclioptions.NewConfigFlags(true), streams: streams}
	root := &cobra.Command{
		Use:   "kubectl-dynamic",
		Short: "See, preview and wait on the flips of dynamic-ingress-operator",
		Long: `kubectl dynamic answers what an on-call engineer asks before and after a flip:
which switches follow a state and whether their targets are in shape (status),
what a response would change (preview), when a flip is in place (wait), what
a state answered when and why (history), pins a switch to a mode
(override) and approves another person's pin (approve). Docs: docs/kubectl-dynamic.md.`,
		Version:       version.String(),
		SilenceErrors: true,
		SilenceUsage:  true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl dynamic"},
		// Words that name no command reach the root: a usage error, typed
		// here rather than recognised by cobra's wording.
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return &plugin.UsageError{Err: fmt.Errorf("unknown command %q for %q", args[0], cmd.DisplayName())}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetVersionTemplate("kubectl-dynamic {{.Version}}\n")
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &plugin.UsageError{Err: err} })
	o.config.AddFlags(root.PersistentFlags())
	root.PersistentFlags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false,
		"List states, and the followers of a cluster state, in every namespace (needs list across namespaces)")
	root.AddCommand(newStatusCommand(o), newPreviewCommand(o), newWaitCommand(o), newOverrideCommand(o), newApproveCommand(o), newHistoryCommand(o))
	return root
}

// exactArgs is cobra.ExactArgs, as a usage error.
// rangeArgs refuses fewer than lo or more than hi arguments as a usage
// error.
func rangeArgs(lo, hi int, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			return &plugin.UsageError{Err: fmt.Errorf("expected %s, got %d arguments", what, len(args))}
		}
		return nil
	}
}

func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return &plugin.UsageError{Err: fmt.Errorf("expected %s, got %d arguments", what, len(args))}
		}
		return nil
	}
}

// outputFlags are kubectl's output flags (cli-runtime's PrintFlags): -o
// json, yaml, name, jsonpath=..., jsonpath-file=..., go-template=...,
// go-template-file=..., and --template.
type outputFlags struct {
	flags *genericclioptions.PrintFlags
}

// addOutputFlags adds the output flags to cmd.
func addOutputFlags(cmd *cobra.Command) *outputFlags {
	f := genericclioptions.NewPrintFlags("")
	// The plugin prints its own reports, not objects of a scheme.
	f.TypeSetterPrinter = nil
	f.AddFlags(cmd)
	return &outputFlags{flags: f}
}

// requested says whether -o was given: without it, commands print for
// people.
func (f *outputFlags) requested() bool {
	return f.flags.OutputFormat != nil && *f.flags.OutputFormat != ""
}

// check refuses an output format there is no printer for, before anything
// is read.
func (f *outputFlags) check() error {
	if !f.requested() {
		return nil
	}
	if _, err := f.flags.ToPrinter(); err != nil {
		return &plugin.UsageError{Err: err}
	}
	return nil
}

// print prints v, one of the plugin's reports (its JSON shape is the
// contract of -o json), with the printer -o names: json and yaml print it
// whole, jsonpath and templates run over its JSON, and name prints the
// objects it is about (names), as kubectl get -o name does.
func (f *outputFlags) print(o *options, v any, names []plugin.ObjectName) error {
	printer, err := f.flags.ToPrinter()
	if err != nil {
		return &plugin.UsageError{Err: err}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var obj runtime.Object
	switch *f.flags.OutputFormat {
	case "json", "yaml":
		obj = &runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON}
	case "name":
		list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}}
		for _, n := range names {
			item := unstructured.Unstructured{}
			item.SetGroupVersionKind(v1beta1.GroupVersion.WithKind(n.Kind))
			item.SetNamespace(n.Namespace)
			item.SetName(n.Name)
			list.Items = append(list.Items, item)
		}
		obj = list
	default:
		content := map[string]any{}
		if err := json.Unmarshal(raw, &content); err != nil {
			return err
		}
		obj = &unstructured.Unstructured{Object: content}
	}
	return printer.PrintObj(obj, o.streams.Out)
}

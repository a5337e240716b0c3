package main

import (
	"errors"
	"fmt"
	"io"
	"k8s.io/apimachinery/pkg/api/meta"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/plugin"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// dryRunWorkers bounds preview's dry runs in flight.
const dryRunWorkers = 16

func newStatusCommand(o *options) *cobra.Command {
	var output *outputFlags
	cmd := &cobra.Command{
		Use:               "status [STATE | dis/NAME | cdis/NAME]",
		Short:             "Show a state's response and, for each switch that follows it, its mode and whether its target is in shape; without a state, list the states",
		Args:              rangeArgs(0, 1, "at most one STATE"),
		ValidArgsFunction: o.completeState,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := output.check(); err != nil {
				return err
			}
			c, ns, kinds, err := o.connectKinds()
			if err != nil {
				return err
			}
			if len(args) == 0 {
				states, err := plugin.ListStates(cmd.Context(), c, kinds, o.listNamespace(ns))
				if err != nil {
					return err
				}
				if output.requested() {
					return output.print(o, map[string]any{"states": states}, plugin.StateNames(states))
				}
				return printStates(o, states)
			}
			ref, err := o.state(args[0])
			if err != nil {
				return err
			}
			_, report, err := plugin.StatusOfState(cmd.Context(), c, kinds, o.followersNamespace(ns, ref), ref)
			if err != nil {
				return err
			}
			if output.requested() {
				return output.print(o, report, report.Names())
			}
			return printStatus(o, report)
		},
	}
	output = addOutputFlags(cmd)
	return cmd
}

// printStates prints the states as a table.
func printStates(o *options, states []plugin.StateSummary) error {
	if len(states) == 0 {
		_, err := fmt.Fprintln(o.streams.Out, "No states found")
		return err
	}
	w := printers.GetNewTabWriter(o.streams.Out)
	t := &linePrinter{w: w}
	t.printf("KIND\tNAMESPACE\tNAME\tMODE\tCODE\tREADY\tFOLLOWERS\n")
	for _, s := range states {
		t.printf("%s\t%s\t%s\t%s\t%s\t%s\t%d\n", s.Kind, orDash(s.Namespace), s.Name, orDash(s.Mode), orDash(s.StatusCode), orDash(s.Ready), s.Followers)
	}
	if t.err != nil {
		return t.err
	}
	return w.Flush()
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func printStatus(o *options, r plugin.Report) error {
	s := r.State
	line := fmt.Sprintf("State %s/%s: ", s.Namespace, s.Name)
	if s.Namespace == "" {
		line = fmt.Sprintf("Cluster state %s: ", s.Name)
	}
	if s.StatusCode == "" {
		line += "no response"
	} else {
		line += "HTTP " + s.StatusCode
	}
	if s.Reason != "" {
		line += ", " + s.Reason
	}
	if s.NextTransitionTime != nil {
		line += ", next transition " + *s.NextTransitionTime
	}
	p := &linePrinter{w: o.streams.Out}
	p.printf("%s\n", line)
	for _, line := range s.Service.Lines() {
		p.printf("%s\n", line)
	}
	if err := printSwitches(o, r.Switches); err != nil {
		return err
	}
	if len(r.NotAdmitted) > 0 {
		p.printf("Not admitted by the grant of cdis/%s (each in the mode its failurePolicy selects; wait leaves them out):\n", s.Name)
		if err := printSwitches(o, r.NotAdmitted); err != nil {
			return err
		}
	}
	var lists []string
	for _, sw := range append(append([]plugin.SwitchReport{}, r.Switches...), r.NotAdmitted...) {
		if line := sw.EntriesLine(); line != "" {
			lists = append(lists, line)
		}
	}
	if len(lists) > 0 {
		p.printf("Switches with several states (mode from all their entries):\n")
		for _, line := range lists {
			p.printf("  %s\n", line)
		}
	}
	var pins []string
	for _, sw := range append(append([]plugin.SwitchReport{}, r.Switches...), r.NotAdmitted...) {
		if line := sw.PinLine(); line != "" {
			pins = append(pins, line)
		}
	}
	if len(pins) > 0 {
		p.printf("Switches pinned by spec.override:\n")
		for _, line := range pins {
			p.printf("  %s\n", line)
		}
	}
	p.printf("%s\n", r.Summary.String())
	printNotes(p, r.Notes)
	return p.err
}

// printNotes prints what the plugin could not read.
func printNotes(p *linePrinter, notes []string) {
	for _, note := range notes {
		p.printf("Note: %s\n", note)
	}
}

// printSwitches prints switches as a table, nothing when there are none.
func printSwitches(o *options, switches []plugin.SwitchReport) error {
	if len(switches) == 0 {
		return nil
	}
	w := printers.GetNewTabWriter(o.streams.Out)
	t := &linePrinter{w: w}
	t.printf("KIND\tNAME\tTARGET\tMODE\tIN SHAPE\tOVERRIDE\tACCEPTED\tSERVED\n")
	for _, sw := range switches {
		name := sw.Name
		if sw.Namespace != "" {
			name = sw.Namespace + "/" + sw.Name
		}
		t.printf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", sw.Kind, name, sw.Target, sw.Mode, yesNo(sw.InShape), sw.OverrideColumn(), orDash(sw.Accepted), orDash(sw.Served))
	}
	if t.err != nil {
		return t.err
	}
	return w.Flush()
}

// linePrinter writes until the first error, and keeps it.
type linePrinter struct {
	w   io.Writer
	err error
}

func (p *linePrinter) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func newPreviewCommand(o *options) *cobra.Command {
	var (
		code, body, bodyFile, at string
		exitCode                 bool
		output                   *outputFlags
	)
	cmd := &cobra.Command{
		Use:   "preview STATE (--status CODE [--body TEXT|--body-file FILE] | --at RFC3339)",
		Short: "Show which switches would change mode if the state answered CODE (or at a time), and the diff of each target; writes nothing",
		Args:  exactArgs(1, "one STATE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := output.check(); err != nil {
				return err
			}
			answer, when, err := previewInput(cmd, code, body, bodyFile, at)
			if err != nil {
				return err
			}
			err = preview(cmd, o, args[0], answer, when, output, exitCode)
			if err != nil && exitCode {
				// As kubectl diff: 1 means a change, more an error.
				var status exitStatus
				if !errors.As(err, &status) {
					return &exitError{code: 2, err: err}
				}
			}
			return err
		},
	}
	cmd.Flags().StringVar(&code, "status", "", "The HTTP status code the state would answer, e.g. 503")
	cmd.Flags().StringVar(&body, "body", "", "The body it would answer with (with --status)")
	cmd.Flags().StringVar(&bodyFile, "body-file", "", "Read the body from this file (with --status)")
	cmd.Flags().StringVar(&at, "at", "", "For a schedule state: the moment to preview, RFC 3339 (e.g. 2026-12-24T00:00:00Z)")
	cmd.Flags().BoolVar(&exitCode, "exit-code", false, "Exit 1 when some switch would change mode, 0 when none would, 2 on an error (as kubectl diff)")
	output = addOutputFlags(cmd)
	return cmd
}

// preview reads the state and its switches, and prints what the answer
// (or the moment) would change; exitStatus(1) with exitCode when something
// would.
func preview(cmd *cobra.Command, o *options, state string, answer plugin.Answer, when time.Time, output *outputFlags, exitCode bool) error {
	c, ns, kinds, err := o.connectKinds()
	if err != nil {
		return err
	}
	ref, err := o.state(state)
	if err != nil {
		return err
	}
	would, report, err := plugin.PreviewOf(cmd.Context(), c, kinds, o.followersNamespace(ns, ref), ref, dryRunWorkers,
		func(s *v1beta1.DynamicIngressState) (*v1beta1.DynamicIngressState, error) {
			if when.IsZero() {
				return plugin.WithAnswer(s, answer), nil
			}
			return plugin.ScheduledAt(s, when)
		})
	if err != nil {
		return err
	}
	if output.requested() {
		err = output.print(o, report, report.Names())
	} else {
		err = printPreview(o, would.Name, when, would.Status.StatusCode, would.Status.Body, report)
	}
	if err == nil && exitCode && len(report.Changes) > 0 {
		return exitStatus(1)
	}
	return err
}

// previewInput reads preview's flags: a response, or a moment.
func previewInput(cmd *cobra.Command, code, body, bodyFile, at string) (plugin.Answer, time.Time, error) {
	usage := func(format string, args ...any) (plugin.Answer, time.Time, error) {
		return plugin.Answer{}, time.Time{}, &plugin.UsageError{Err: fmt.Errorf(format, args...)}
	}
	set := func(name string) bool { return cmd.Flags().Changed(name) }
	switch {
	case set("status") == set("at"):
		return usage("give exactly one of --status CODE or --at RFC3339")
	case set("at") && (set("body") || set("body-file")):
		return usage("--body and --body-file go with --status, not --at")
	case set("body") && set("body-file"):
		return usage("give --body or --body-file, not both")
	case set("at"):
		t, err := time.Parse(time.RFC3339, at)
		if err != nil {
			return usage("--at %q is not an RFC 3339 time such as 2026-12-24T00:00:00Z", at)
		}
		return plugin.Answer{}, t, nil
	}
	if len(code) != 3 || strings.Trim(code, "0123456789") != "" || code[0] < '1' || code[0] > '5' {
		return usage("--status %q is not an HTTP status code (100-599)", code)
	}
	if bodyFile != "" {
		raw, err := os.ReadFile(bodyFile)
		if err != nil {
			return plugin.Answer{}, time.Time{}, fmt.Errorf("reading --body-file: %w", err)
		}
		body = string(raw)
	}
	return plugin.Answer{StatusCode: code, Body: body}, time.Time{}, nil
}

func printPreview(o *options, state string, at time.Time, code, body string, r plugin.PreviewReport) error {
	out := o.streams.Out
	what := fmt.Sprintf("If state %q answered %s", state, code)
	if body != "" {
		what += " " + abbreviate(body, 60)
	}
	if !at.IsZero() {
		what = fmt.Sprintf("At %s state %q would answer %s %s", at.UTC().Format(time.RFC3339), state, code, body)
	}
	p := &linePrinter{w: out}
	if len(r.Changes) == 0 {
		p.printf("%s: no switch would change mode\n", what)
		printNotes(p, r.Notes)
		return p.err
	}
	p.printf("%s: %d %s would change mode\n", what, len(r.Changes), plural(len(r.Changes), "switch", "switches"))
	printNotes(p, r.Notes)
	for _, ch := range r.Changes {
		follows := ""
		if ch.Follows != "" {
			follows = ", " + ch.Follows + " with the other entries as they answer now"
		}
		p.printf("\n%s %q (target %s%s): %s -> %s%s\n", ch.Kind, ch.Name, ch.Target, follows, ch.From, ch.To, actionPhrase(ch.Action))
		if ch.Note != "" {
			p.printf("  %s\n", ch.Note)
		}
		p.printf("%s", ch.Diff)
	}
	return p.err
}

// actionPhrase says when the target would be created or deleted rather
// than changed.
func actionPhrase(action string) string {
	switch action {
	case "create":
		return ", the target would be created"
	case "delete":
		return ", the target would be deleted"
	}
	return ""
}

func abbreviate(s string, n int) string {
	s = oneLine(s)
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func newWaitCommand(o *options) *cobra.Command {
	var (
		timeout  time.Duration
		accepted bool
		until    string
	)
	cmd := &cobra.Command{
		Use:               "wait (STATE | dis/NAME | cdis/NAME) [--timeout 60s] [--accepted] [--for=served]",
		ValidArgsFunction: o.completeState,
		Short:             "Wait until every switch of the state has its target in the shape the state's response selects and its status says so",
		Args:              exactArgs(1, "one STATE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return &plugin.UsageError{Err: errors.New("--timeout must be positive")}
			}
			served, err := parseWaitFor(until)
			if err != nil {
				return err
			}
			c, ns, kinds, err := o.connectKinds()
			if err != nil {
				return err
			}
			ref, err := o.state(args[0])
			if err != nil {
				return err
			}
			took, report, err := plugin.Wait(cmd.Context(), c, kinds, plugin.WaitOptions{
				Namespace: o.followersNamespace(ns, ref), State: ref.Name, Cluster: ref.IsCluster(), Timeout: timeout, Accepted: accepted, Served: served})
			if err != nil {
				return err
			}
			what := "in shape"
			switch {
			case accepted && served:
				what = "in shape, accepted and served"
			case accepted:
				what = "in shape and accepted"
			case served:
				what = "in shape and served"
			}
			sum := report.Summary
			p := &linePrinter{w: o.streams.Out}
			p.printf("State %q: all %d %s %s (%d active, %d passive) after %s\n", ref.Name,
				sum.Total, plural(sum.Total, "switch", "switches"), what, sum.Active, sum.Passive, took.Round(time.Millisecond))
			if left := report.LeftOut("cdis/" + ref.Name); left != "" {
				p.printf("%s\n", left)
			}
			printNotes(p, report.Notes)
			return p.err
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 60*time.Second, "How long to wait before giving up (exit 1)")
	cmd.Flags().BoolVar(&accepted, "accepted", false, "Also wait until every parent of each DynamicHTTPRoute's HTTPRoute accepted its current generation")
	cmd.Flags().StringVar(&until, "for", waitForShape, "What to wait for: shape (the targets written and the statuses saying so) or served (also each switch with spec.served seen served in its mode)")
	return cmd
}

// The values of wait's --for.
const (
	waitForShape  = "shape"
	waitForServed = "served"
)

// parseWaitFor says whether wait's --for asks for served; a usage error
// for a value it does not take.
func parseWaitFor(until string) (bool, error) {
	switch until {
	case waitForShape:
		return false, nil
	case waitForServed:
		return true, nil
	}
	return false, &plugin.UsageError{Err: fmt.Errorf("--for must be %s or %s, not %q", waitForShape, waitForServed, until)}
}

func newOverrideCommand(o *options) *cobra.Command {
	var (
		output        *outputFlags
		dryRun, owner string
		pinFlags      plugin.PinFlags
	)
	cmd := &cobra.Command{
		Use:               "override KIND/NAME active|passive|none [--for DURATION | --until RFC3339] [--reason TEXT]",
		ValidArgsFunction: o.completeOverride,
		Short:             "Set spec.override of a switch (none removes it), for a while or until a time and with a reason, and show its mode and what its state would select",
		Args:              exactArgs(2, "KIND/NAME and a mode"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := output.check(); err != nil {
				return err
			}
			kindName, name, err := switchArg(args[0])
			if err != nil {
				return err
			}
			mode, err := plugin.ParseMode(args[1])
			if err != nil {
				return err
			}
			now := time.Now()
			pinFlags.ReasonSet = cmd.Flags().Changed("reason")
			until, reason, err := pinFlags.Pin(mode, now)
			if err != nil {
				return err
			}
			switch dryRun {
			case "none":
				dryRun = ""
			case "", "server", "client":
			default:
				return &plugin.UsageError{Err: fmt.Errorf("--dry-run %q: use none, server or client", dryRun)}
			}
			c, ns, kinds, err := o.connectKinds()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			kind, err := plugin.KindOf(kinds, kindName)
			if err != nil {
				return err
			}
			result, err := plugin.Override(ctx, c, kind, ns, name, mode, plugin.OverrideOptions{DryRun: dryRun, FieldManager: owner, Until: until, Reason: reason, Now: now})
			if err != nil {
				return err
			}
			return o.printSwitchResult(output, result, result.Kind, ns, result.Name, result.String())
		},
	}
	output = addOutputFlags(cmd)
	cmd.Flags().StringVar(&dryRun, "dry-run", "none", `"server" sends the patch as a dry run (checked by the API server and its webhooks, stored nowhere), "client" applies it to the switch as read and sends nothing; "none" writes`)
	cmd.Flags().StringVar(&owner, "field-manager", "kubectl-dynamic", "Name of the manager the change is recorded under in the switch's managedFields")
	cmd.Flags().StringVar(&pinFlags.For, "for", "", "End the pin after this long (spec.overrideUntil is now plus it), e.g. 2h or 30m; without --for or --until the pin has no end")
	cmd.Flags().StringVar(&pinFlags.Until, "until", "", "End the pin at this RFC 3339 time (spec.overrideUntil), e.g. 2026-12-02T03:00:00Z; it must be in the future")
	cmd.Flags().StringVar(&pinFlags.Reason, "reason", "", "Why the switch is pinned (spec.overrideReason, 1-256 characters), e.g. an incident's number")
	return cmd
}

// switchArg is the kind and the name of a switch named KIND/NAME.
func switchArg(arg string) (kindName, name string, err error) {
	kindName, name, ok := strings.Cut(arg, "/")
	if !ok || name == "" {
		return "", "", &plugin.UsageError{Err: fmt.Errorf("%q: name the switch as KIND/NAME, e.g. di/storefront", arg)}
	}
	return kindName, name, nil
}

// printSwitchResult prints what a command did to the switch kind/name in
// ns: as -o asks, or its line.
func (o *options) printSwitchResult(output *outputFlags, result any, kind, ns, name, line string) error {
	if output.requested() {
		return output.print(o, result, []plugin.ObjectName{{Kind: kind, Namespace: ns, Name: name}})
	}
	_, err := fmt.Fprintln(o.streams.Out, line)
	return err
}

// newApproveCommand is `kubectl dynamic approve KIND/NAME`: a second
// person approves a pin that waits for approval (docs/kubectl-dynamic.md).
func newApproveCommand(o *options) *cobra.Command {
	var output *outputFlags
	cmd := &cobra.Command{
		Use:   "approve KIND/NAME",
		Short: "Approve the pending pin of a switch, as a second person: it takes effect, and the line says what now holds",
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return o.completeOverride(cmd, args, toComplete)
		},
		Args: exactArgs(1, "KIND/NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := output.check(); err != nil {
				return err
			}
			kindName, name, err := switchArg(args[0])
			if err != nil {
				return err
			}
			c, ns, kinds, err := o.connectKinds()
			if err != nil {
				return err
			}
			kind, err := plugin.KindOf(kinds, kindName)
			if err != nil {
				return err
			}
			result, err := plugin.Approve(cmd.Context(), c, kind, ns, name, time.Now())
			if err != nil {
				return err
			}
			return o.printSwitchResult(output, result, result.Kind, ns, result.Name, result.String())
		},
	}
	output = addOutputFlags(cmd)
	return cmd
}

// state reads a state argument through the RESTMapper, as kubectl reads
// TYPE/NAME.
func (o *options) state(arg string) (v1beta1.StateReference, error) {
	if !strings.Contains(arg, "/") {
		return plugin.ParseState(arg, nil)
	}
	mapper, err := o.config.ToRESTMapper()
	if err != nil {
		return v1beta1.StateReference{}, err
	}
	return plugin.ParseState(arg, mapper)
}

// listNamespace is where states are listed: ns, or every namespace with
// -A.
func (o *options) listNamespace(ns string) string {
	if o.allNamespaces {
		return ""
	}
	return ns
}

// followersNamespace is where a state's followers are read: a namespaced
// state's own namespace; a cluster state's followers in ns, or in every
// namespace with -A.
func (o *options) followersNamespace(ns string, ref v1beta1.StateReference) string {
	if ref.IsCluster() {
		return o.listNamespace(ns)
	}
	return ns
}

// kinds are the switch kinds the cluster serves, from discovery.
func (o *options) kinds() ([]target.Kind, error) {
	disco, err := o.config.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	return plugin.Kinds(disco), nil
}

// connectKinds is connect and the switch kinds the cluster serves.
func (o *options) connectKinds() (c client.WithWatch, ns string, kinds []target.Kind, err error) {
	if c, ns, err = o.connect(); err != nil {
		return nil, "", nil, err
	}
	kinds, err = o.kinds()
	return c, ns, kinds, err
}

// connect is the client and the namespace.
func (o *options) connect() (c client.WithWatch, ns string, err error) {
	if ns, err = o.namespace(); err != nil {
		return nil, "", err
	}
	c, err = o.client()
	return c, ns, err
}

// completeState offers the states of the namespace by name and the cluster
// states as cdis/NAME, for the first argument.
func (o *options) completeState(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, ns, err := o.connect()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	states := &v1beta1.DynamicIngressStateList{}
	if err := c.List(cmd.Context(), states, client.InNamespace(ns)); err == nil {
		for _, s := range states.Items {
			names = append(names, s.Name)
		}
	}
	clusterStates := &v1beta1.ClusterDynamicIngressStateList{}
	if err := c.List(cmd.Context(), clusterStates); err == nil {
		for _, s := range clusterStates.Items {
			names = append(names, "cdis/"+s.Name)
		}
	}
	return withPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completeOverride offers the switches of the namespace as di/NAME and
// dhr/NAME, then the modes.
func (o *options) completeOverride(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
	case 1:
		return withPrefix([]string{"active", "passive", "none"}, toComplete), cobra.ShellCompDirectiveNoFileComp
	default:
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, ns, err := o.connect()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for short, list := range map[string]client.ObjectList{"di": &v1beta1.DynamicIngressList{}, "dhr": &v1beta1.DynamicHTTPRouteList{}} {
		if err := c.List(cmd.Context(), list, client.InNamespace(ns)); err != nil {
			continue
		}
		items, _ := meta.ExtractList(list)
		for _, item := range items {
			if obj, ok := item.(client.Object); ok {
				names = append(names, short+"/"+obj.GetName())
			}
		}
	}
	sort.Strings(names)
	return withPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// withPrefix are the names that start with prefix.
func withPrefix(names []string, prefix string) []cobra.Completion {
	var out []cobra.Completion
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

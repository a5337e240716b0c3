package chart_test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/bundle"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// managerFlag is one flag of the manager binary, as its -help says.
type managerFlag struct {
	Bool    bool
	Default string // "" when -help shows none (the zero value, or a zap flag)
}

var (
	helpFlag    = regexp.MustCompile(`^  -([a-z0-9-]+)(?: (\S+))?$`)
	helpDefault = regexp.MustCompile(`\(default (.*)\)$`)

	managerFlagsOnce sync.Once
	managerFlagsVal  map[string]managerFlag
	managerFlagsErr  string
)

// managerFlags builds the manager (./cmd) and reads its flags and their
// defaults from its -help.
func managerFlags(t *testing.T) map[string]managerFlag {
	t.Helper()
	managerFlagsOnce.Do(func() {
		binary := filepath.Join(t.TempDir(), "manager")
		build := exec.Command("go", "build", "-o", binary, "./cmd")
		build.Dir = controlplane.RepoRoot()
		if out, err := build.CombinedOutput(); err != nil {
			managerFlagsErr = "building the manager: " + err.Error() + "\n" + string(out)
			return
		}
		var out bytes.Buffer
		help := exec.Command(binary, "-help")
		help.Stdout, help.Stderr = &out, &out
		if err := help.Run(); err != nil {
			managerFlagsErr = "manager -help: " + err.Error() + "\n" + out.String()
			return
		}
		flags := map[string]managerFlag{}
		var current string
		for _, line := range strings.Split(out.String(), "\n") {
			if m := helpFlag.FindStringSubmatch(line); m != nil {
				current = m[1]
				flags[current] = managerFlag{Bool: m[2] == ""}
				continue
			}
			if m := helpDefault.FindStringSubmatch(strings.TrimSpace(line)); m != nil && current != "" {
				f := flags[current]
				f.Default = m[1]
				if s, err := strconv.Unquote(m[1]); err == nil {
					f.Default = s
				}
				flags[current] = f
			}
		}
		if len(flags) == 0 {
			managerFlagsErr = "no flags in the manager's -help:\n" + out.String()
			return
		}
		managerFlagsVal = flags
	})
	if managerFlagsErr != "" {
		t.Fatal(managerFlagsErr)
	}
	return managerFlagsVal
}

// effectiveFlags returns the value of every flag of the manager given
// args: its default unless args set it (the last time wins, as with Go's
// flag package). A flag the manager does not have is an error.
func effectiveFlags(t *testing.T, args []string) map[string]string {
	t.Helper()
	flags := managerFlags(t)
	out := map[string]string{}
	for name, f := range flags {
		out[name] = f.Default
		if f.Bool && f.Default == "" {
			out[name] = "false"
		}
	}
	for _, arg := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		f, ok := flags[name]
		if !ok || !strings.HasPrefix(arg, "-") {
			t.Errorf("argument %q is not a flag of the manager", arg)
			continue
		}
		if !hasValue {
			if !f.Bool {
				t.Errorf("argument %q: the manager's -%s needs a value (write it as --%s=value)", arg, name, name)
				continue
			}
			value = "true"
		}
		out[name] = value
	}
	return out
}

// managerContainer returns the manager container of the one Deployment.
func managerContainer(t *testing.T, deploy *appsv1.Deployment) corev1.Container {
	t.Helper()
	for _, c := range deploy.Spec.Template.Spec.Containers {
		if c.Name == "manager" {
			return c
		}
	}
	t.Fatalf("Deployment %s has no container named manager", deploy.Name)
	return corev1.Container{}
}

// flagValues sets, for each flag of the manager, a value other than its
// default, and says which argument must then appear. Flags absent from
// here have no value, on purpose: notAValue says why.
var flagValues = map[string]struct {
	values map[string]any
	arg    string
}{
	"leader-elect":              {map[string]any{"replicaCount": 1, "leaderElection": map[string]any{"enabled": false}}, "--leader-elect=false"},
	"leader-election-namespace": {map[string]any{"leaderElection": map[string]any{"namespace": "leases"}}, "--leader-election-namespace=leases"},
	"health-probe-bind-address": {map[string]any{"healthProbe": map[string]any{"port": 18081}}, "--health-probe-bind-address=:18081"},
	"metrics-bind-address":      {map[string]any{"metrics": map[string]any{"port": 18443}}, "--metrics-bind-address=:18443"},
	"metrics-secure":            {map[string]any{"metrics": map[string]any{"secure": false}}, "--metrics-secure=false"},
	"metrics-cert-path":         {map[string]any{"metrics": map[string]any{"existingSecret": "metrics-tls"}}, "--metrics-cert-path=/tmp/k8s-metrics-server/metrics-certs"},
	"enable-webhooks":           {map[string]any{"webhook": map[string]any{"enabled": false}}, "--enable-webhooks=false"},
	"enable-http2":              {map[string]any{"http2": map[string]any{"enabled": true}}, "--enable-http2=true"},
	"webhook-port":              {map[string]any{"webhook": map[string]any{"port": 10250}}, "--webhook-port=10250"},
	"probe-deny-cidrs":          {map[string]any{"probes": map[string]any{"denyCIDRs": []any{"10.0.0.0/8", "169.254.0.0/16"}}}, "--probe-deny-cidrs=10.0.0.0/8,169.254.0.0/16"},
	"probe-allow-hosts":         {map[string]any{"probes": map[string]any{"allowHosts": []any{"flags.example.com", "*.internal.example.com"}}}, "--probe-allow-hosts=flags.example.com,*.internal.example.com"},
	// The largest the manager accepts. (Helm's numbers are float64: a
	// careless template would write a million as 1e+06; kube-api-burst
	// below checks that.)
	"probe-max-body-bytes":            {map[string]any{"probes": map[string]any{"maxBodyBytes": 65536}}, "--probe-max-body-bytes=65536"},
	"max-concurrent-reconciles":       {map[string]any{"controller": map[string]any{"maxConcurrentReconciles": 64}}, "--max-concurrent-reconciles=64"},
	"state-max-concurrent-reconciles": {map[string]any{"controller": map[string]any{"stateMaxConcurrentReconciles": 4}}, "--state-max-concurrent-reconciles=4"},
	"flip-stalled-after":              {map[string]any{"notifications": map[string]any{"flipStalledAfter": "5m"}}, "--flip-stalled-after=5m"},
	"gc-percent-at-rest":              {map[string]any{"memory": map[string]any{"gcPercentAtRest": 0}}, "--gc-percent-at-rest=0"},
	"kube-api-qps":                    {map[string]any{"kubeAPI": map[string]any{"qps": 50.5}}, "--kube-api-qps=50.5"},
	"kube-api-burst":                  {map[string]any{"kubeAPI": map[string]any{"burst": 1000000}}, "--kube-api-burst=1000000"},
	"namespaces":                      {map[string]any{"watchNamespaces": []any{"shop", "team-a"}}, "--namespaces=shop,team-a"},
	// Namespaced mode without clusterStates.followInNamespacedMode
	// (TestNamespacedModeFollowsClusterStatesOnlyWhenGranted).
	"cluster-states":             {map[string]any{"watchNamespaces": []any{"shop"}}, "--cluster-states=false"},
	"cluster-resource-namespace": {map[string]any{"clusterStates": map[string]any{"resourceNamespace": "platform"}}, "--cluster-resource-namespace=platform"},
	"zap-log-level":              {map[string]any{"logging": map[string]any{"level": "debug"}}, "--zap-log-level=debug"},
	"zap-encoder":                {map[string]any{"logging": map[string]any{"encoder": "console"}}, "--zap-encoder=console"},
	"zap-stacktrace-level":       {map[string]any{"logging": map[string]any{"stacktraceLevel": "panic"}}, "--zap-stacktrace-level=panic"},
	"zap-time-encoding":          {map[string]any{"logging": map[string]any{"timeEncoding": "iso8601"}}, "--zap-time-encoding=iso8601"},
}

// notAValue are the manager's flags that the chart sets itself or leaves
// out, and why.
var notAValue = map[string]string{
	"kubeconfig":        "in a cluster the manager uses its ServiceAccount",
	"zap-devel":         "a development preset of the logging.* values",
	"webhook-cert-path": "where the chart mounts the webhook certificate Secret (webhook.certManager, webhook.existingSecret)",
	// Unauthenticated plain HTTP: not something to leave on through a
	// release's values; added to the args by hand while profiling.
	"pprof-bind-address": "profiling only, turned on by hand (docs/operations.md)",
	"version":            "prints the version and exits (docs/install.md)",
}

// TestEveryManagerFlagIsAValue checks that each flag of the manager has a
// value in the chart that reaches the Deployment's args, so that a flag
// added to cmd/main.go fails here until the chart has it.
func TestEveryManagerFlagIsAValue(t *testing.T) {
	flags := managerFlags(t)
	var missing, unknown []string
	for name := range flags {
		if _, ok := flagValues[name]; !ok && notAValue[name] == "" {
			missing = append(missing, name)
		}
	}
	for name := range flagValues {
		if _, ok := flags[name]; !ok {
			unknown = append(unknown, name)
		}
	}
	for name := range notAValue {
		if _, ok := flags[name]; !ok {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(missing)
	sort.Strings(unknown)
	if len(missing) > 0 {
		t.Errorf("manager flags with no chart value (add one to values.yaml and the args in templates/_helpers.tpl, and a line to flagValues): %v", missing)
	}
	if len(unknown) > 0 {
		t.Errorf("flags the test knows but the manager no longer has: %v", unknown)
	}

	defaults := effectiveFlags(t, managerContainer(t, suite.Only[appsv1.Deployment](t, renderDefault(t), "Deployment")).Args)
	for name, fv := range flagValues {
		t.Run(name, func(t *testing.T) {
			objs := renderChart(t, bundleRelease, bundleNamespace, fv.values)
			args := managerContainer(t, suite.Only[appsv1.Deployment](t, objs, "Deployment")).Args
			if !slices.Contains(args, fv.arg) {
				t.Errorf("with values %v the manager's args are %v, want %s in them", fv.values, args, fv.arg)
			}
			if got := effectiveFlags(t, args)[name]; got == defaults[name] {
				t.Errorf("with values %v the manager's -%s is still %q, as with the default values", fv.values, name, got)
			}
		})
	}
}

// TestManagerArgsMatchConfig checks that the chart's default args give the
// manager the same configuration as config/default's: every flag the same,
// whether set or left to its default.
func TestManagerArgsMatchConfig(t *testing.T) {
	chartArgs := managerContainer(t, suite.Only[appsv1.Deployment](t, renderDefault(t), "Deployment")).Args
	configArgs := managerContainer(t, suite.Only[appsv1.Deployment](t, bundle.Kustomize(t, bundle.DefaultDir()), "Deployment")).Args
	if diff := cmp.Diff(effectiveFlags(t, configArgs), effectiveFlags(t, chartArgs)); diff != "" {
		t.Errorf("the manager's flags (-config/default +chart with default values):\n%s\nconfig args: %v\nchart args:  %v", diff, configArgs, chartArgs)
	}
	// Every flag the manager has a non-empty default for is explicit in
	// the chart, so that `kubectl describe` shows it (and a change of the
	// default in cmd/main.go shows here).
	flags := managerFlags(t)
	for name, f := range flags {
		if f.Default == "" || notAValue[name] != "" {
			continue
		}
		if !slices.ContainsFunc(chartArgs, func(a string) bool { return strings.HasPrefix(a, "--"+name+"=") }) {
			t.Errorf("the chart's args %v leave --%s to the manager's default %q; set it explicitly", chartArgs, name, f.Default)
		}
	}
}

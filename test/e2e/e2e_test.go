package e2e

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
)

// table is one table that kubectl prints: its header and its rows, each
// cell read at its column's offset, so an empty cell stays a cell.
type table struct {
	header []string
	rows   [][]string
}

// tables reads kubectl's table output: one table, or one per resource,
// separated by blank lines, as `kubectl get <category>` prints them.
func tables(out string) []table {
	var all []table
	for _, block := range strings.Split(strings.TrimSpace(out), "\n\n") {
		lines := strings.Split(block, "\n")
		var starts []int
		inWord := false
		for i, c := range lines[0] {
			if c != ' ' && !inWord {
				starts = append(starts, i)
			}
			inWord = c != ' '
		}
		cells := func(line string) []string {
			var row []string
			for i, start := range starts {
				end := len(line)
				if i+1 < len(starts) && starts[i+1] < end {
					end = starts[i+1]
				}
				cell := ""
				if start < len(line) {
					cell = strings.TrimSpace(line[start:end])
				}
				row = append(row, cell)
			}
			return row
		}
		t := table{header: cells(lines[0])}
		for _, line := range lines[1:] {
			t.rows = append(t.rows, cells(line))
		}
		all = append(all, t)
	}
	return all
}

// cells picks the named columns of each row, for comparing.
func (tb table) cells(columns ...string) [][]string {
	var out [][]string
	for _, row := range tb.rows {
		var picked []string
		for _, c := range columns {
			for i, h := range tb.header {
				if h == c {
					picked = append(picked, row[i])
				}
			}
		}
		out = append(out, picked)
	}
	return out
}

// publicTier is the label that admits a namespace to config/samples'
// global-killswitch and to the platform kill-switch recipe's state.
const publicTier = "traffic.example.com/tier=public"

func TestSamplesApplyAndBecomeReady(t *testing.T) {
	ns := newNamespace(t, "samples")
	// The landing page follows the cluster state global-killswitch, whose
	// grant admits the namespaces with this label.
	kubectl(t, "", "label", "namespace", ns, publicTier)
	out := kubectl(t, "", "apply", "-n", ns, "-k", "config/samples")
	for _, want := range []string{
		"secret/status-api-token created",
		"dynamicingressstate.ingress.dynamicingress.io/killswitch created",
		"dynamicingressstate.ingress.dynamicingress.io/maintenance created",
		"dynamicingress.ingress.dynamicingress.io/storefront created",
		"dynamicingress.ingress.dynamicingress.io/maintenance-page created",
		"dynamicingress.ingress.dynamicingress.io/alb-maintenance-rule created",
		"dynamicingressstate.ingress.dynamicingress.io/weekly-maintenance created",
		"dynamicingress.ingress.dynamicingress.io/checkout created",
		"dynamicingress.ingress.dynamicingress.io/partner-api created",
		"dynamicingress.ingress.dynamicingress.io/landing created",
		"dynamichttproute.ingress.dynamicingress.io/storefront-route created",
		"dynamicingressnotifier.ingress.dynamicingress.io/oncall created",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl apply -k config/samples printed:\n%s\nwant a line %q", out, want)
		}
	}
	// Cluster-scoped: an earlier apply of the samples in another
	// namespace may have created it.
	if !regexp.MustCompile(`(?m)^clusterdynamicingressstate.ingress.dynamicingress.io/global-killswitch (created|unchanged)$`).MatchString(out) {
		t.Errorf("kubectl apply -k config/samples printed:\n%s\nwant clusterdynamicingressstate.ingress.dynamicingress.io/global-killswitch created or unchanged", out)
	}
	kubectl(t, "", "wait", "--for=condition=Ready", "cdis/global-killswitch", "--timeout=60s")
	kubectl(t, "", "wait", "-n", ns, "--for=condition=Ready", "dynamicingressstate", "--all", "--timeout=60s")
	kubectl(t, "", "wait", "-n", ns, "--for=condition=Ready", "dynamicingress", "--all", "--timeout=60s")
	// The sample notifier's sink does not resolve here: once the
	// killswitch's first response is sent it is DeliveryFailing, so its
	// SINK column is what is waited for.
	kubectl(t, "", "wait", "-n", ns, "--for=jsonpath={.status.sinkHost}=hooks.example.com", "dnotify/oncall", "--timeout=60s")

	// `kubectl get dynamic` lists every kind with the columns docs/behaviour.md lists.
	out = kubectl(t, "", "get", "-n", ns, "dynamic")
	var headers []string
	for _, tb := range tables(out) {
		headers = append(headers, strings.Join(tb.header, " "))
	}
	for _, header := range []string{"NAME TARGET STATE STATEREF ACTIVE READY AGE", "NAME MODE CODE READY AGE", "NAME STATES SINK READY LAST AGE"} {
		if !slices.Contains(headers, header) {
			t.Errorf("kubectl get dynamic:\n%s\nwant a table with the header %q", out, header)
		}
	}
	rows := tables(kubectl(t, "", "get", "-n", ns, "dis", "killswitch", "maintenance", "weekly-maintenance"))[0].cells("NAME", "MODE", "CODE", "READY")
	want := [][]string{{"killswitch", "Fixed", "200", "True"}, {"maintenance", "Probe", "200", "True"}, {"weekly-maintenance", "Schedule", "200", "True"}}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("kubectl get dis (-want +got):\n%s", diff)
	}
	// The notifier: its states and its sink's host alone
	// (docs/notifications.md).
	rows = tables(kubectl(t, "", "get", "-n", ns, "dnotify", "oncall"))[0].cells("NAME", "STATES", "SINK")
	want = [][]string{{"oncall", "killswitch,global-killswitch", "hooks.example.com"}}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("kubectl get dnotify oncall, NAME STATES SINK (-want +got):\n%s", diff)
	}
	rows = tables(kubectl(t, "", "get", "-n", ns, "di", "storefront", "landing"))[0].cells("NAME", "TARGET", "STATE", "STATEREF", "ACTIVE", "READY")
	want = [][]string{{"storefront", "storefront", "killswitch", "", "False", "True"}, {"landing", "landing", "", "global-killswitch", "False", "True"}}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("kubectl get di storefront landing, NAME TARGET STATE STATEREF ACTIVE READY (-want +got):\n%s", diff)
	}
	// -o wide adds the Active condition's reason and the override.
	wide := tables(kubectl(t, "", "get", "-n", ns, "di", "partner-api", "storefront", "-o", "wide"))[0]
	if got := strings.Join(wide.header, " "); got != "NAME TARGET STATE STATEREF ACTIVE READY AGE REASON OVERRIDE SERVED" {
		t.Errorf("kubectl get di -o wide header = %q", got)
	}
	want = [][]string{{"partner-api", "Overridden", "Passive"}, {"storefront", "NotMatched", ""}}
	if diff := cmp.Diff(want, wide.cells("NAME", "REASON", "OVERRIDE")); diff != "" {
		t.Errorf("kubectl get di -o wide, NAME REASON OVERRIDE (-want +got):\n%s", diff)
	}
}

func TestRejectedAppliesLeaveNothingBehind(t *testing.T) {
	ns := newNamespace(t, "rejections")
	kubectl(t, fmt.Sprintf(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {namespace: %s, name: taken}
spec:
  defaultBackend: {service: {name: theirs, port: {number: 80}}}
`, ns), "apply", "-f", "-")
	kubectl(t, stateManifest(ns, "flag", "503"), "apply", "-f", "-")
	kubectl(t, dynamicIngressManifest(ns, "site", "site", "flag", "/"), "apply", "-f", "-")
	kubectl(t, "", "wait", "-n", ns, "--for=create", "ingress/site", "--timeout=30s")

	tests := []struct {
		name     string
		manifest string
		stderr   string
		// leftover must not exist afterwards (kind/name).
		leftover []string
	}{
		{
			name:     "existing target",
			manifest: dynamicIngressManifest(ns, "takeover", "taken", "flag", "/"),
			stderr:   `The DynamicIngress "takeover" is invalid: spec.target: Invalid value: "` + ns + `/taken": Ingress ` + ns + `/taken already exists`,
			leftover: []string{"dynamicingress/takeover"},
		},
		{
			name:     "changed target",
			manifest: dynamicIngressManifest(ns, "site", "site-renamed", "flag", "/"),
			stderr:   `The DynamicIngress "site" is invalid: spec.target: Invalid value: `,
			leftover: []string{"ingress/site-renamed"},
		},
		{
			name:     "bad probe URL",
			manifest: probedStateManifest(ns, "ftp", "ftp://flags.example.com/killswitch"),
			stderr:   `The DynamicIngressState "ftp" is invalid: spec.probe.url: Invalid value: must be an absolute http or https URL with a host`,
			leftover: []string{"dynamicingressstate/ftp"},
		},
		{
			name:     "invalid Ingress template",
			manifest: dynamicIngressManifest(ns, "relative", "relative", "flag", "sorry-page"),
			stderr:   `The DynamicIngress "relative" is invalid: spec.activeIngress.template.spec.rules[0].http.paths[0].path: Invalid value: "sorry-page": must be an absolute path`,
			leftover: []string{"dynamicingress/relative", "ingress/relative"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, err := runKubectl(tt.manifest, "apply", "-f", "-")
			if err == nil {
				t.Fatalf("kubectl apply succeeded:\n%s", stdout)
			}
			if !strings.Contains(stderr, tt.stderr) {
				t.Errorf("kubectl apply stderr:\n%s\nwant it to contain:\n%s", stderr, tt.stderr)
			}
			t.Logf("kubectl printed: %s", strings.TrimSpace(stderr))
			for _, obj := range tt.leftover {
				if out, stderr, err := runKubectl("", "get", "-n", ns, obj); err == nil || !strings.Contains(stderr, "NotFound") {
					t.Errorf("%s exists after a rejected apply: %s%s", obj, out, stderr)
				}
			}
		})
	}
	if target := kubectl(t, "", "get", "-n", ns, "di", "site", "-o", "jsonpath={.spec.target.name}"); target != "site" {
		t.Errorf("spec.target.name of site = %q after a rejected change, want site", target)
	}
	if got := kubectl(t, "", "get", "-n", ns, "ingress", "taken", "-o", "jsonpath={.spec.defaultBackend.service.name}"); got != "theirs" {
		t.Errorf("the existing Ingress taken changed: backend %q", got)
	}
}

func TestProbedStateFlipSwitchesIngresses(t *testing.T) {
	ns := newNamespace(t, "probed-flip")
	flags, err := controlplane.StartStatusAPI("127.0.0.1:0", "/flags/killswitch", `{"enabled": false}`)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = flags.Close() }()
	flags.Set(http.StatusServiceUnavailable, "off")

	kubectl(t, probedStateManifest(ns, "killswitch", flags.URL), "apply", "-f", "-")
	names := []string{"alpha", "beta", "gamma"}
	for _, n := range names {
		kubectl(t, dynamicIngressManifest(ns, n, n, "killswitch", "/"), "apply", "-f", "-")
	}
	kubectl(t, "", "wait", "-n", ns, "--for=jsonpath={.status.statusCode}=503", "dis/killswitch", "--timeout=30s")
	kubectl(t, "", "wait", "-n", ns, "--for=condition=Ready", "di", "--all", "--timeout=30s")
	rows := tables(kubectl(t, "", "get", "-n", ns, "dis"))[0].cells("NAME", "MODE", "CODE", "READY")
	if diff := cmp.Diff([][]string{{"killswitch", "Probe", "503", "True"}}, rows); diff != "" {
		t.Errorf("kubectl get dis, NAME MODE CODE READY (-want +got):\n%s", diff)
	}

	flags.Set(http.StatusOK, `{"enabled": true}`)
	for _, n := range names {
		kubectl(t, "", "wait", "-n", ns, "--for=jsonpath={.spec.rules[0].http.paths[0].backend.service.name}=sorry", "ingress/"+n, "--timeout=30s")
	}
	kubectl(t, "", "wait", "-n", ns, "--for=condition=Active", "di", "--all", "--timeout=30s")
	for _, row := range tables(kubectl(t, "", "get", "-n", ns, "di"))[0].cells("NAME", "STATE", "ACTIVE", "READY") {
		if got := strings.Join(row[1:], " "); got != "killswitch True True" {
			t.Errorf("kubectl get di %s: STATE ACTIVE READY = %q, want killswitch True True", row[0], got)
		}
	}
	if got := kubectl(t, "", "get", "-n", ns, "ingress", "alpha", "-o", `jsonpath={.metadata.annotations.example\.com/mode}`); got != "sorry" {
		t.Errorf("active annotation = %q, want sorry", got)
	}

	// The endpoint goes away: past the threshold the response is cleared and
	// every Ingress falls back to passive.
	_ = flags.Close()
	kubectl(t, "", "wait", "-n", ns, "--for=condition=Ready=False", "dis/killswitch", "--timeout=30s")
	for _, n := range names {
		kubectl(t, "", "wait", "-n", ns, "--for=jsonpath={.spec.rules[0].http.paths[0].backend.service.name}=web", "ingress/"+n, "--timeout=30s")
	}
	if got := kubectl(t, "", "get", "-n", ns, "ingress", "alpha", "-o", `jsonpath={.metadata.annotations}`); strings.Contains(got, "example.com/mode") {
		t.Errorf("the active template's annotation survived the switch back: %s", got)
	}
	msg := kubectl(t, "", "get", "-n", ns, "dis", "killswitch", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].message}`)
	if !strings.Contains(msg, "connection refused") {
		t.Errorf("Ready message %q does not carry the probe error", msg)
	}
}

func TestDeletingDynamicIngressDeletesItsIngress(t *testing.T) {
	ns := newNamespace(t, "deletion")
	kubectl(t, stateManifest(ns, "flag", "200"), "apply", "-f", "-")
	kubectl(t, dynamicIngressManifest(ns, "shop", "shop", "flag", "/"), "apply", "-f", "-")
	kubectl(t, "", "wait", "-n", ns, "--for=create", "ingress/shop", "--timeout=30s")
	kubectl(t, "", "delete", "-n", ns, "di", "shop", "--wait=true")
	kubectl(t, "", "wait", "-n", ns, "--for=delete", "ingress/shop", "--timeout=60s")
}

// TestKilledMidFlipConverges kills the manager with SIGKILL right after one
// state flips 100 DynamicIngresses, starts it again, and checks that every
// target converges and that no Ingress the operator does not own changed.
func TestKilledMidFlipConverges(t *testing.T) {
	ns := newNamespace(t, "crash")
	const n = 100
	var manifests strings.Builder
	manifests.WriteString(stateManifest(ns, "flag", "503"))
	for i := range n {
		manifests.WriteString("---\n")
		manifests.WriteString(dynamicIngressManifest(ns, fmt.Sprintf("site-%03d", i), fmt.Sprintf("site-%03d", i), "flag", "/"))
	}
	// A DynamicIngress with no passive Ingress, whose target name someone
	// else takes while it is passive: the flip must leave that Ingress be.
	manifests.WriteString("---\n" + contestedManifest(ns))
	kubectl(t, manifests.String(), "apply", "-f", "-")
	kubectl(t, "", "wait", "-n", ns, "--for=condition=Ready", "di", "--all", "--timeout=120s")

	unowned := unownedIngressesManifest(ns)
	kubectl(t, unowned, "apply", "-f", "-")
	before := kubectl(t, "", "get", "-n", ns, "ingress", "contested", "lookalike", "-o", "yaml")

	kubectl(t, "", "patch", "-n", ns, "dis", "flag", "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"200"}}}`)
	time.Sleep(150 * time.Millisecond)
	killManager()
	switched := strings.Count(kubectl(t, "", "get", "-n", ns, "ingress", "-o", "jsonpath={range .items[*]}{.spec.rules[0].http.paths[0].backend.service.name}{\"\\n\"}{end}"), "sorry")
	t.Logf("the manager was killed with %d of %d Ingresses switched", switched, n)
	if err := startManager(); err != nil {
		t.Fatal(err)
	}

	switchedSite := regexp.MustCompile(`(?m)^site-\d{3}=sorry$`)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out := kubectl(t, "", "get", "-n", ns, "ingress", "-l", "app.kubernetes.io/managed-by=dynamic-ingress-operator",
			"-o", "jsonpath={range .items[*]}{.metadata.name}={.spec.rules[0].http.paths[0].backend.service.name}{\"\\n\"}{end}")
		if len(switchedSite.FindAllString(out, -1)) == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every Ingress switched within 2 minutes of the restart:\n%s", out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	kubectl(t, "", "wait", "-n", ns, "--for=condition=Active", "di", "--all", "--timeout=60s")
	reason := kubectl(t, "", "get", "-n", ns, "di", "contested", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].reason}`)
	if reason != "TargetConflict" {
		t.Errorf("contested Ready reason = %q, want TargetConflict", reason)
	}
	if after := kubectl(t, "", "get", "-n", ns, "ingress", "contested", "lookalike", "-o", "yaml"); after != before {
		t.Errorf("Ingresses the operator does not own changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

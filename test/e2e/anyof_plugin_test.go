package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// anyOfStatusJSON is what `kubectl dynamic status -o json` says of the
// switches, with the entries of a switch with a list.
type anyOfStatusJSON struct {
	Switches []struct {
		Name, Mode, Combination string
		InShape, Synced         bool
		Entries                 []struct{ Name, State, Matched, Reason string }
	}
	Notes []string
}

// rows is one line per switch: name mode, and for a list its combination
// and each entry's verdict.
func (s anyOfStatusJSON) rows() []string {
	var out []string
	for _, sw := range s.Switches {
		row := fmt.Sprintf("%s %s in-shape=%v synced=%v", sw.Name, sw.Mode, sw.InShape, sw.Synced)
		if sw.Combination != "" {
			row += " " + sw.Combination
		}
		for _, e := range sw.Entries {
			row += fmt.Sprintf(" %s(%s)=%s/%s", e.Name, e.State, e.Matched, e.Reason)
		}
		out = append(out, row)
	}
	return out
}

// TestKubectlDynamicAnyOf: a state followed by a switch with anyOf (the
// state and a cluster state) and by a single-state switch. status and
// preview of the state include the anyOf switch, its mode decided from
// both entries; a flip of the cluster state alone changes its mode, and
// wait on the state returns once its target and status show it; override
// says what both entries select; a viewer who may not read the cluster
// state is told that entry counts as Unknown.
func TestKubectlDynamicAnyOf(t *testing.T) {
	name, label, value := clusterState(t, "200")
	ns := admittedNamespace(t, "plugin-anyof", label, value)
	apply(t, builders.FixedState(ns, "window", "200", "").YAML(),
		webIngress(ns, "web", "").AnyOf(builders.ClusterEntry("platform", name, "503"), builders.Entry("window", "window", "503")).YAML(),
		webIngress(ns, "plain", "window").ExpectCode("503").YAML())
	waitSwitchesReady(t, ns, "di")

	status := func() anyOfStatusJSON {
		t.Helper()
		var out anyOfStatusJSON
		raw := plugin(t, "status", "window", "-n", ns, "-o", "json")
		if err := json.Unmarshal([]byte(raw), &out); err != nil {
			t.Fatalf("status -o json printed %q: %v", raw, err)
		}
		return out
	}
	want := []string{
		"plain passive in-shape=true synced=true",
		fmt.Sprintf("web passive in-shape=true synced=true anyOf platform(cdis/%s)=False/NotMatched window(window)=False/NotMatched", name),
	}
	if diff := cmp.Diff(want, status().rows()); diff != "" {
		t.Errorf("status window -o json (-want +got):\n%s", diff)
	}
	out := plugin(t, "status", "window", "-n", ns)
	for _, want := range []string{
		"2 switches: 0 active, 2 passive, 0 not yet in shape\n",
		fmt.Sprintf(`DynamicIngress "web" anyOf(2): platform (cdis/%s) False NotMatched, window (window) False NotMatched`, name),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status window: no %q in\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`(?m)^DynamicIngress\s+web\s+` + ns + `/web\s+passive\s+yes\s+none\s+-\s+-\s*$`).MatchString(out) {
		t.Errorf("status window: no row for web, passive and in shape, in\n%s", out)
	}

	// If the window answered 503, both would turn active.
	if got := pluginPreview(t, ns, "window", "--status", "503").summary(); !cmp.Equal(got, []string{"DynamicIngress/plain passive->active", "DynamicIngress/web passive->active"}) {
		t.Errorf("preview window --status 503: %q, want plain and web passive->active", got)
	}

	// The platform's kill switch alone turns web active: wait on the
	// window returns once web's target and status show it.
	kubectl(t, "", "patch", "cdis", name, "--type=merge", "-p", `{"spec":{"fixedResponse":{"status":"503"}}}`)
	start := time.Now()
	out = plugin(t, "wait", "window", "-n", ns, "--timeout", "60s")
	if want := "State \"window\": all 2 switches in shape (1 active, 1 passive) after "; !strings.HasPrefix(out, want) {
		t.Errorf("wait window printed %q, want it to begin %q", out, want)
	}
	// Read right after wait returned.
	if got := backend(t, ns, "web"); got != "sorry" {
		t.Errorf("right after wait returned (%s), Ingress web sends to %q, want sorry", time.Since(start).Round(time.Millisecond), got)
	}
	if got := activeCondition(t, ns, "di", "web"); !strings.HasPrefix(got, "True/") {
		t.Errorf("right after wait returned, web's Active condition is %s, want True", got)
	}
	want = []string{
		"plain passive in-shape=true synced=true",
		fmt.Sprintf("web active in-shape=true synced=true anyOf platform(cdis/%s)=True/Matched window(window)=False/NotMatched", name),
	}
	if diff := cmp.Diff(want, status().rows()); diff != "" {
		t.Errorf("status window -o json after the platform's flip (-want +got):\n%s", diff)
	}

	// Now a 503 of the window changes only plain: web is active by the
	// platform already.
	if got := pluginPreview(t, ns, "window", "--status", "503").summary(); !cmp.Equal(got, []string{"DynamicIngress/plain passive->active"}) {
		t.Errorf("preview window --status 503 after the platform's flip: %q, want plain passive->active only", got)
	}

	// override pins over both entries, and says what they select.
	if out := plugin(t, "override", "di/web", "passive", "-n", ns); out != `DynamicIngress "web": spec.override pins passive mode; its anyOf(2) states would select active mode`+"\n" {
		t.Errorf("override di/web passive printed %q", out)
	}
	kubectl(t, "", "wait", "-n", ns, "--for=jsonpath={.status.conditions[?(@.type==\"Active\")].reason}=Overridden", "di/web", "--timeout=30s")
	plugin(t, "wait", "window", "-n", ns, "--timeout", "30s")
	if got := backend(t, ns, "web"); got != "web" {
		t.Errorf("after override passive and wait, Ingress web sends to %q, want web", got)
	}
	plugin(t, "override", "di/web", "none", "-n", ns)

	// A viewer bound in the namespace may not read the cluster state:
	// that entry counts as Unknown, and status says so.
	aggregateViewRole(t)
	viewer := viewerKubectl(t, ns, "anyof-viewer")
	out, stderr, code := runAs(t, viewer, "status", "window", "-n", ns)
	wantNote := fmt.Sprintf(`Note: ClusterDynamicIngressState %q, named in the anyOf/allOf of 1 switch, counts as Unknown there: reading it needs get on clusterdynamicingressstates.ingress.dynamicingress.io (cluster-scoped), which you lack`, name)
	if code != 0 || stderr != "" || !strings.Contains(out, wantNote+"\n") ||
		!strings.Contains(out, fmt.Sprintf(`platform (cdis/%s) Unknown NotReadable`, name)) {
		t.Errorf("status window as a viewer: exit %d, stderr %q, stdout\n%s\nwant exit 0, the entry Unknown NotReadable and the line %q", code, stderr, out, wantNote)
	}
}

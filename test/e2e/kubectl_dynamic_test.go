package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// These tests run the built kubectl-dynamic the way users run it: as
// `kubectl dynamic ...`, found by the real kubectl on its PATH, and assert
// what it prints, its exit status and what it leaves in the cluster
// (docs/kubectl-dynamic.md).

// pluginKubectl is kubectl with the plugin built for this run first on
// its PATH.
func pluginKubectl() controlplane.Kubectl {
	return controlplane.Kubectl{Kubeconfig: cluster.Kubeconfig, PluginDir: pluginDir}
}

// runPlugin runs `kubectl dynamic args...` and returns what it printed and
// its exit status.
func runPlugin(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runAs(t, pluginKubectl(), args...)
}

// exitCode is the exit status of a command that ran.
func exitCode(t *testing.T, err error) int {
	t.Helper()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	}
	t.Fatalf("running kubectl: %v", err)
	return -1
}

// plugin runs `kubectl dynamic args...` and fails the test unless it exits 0.
func plugin(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, code := runPlugin(t, args...)
	if code != 0 {
		t.Fatalf("kubectl dynamic %s: exit %d\n%s%s", strings.Join(args, " "), code, out, stderr)
	}
	return out
}

// applyRefused applies manifest, which must be refused: kubectl exits 1
// printing exactly want on stderr, and object (e.g. "di/site") is not
// created in ns.
func applyRefused(t *testing.T, ns, object, manifest, want string) {
	t.Helper()
	out, stderr, err := runKubectl(manifest, "apply", "-f", "-")
	if code := exitCode(t, err); code != 1 {
		t.Errorf("kubectl apply of %s: exit %d, want 1\n%s%s", object, code, out, stderr)
	}
	if got := strings.TrimSpace(stderr); got != want {
		t.Errorf("kubectl apply of %s printed:\n%s\nwant:\n%s", object, got, want)
	}
	if out, stderr, err := runKubectl("", "get", "-n", ns, object); err == nil || !strings.Contains(stderr, "NotFound") {
		t.Errorf("%s exists after a refused apply: %s%s", object, out, stderr)
	}
}

// apply applies the manifests with kubectl.
func apply(t *testing.T, manifests ...string) {
	t.Helper()
	kubectl(t, strings.Join(manifests, "---\n"), "apply", "-f", "-")
}

// webIngress is a DynamicIngress ns/name that follows state and routes
// name.example.com to "web" while passive and to "sorry" while active.
func webIngress(ns, name, state string) *builders.DynamicIngressWrapper {
	host := name + ".example.com"
	return builders.DynamicIngress(ns, name).State(state).
		Passive(builders.IngressTo(host, "web")).Active(builders.IngressTo(host, "sorry"))
}

// webRoute is a DynamicHTTPRoute ns/name that follows state and sends
// name.example.com to "web" while passive and redirects it while active.
func webRoute(ns, name, state string) *builders.DynamicHTTPRouteWrapper {
	host := name + ".example.com"
	return builders.DynamicHTTPRoute(ns, name).State(state).
		Passive(builders.RouteTo(host, "web")).Active(builders.RedirectTo(host, "status.example.com"))
}

// waitSwitchesReady waits until every switch of the kinds named (di, dhr) is Ready.
func waitSwitchesReady(t *testing.T, ns string, kinds ...string) {
	t.Helper()
	for _, kind := range kinds {
		kubectl(t, "", "wait", "-n", ns, "--for=condition=Ready", kind, "--all", "--timeout=60s")
	}
}

// resourceVersions is kind/name=resourceVersion of every object of the
// operator's kinds and every Ingress and HTTPRoute in ns, one a line.
func resourceVersions(t *testing.T, ns string) string {
	t.Helper()
	return kubectl(t, "", "get", "-n", ns, "dynamicingressstates,dynamicingresses,dynamichttproutes,ingresses,httproutes",
		"-o", `jsonpath={range .items[*]}{.kind}/{.metadata.name}={.metadata.resourceVersion}{"\n"}{end}`)
}

// shapeOf is which template the target of a switch has: "passive" (routes
// to web), "active" (routes to sorry, or redirects), "none" (no target).
func shapeOf(t *testing.T, ns, kind, name string) string {
	t.Helper()
	path := "{.spec.rules[0].http.paths[0].backend.service.name}"
	if kind == "httproute" {
		path = "{.spec.rules[0].backendRefs[0].name}{.spec.rules[0].filters[0].type}"
	}
	out, stderr, err := runKubectl("", "get", "-n", ns, kind, name, "-o", "jsonpath="+path)
	switch {
	case err != nil && strings.Contains(stderr, "NotFound"):
		return "none"
	case err != nil:
		t.Fatalf("kubectl get %s %s: %v: %s", kind, name, err, stderr)
	}
	switch out {
	case "web":
		return "passive"
	case "sorry", "RequestRedirect":
		return "active"
	}
	return "unknown (" + out + ")"
}

// activeCondition is a switch's Active condition as status/observedGeneration/generation.
func activeCondition(t *testing.T, ns, kind, name string) string {
	t.Helper()
	return kubectl(t, "", "get", "-n", ns, kind, name, "-o",
		`jsonpath={.status.conditions[?(@.type=="Active")].status}/{.status.conditions[?(@.type=="Active")].observedGeneration}/{.metadata.generation}`)
}

// statusJSON is `kubectl dynamic status -o json`, decoded.
type statusJSON struct {
	State struct {
		Name, Namespace, StatusCode, Reason, NextTransitionTime string
	}
	Switches []struct {
		Kind, Name, Target, Mode, Override string
		InShape                            bool
		Accepted                           *string
	}
	Summary struct{ Total, Active, Passive, NotInShape int }
}

func pluginStatus(t *testing.T, ns, state string) statusJSON {
	t.Helper()
	var out statusJSON
	raw := plugin(t, "status", state, "-n", ns, "-o", "json")
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatalf("kubectl dynamic status -o json printed %q: %v", raw, err)
	}
	return out
}

// keysOf is the sorted keys of a JSON object.
func keysOf(m map[string]json.RawMessage) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func TestKubectlDynamicStatus(t *testing.T) {
	ns := newNamespace(t, "plugin-status")
	apply(t, builders.FixedState(ns, "flag", "200", "").YAML(),
		webIngress(ns, "alpha", "flag").ExpectCode("200").YAML(),
		webIngress(ns, "beta", "flag").ExpectCode("503").YAML(),
		webIngress(ns, "pinned", "flag").ExpectCode("503").Override(v1beta1.ModeActive).YAML(),
		webRoute(ns, "route", "flag").ExpectCode("503").YAML(),
		// Passive with no Ingress; someone else then takes its target
		// name, which the operator leaves be: never in shape.
		webIngress(ns, "taken", "flag").ExpectCode("503").Passive(nil).YAML(),
		// Follows another state: not listed.
		builders.FixedState(ns, "another", "200", "").YAML(),
		webIngress(ns, "other", "another").ExpectCode("200").YAML())
	waitSwitchesReady(t, ns, "di", "dhr")
	apply(t, fmt.Sprintf(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {namespace: %s, name: taken}
spec:
  defaultBackend: {service: {name: theirs, port: {number: 80}}}
`, ns))

	raw := plugin(t, "status", "flag", "-n", ns, "-o", "json")
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &top); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, raw)
	}
	var shape struct {
		State    map[string]json.RawMessage
		Switches []map[string]json.RawMessage
		Summary  map[string]json.RawMessage
	}
	if err := json.Unmarshal([]byte(raw), &shape); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"state", "summary", "switches"}, keysOf(top)); diff != "" {
		t.Errorf("status -o json top-level keys (-want +got):\n%s", diff)
	}
	for _, k := range []string{"name", "namespace", "statusCode", "reason", "nextTransitionTime"} {
		if _, ok := shape.State[k]; !ok {
			t.Errorf("status -o json: state has no %q: %s", k, raw)
		}
	}
	if diff := cmp.Diff([]string{"active", "notInShape", "passive", "total"}, keysOf(shape.Summary)); diff != "" {
		t.Errorf("status -o json summary keys (-want +got):\n%s", diff)
	}
	for _, sw := range shape.Switches {
		for _, k := range []string{"kind", "name", "target", "mode", "inShape", "override"} {
			if _, ok := sw[k]; !ok {
				t.Errorf("status -o json: a switch has no %q: %s", k, raw)
			}
		}
		_, hasAccepted := sw["accepted"]
		if kind := string(sw["kind"]); hasAccepted != (kind == `"DynamicHTTPRoute"`) {
			t.Errorf("status -o json: %s %s has accepted: %v; want it for DynamicHTTPRoutes only", kind, sw["name"], hasAccepted)
		}
	}

	got := pluginStatus(t, ns, "flag")
	if s := got.State; s.Name != "flag" || s.Namespace != ns || s.StatusCode != "200" || s.Reason != v1beta1.ReasonFixed {
		t.Errorf("status -o json state = %+v, want flag in %s answering 200, reason Fixed", s, ns)
	}
	var rows []string
	for _, sw := range got.Switches {
		accepted := "-"
		if sw.Accepted != nil {
			accepted = *sw.Accepted
		}
		rows = append(rows, fmt.Sprintf("%s %s %s %s inShape=%v override=%s accepted=%s", sw.Kind, sw.Name, sw.Target, sw.Mode, sw.InShape, sw.Override, accepted))
	}
	want := []string{
		"DynamicIngress alpha " + ns + "/alpha active inShape=true override=none accepted=-",
		"DynamicIngress beta " + ns + "/beta passive inShape=true override=none accepted=-",
		"DynamicIngress pinned " + ns + "/pinned active inShape=true override=active accepted=-",
		"DynamicIngress taken " + ns + "/taken passive inShape=false override=none accepted=-",
		"DynamicHTTPRoute route " + ns + "/route passive inShape=true override=none accepted=unknown",
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("status -o json switches (-want +got):\n%s", diff)
	}
	if s := got.Summary; s.Total != 5 || s.Active != 2 || s.Passive != 3 || s.NotInShape != 1 {
		t.Errorf("status -o json summary = %+v, want 5 total, 2 active, 3 passive, 1 not in shape", s)
	}

	table := plugin(t, "status", "flag", "-n", ns)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if want := "State " + ns + "/flag: HTTP 200, Fixed"; lines[0] != want {
		t.Errorf("status first line = %q, want %q", lines[0], want)
	}
	if got := strings.Join(strings.Fields(lines[1]), " "); got != "KIND NAME TARGET MODE IN SHAPE OVERRIDE ACCEPTED SERVED" {
		t.Errorf("status header = %q", got)
	}
	if !regexp.MustCompile(`(?m)^DynamicIngress\s+taken\s+` + ns + `/taken\s+passive\s+no\s+none\s+-\s+-\s*$`).MatchString(table) {
		t.Errorf("status table:\n%s\nwant a row: DynamicIngress taken %s/taken passive no none - -", table, ns)
	}
	if last, want := lines[len(lines)-1], "5 switches: 2 active, 3 passive, 1 not yet in shape"; last != want {
		t.Errorf("status summary line = %q, want %q", last, want)
	}
	t.Logf("kubectl dynamic status:\n%s", table)
}

// previewJSON is `kubectl dynamic preview -o json`, decoded.
type previewJSON struct {
	Changes []struct{ Kind, Name, Target, From, To, Diff string }
}

func (p previewJSON) summary() []string {
	out := []string{}
	for _, ch := range p.Changes {
		out = append(out, fmt.Sprintf("%s/%s %s->%s", ch.Kind, ch.Name, ch.From, ch.To))
	}
	sort.Strings(out)
	return out
}

func pluginPreview(t *testing.T, ns string, args ...string) previewJSON {
	t.Helper()
	out, stderr, code := runPlugin(t, append([]string{"preview", "-n", ns, "-o", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("kubectl dynamic preview %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	var p previewJSON
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("preview -o json printed %q: %v", out, err)
	}
	return p
}

func TestKubectlDynamicPreviewExitCodeWritesNothing(t *testing.T) {
	ns := newNamespace(t, "plugin-preview")
	apply(t, builders.FixedState(ns, "flag", "200", "").YAML(),
		// No passive template: passive now with no Ingress; 503 creates one.
		webIngress(ns, "appear", "flag").ExpectCode("503").Passive(nil).YAML(),
		// No active template: 503 deletes its Ingress.
		webIngress(ns, "vanish", "flag").ExpectCode("503").Active(nil).YAML(),
		webIngress(ns, "steady", "flag").ExpectCode("404").YAML(),
		webRoute(ns, "route", "flag").ExpectCode("503").YAML())
	waitSwitchesReady(t, ns, "di", "dhr")
	plugin(t, "wait", "flag", "-n", ns, "--timeout", "60s")
	before := resourceVersions(t, ns)

	out, stderr, code := runPlugin(t, "preview", "flag", "-n", ns, "--status", "503", "--exit-code")
	if code != 1 {
		t.Errorf("preview --status 503 --exit-code: exit %d, want 1 (something would change)\n%s%s", code, out, stderr)
	}
	for _, want := range []string{
		`If state "flag" answered 503: 3 switches would change mode`,
		`DynamicIngress "appear" (target ` + ns + `/appear): passive -> active`,
		"--- /dev/null\n+++ dry-run/" + ns + "/appear\n",
		`DynamicIngress "vanish" (target ` + ns + `/vanish): passive -> active`,
		"--- live/" + ns + "/vanish\n+++ /dev/null\n",
		`DynamicHTTPRoute "route" (target ` + ns + `/route): passive -> active`,
		"--- live/" + ns + "/route\n+++ dry-run/" + ns + "/route\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("preview --status 503 printed:\n%s\nwant it to contain %q", out, want)
		}
	}
	if strings.Contains(out, `"steady"`) {
		t.Errorf("preview --status 503 lists steady, which expects 404:\n%s", out)
	}
	// The created Ingress is what the server would store: defaults and all.
	if !regexp.MustCompile(`(?m)^\+  name: appear$`).MatchString(out) || !regexp.MustCompile(`(?m)^\+\s+name: sorry$`).MatchString(out) {
		t.Errorf("the creation diff of appear does not show its Ingress:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^\+.*type: RequestRedirect$`).MatchString(out) || !regexp.MustCompile(`(?m)^-.*name: web$`).MatchString(out) {
		t.Errorf("the diff of route does not show the redirect replacing the backend:\n%s", out)
	}
	t.Logf("kubectl dynamic preview --status 503:\n%s", out)

	p := pluginPreview(t, ns, "flag", "--status", "503")
	want := []string{"DynamicHTTPRoute/route passive->active", "DynamicIngress/appear passive->active", "DynamicIngress/vanish passive->active"}
	if diff := cmp.Diff(want, p.summary()); diff != "" {
		t.Errorf("preview -o json changes (-want +got):\n%s", diff)
	}

	out, stderr, code = runPlugin(t, "preview", "flag", "-n", ns, "--status", "200", "--exit-code")
	if code != 0 {
		t.Errorf("preview --status 200 --exit-code: exit %d, want 0 (nothing would change)\n%s%s", code, out, stderr)
	}
	if want := `If state "flag" answered 200: no switch would change mode` + "\n"; out != want {
		t.Errorf("preview --status 200 printed %q, want %q", out, want)
	}

	// With --exit-code an error is 2, as in kubectl diff: a script tells a
	// pending flip (1) from an outage.
	_, stderr, code = runPlugin(t, "preview", "missing", "-n", ns, "--status", "200", "--exit-code")
	if want := `error: state "missing" not found in namespace "` + ns + `"` + "\n"; code != 2 || stderr != want {
		t.Errorf("preview of a missing state with --exit-code: exit %d, stderr %q; want exit 2 and %q", code, stderr, want)
	}

	if after := resourceVersions(t, ns); after != before {
		t.Errorf("preview wrote to the cluster: resourceVersions before:\n%s\nafter:\n%s", before, after)
	}
	if !strings.Contains(before, "\nIngress/vanish=") || strings.Contains(before, "\nIngress/appear=") || !strings.Contains(before, "\nHTTPRoute/route=") {
		t.Fatalf("the objects before the preview are not as the test expects:\n%s", before)
	}
}

// TestKubectlDynamicPreviewComesTrue previews a response, makes the state
// answer it, and checks that exactly the switches the preview named
// changed mode, for both kinds and every kind of expectation.
func TestKubectlDynamicPreviewComesTrue(t *testing.T) {
	ns := newNamespace(t, "plugin-cometrue")
	const (
		now   = `{"maintenance": false, "by": "nobody"}`
		would = `{"maintenance": true, "by": "ops", "since": "09:00"}`
	)
	apply(t, builders.FixedState(ns, "flag", "200", now).YAML(),
		webIngress(ns, "code503", "flag").ExpectCode("503").YAML(),
		webIngress(ns, "code200", "flag").ExpectCode("200").YAML(),
		webIngress(ns, "expr", "flag").Expression(`response.code == 503 && response.json.maintenance == true`).YAML(),
		webIngress(ns, "exprflips", "flag").Expression(`response.json.by == "nobody"`).YAML(),
		webIngress(ns, "exprkeeps", "flag").Expression(`response.code == 200 || response.json.maintenance == true`).YAML(),
		webIngress(ns, "contains", "flag").ExpectBody(`{"maintenance": true}`).BodyMatch(v1beta1.BodyMatchContains).YAML(),
		webIngress(ns, "pinned", "flag").ExpectCode("503").Override(v1beta1.ModePassive).YAML(),
		webIngress(ns, "code404", "flag").ExpectCode("404").YAML(),
		webRoute(ns, "route503", "flag").ExpectCode("503").YAML(),
		webRoute(ns, "routecontains", "flag").ExpectBody(`{"maintenance": true}`).BodyMatch(v1beta1.BodyMatchContains).YAML(),
		webRoute(ns, "routeexpr", "flag").Expression(`response.json.maintenance == false`).YAML(),
		webRoute(ns, "route404", "flag").ExpectCode("404").YAML())
	waitSwitchesReady(t, ns, "di", "dhr")
	plugin(t, "wait", "flag", "-n", ns, "--timeout", "60s")

	type sw struct{ kind, target, name string }
	var switches []sw
	for _, n := range []string{"code503", "code200", "expr", "exprflips", "exprkeeps", "contains", "pinned", "code404"} {
		switches = append(switches, sw{"di", "ingress", n})
	}
	for _, n := range []string{"route503", "routecontains", "routeexpr", "route404"} {
		switches = append(switches, sw{"dhr", "httproute", n})
	}
	modes := func() map[string]string {
		out := map[string]string{}
		for _, s := range switches {
			cond := activeCondition(t, ns, s.kind, s.name)
			out[s.kind+"/"+s.name] = fmt.Sprintf("Active %s, target %s", strings.SplitN(cond, "/", 2)[0], shapeOf(t, ns, s.target, s.name))
		}
		return out
	}
	before := modes()

	bodyFile := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(bodyFile, []byte(would), 0o600); err != nil {
		t.Fatal(err)
	}
	p := pluginPreview(t, ns, "flag", "--status", "503", "--body-file", bodyFile)
	want := []string{
		"DynamicHTTPRoute/route503 passive->active",
		"DynamicHTTPRoute/routecontains passive->active",
		"DynamicHTTPRoute/routeexpr active->passive",
		"DynamicIngress/code200 active->passive",
		"DynamicIngress/code503 passive->active",
		"DynamicIngress/contains passive->active",
		"DynamicIngress/expr passive->active",
		"DynamicIngress/exprflips active->passive",
	}
	if diff := cmp.Diff(want, p.summary()); diff != "" {
		t.Errorf("preview changes (-want +got):\n%s", diff)
	}
	for _, ch := range p.Changes {
		if ch.Diff == "" {
			t.Errorf("preview: %s %s has no diff", ch.Kind, ch.Name)
		}
	}

	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"fixedResponse": map[string]any{"status": "503", "body": would}}})
	kubectl(t, "", "patch", "-n", ns, "dis", "flag", "--type", "merge", "-p", string(patch))
	out := plugin(t, "wait", "flag", "-n", ns, "--timeout", "60s")
	if !strings.HasPrefix(out, `State "flag": all 12 switches in shape`) {
		t.Errorf("wait printed %q", out)
	}
	after := modes()

	// The preview's changes, and only they, happened.
	previewed := map[string]string{}
	for _, ch := range p.Changes {
		kind := map[string]string{"DynamicIngress": "di", "DynamicHTTPRoute": "dhr"}[ch.Kind]
		previewed[kind+"/"+ch.Name] = ch.To
	}
	for _, s := range switches {
		key := s.kind + "/" + s.name
		wantAfter := before[key]
		if to, ok := previewed[key]; ok {
			wantAfter = map[string]string{"active": "Active True, target active", "passive": "Active False, target passive"}[to]
		}
		if after[key] != wantAfter {
			t.Errorf("%s: before the flip %q, after %q; the preview said %q", key, before[key], after[key], wantAfter)
		}
	}
}

// TestKubectlDynamicWaitReturnsWhenEverythingIsInShape flips a state with
// 30 switches and one switch held back by an Ingress it does not own:
// wait keeps waiting while that one is out of shape, and once it is freed
// wait returns with every target and every status showing the flip.
func TestKubectlDynamicWaitReturnsWhenEverythingIsInShape(t *testing.T) {
	ns := newNamespace(t, "plugin-wait")
	const n = 30
	manifests := []string{builders.FixedState(ns, "flag", "200", "").YAML(),
		// No passive Ingress: someone else's Ingress at its name holds it
		// back when it turns active.
		webIngress(ns, "blocked", "flag").ExpectCode("503").Passive(nil).YAML()}
	for i := range n {
		manifests = append(manifests, webIngress(ns, fmt.Sprintf("site-%02d", i), "flag").ExpectCode("503").YAML())
	}
	apply(t, manifests...)
	waitSwitchesReady(t, ns, "di")
	plugin(t, "wait", "flag", "-n", ns, "--timeout", "60s")
	apply(t, fmt.Sprintf(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {namespace: %s, name: blocked}
spec:
  defaultBackend: {service: {name: theirs, port: {number: 80}}}
`, ns))

	kubectl(t, "", "patch", "-n", ns, "dis", "flag", "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"503"}}}`)
	done, stdout, stderr := startPlugin(t, "wait", "flag", "-n", ns, "--timeout", "60s")
	kubectl(t, "", "wait", "-n", ns, "--for=jsonpath={.status.conditions[?(@.type==\"Ready\")].reason}=TargetConflict", "di/blocked", "--timeout=30s")
	select {
	case err := <-done:
		t.Fatalf("wait returned while blocked's target is someone else's Ingress: %v\n%s%s", err, stdout.String(), stderr.String())
	case <-time.After(2 * time.Second):
	}

	// Free blocked: the other Ingress goes, and a change to blocked's
	// spec has the operator write its own.
	kubectl(t, "", "delete", "-n", ns, "ingress", "blocked")
	kubectl(t, "", "patch", "-n", ns, "di", "blocked", "--type", "merge", "-p", `{"spec":{"activeIngress":{"template":{"metadata":{"annotations":{"example.com/freed":"yes"}}}}}}`)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("wait: %v\n%s%s", err, stdout.String(), stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("wait did not return within 30s of blocked being freed")
	}
	// Read right after wait returns: every Ingress and every status shows
	// the flip.
	backends := kubectl(t, "", "get", "-n", ns, "ingress", "-o", `jsonpath={range .items[*]}{.metadata.name}={.spec.rules[0].http.paths[0].backend.service.name}/{.metadata.ownerReferences[0].name}{"\n"}{end}`)
	conds := kubectl(t, "", "get", "-n", ns, "di", "-o", `jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Active")].status}/{.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Active")].observedGeneration}/{.status.conditions[?(@.type=="Ready")].observedGeneration}/{.metadata.generation}{"\n"}{end}`)
	out := stdout.String()
	if want := fmt.Sprintf(`State "flag": all %d switches in shape (%d active, 0 passive) after `, n+1, n+1); !strings.HasPrefix(out, want) {
		t.Errorf("wait printed %q, want it to begin %q", out, want)
	}
	if got := len(regexp.MustCompile(`(?m)^(\S+)=sorry/(\S+)$`).FindAllString(backends, -1)); got != n+1 || !strings.Contains(backends, "\nblocked=sorry/blocked\n") && !strings.HasPrefix(backends, "blocked=sorry/blocked\n") {
		t.Errorf("right after wait returned, %d of %d Ingresses route to sorry, owned:\n%s", got, n+1, backends)
	}
	if got := len(regexp.MustCompile(`(?m)^site-\d+=True/True/1/1/1$|^blocked=True/True/2/2/2$`).FindAllString(conds, -1)); got != n+1 {
		t.Errorf("right after wait returned, %d of %d DynamicIngresses show Active True, Ready True at their generation:\n%s", got, n+1, conds)
	}
	t.Logf("kubectl dynamic wait: %s", strings.TrimSpace(out))

	// A status that does not say what the target shows keeps wait
	// waiting: site-00's Ingress stays active, its status says passive
	// (written as a stale writer would; the manager reconciles on spec
	// changes, not on its own status).
	var conditions []struct{ Type string }
	if err := json.Unmarshal([]byte(kubectl(t, "", "get", "-n", ns, "di", "site-00", "-o", "jsonpath={.status.conditions}")), &conditions); err != nil {
		t.Fatal(err)
	}
	for i, c := range conditions {
		if c.Type == v1beta1.ConditionActive {
			kubectl(t, "", "patch", "-n", ns, "di", "site-00", "--subresource=status", "--type=json", "-p",
				fmt.Sprintf(`[{"op":"replace","path":"/status/conditions/%d/status","value":"False"}]`, i))
		}
	}
	_, stderr2, code := runPlugin(t, "wait", "flag", "-n", ns, "--timeout", "2s")
	if want := `error: timed out after 2s waiting for state "flag": 1 not in shape: DynamicIngress "site-00": its status is not synced`; code != 1 || !strings.HasPrefix(stderr2, want) {
		t.Errorf("wait with site-00's status showing passive: exit %d, stderr %q; want exit 1 and a line beginning %q", code, stderr2, want)
	}
	if got := shapeOf(t, ns, "ingress", "site-00"); got != "active" {
		t.Fatalf("site-00's Ingress is %s, want it active still", got)
	}
	// A change to its spec has the manager write its status again.
	kubectl(t, "", "patch", "-n", ns, "di", "site-00", "--type", "merge", "-p", `{"spec":{"failurePolicy":"Active"}}`)
	plugin(t, "wait", "flag", "-n", ns, "--timeout", "30s")
}

func TestKubectlDynamicWaitTimesOutNamingTheConflict(t *testing.T) {
	ns := newNamespace(t, "plugin-wait-conflict")
	// contested expects 200: passive, with no Ingress, until the flip.
	apply(t, builders.FixedState(ns, "flag", "503", "").YAML(),
		webIngress(ns, "fine", "flag").ExpectCode("200").YAML(),
		contestedManifest(ns))
	waitSwitchesReady(t, ns, "di")
	// Someone else takes contested's target name while it has no Ingress.
	apply(t, unownedIngressesManifest(ns))
	theirs := kubectl(t, "", "get", "-n", ns, "ingress", "contested", "-o", "yaml")
	kubectl(t, "", "patch", "-n", ns, "dis", "flag", "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"200"}}}`)
	kubectl(t, "", "wait", "-n", ns, "--for=jsonpath={.status.conditions[?(@.type==\"Ready\")].reason}=TargetConflict", "di/contested", "--timeout=30s")

	start := time.Now()
	out, stderr, code := runPlugin(t, "wait", "flag", "-n", ns, "--timeout", "3s")
	took := time.Since(start)
	if code != 1 {
		t.Errorf("wait with a conflicting Ingress: exit %d, want 1\n%s%s", code, out, stderr)
	}
	if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, `error: timed out after 3s waiting for state "flag": 1 not in shape: DynamicIngress "contested": `) ||
		!strings.Contains(stderr, "TargetConflict") {
		t.Errorf("wait stderr = %q, want one line: error: timed out after 3s waiting for state \"flag\": 1 not in shape: DynamicIngress \"contested\": ... TargetConflict ...", stderr)
	}
	if strings.Contains(stderr, `"fine"`) {
		t.Errorf("wait names fine, which is in shape: %s", stderr)
	}
	if took < 3*time.Second || took > 20*time.Second {
		t.Errorf("wait --timeout 3s returned after %s", took)
	}
	if got := kubectl(t, "", "get", "-n", ns, "ingress", "contested", "-o", "yaml"); got != theirs {
		t.Errorf("the Ingress the operator does not own changed:\nbefore:\n%s\nafter:\n%s", theirs, got)
	}
	t.Logf("kubectl dynamic wait: %s", strings.TrimSpace(stderr))
}

func TestKubectlDynamicOverride(t *testing.T) {
	ns := newNamespace(t, "plugin-override")
	apply(t, builders.FixedState(ns, "flag", "200", "").YAML(),
		webIngress(ns, "shop", "flag").ExpectCode("503").YAML(),
		webRoute(ns, "route", "flag").ExpectCode("200").YAML())
	waitSwitchesReady(t, ns, "di", "dhr")

	tests := []struct {
		args     []string
		stdout   string
		kind     string
		name     string
		override string
		shape    string
	}{
		{[]string{"di/shop", "active"}, `DynamicIngress "shop": spec.override pins active mode; state "flag" would select passive mode`, "di", "shop", "Active", "active"},
		{[]string{"dynamicingress/shop", "none"}, `DynamicIngress "shop": spec.override removed; it follows state "flag", which selects passive mode`, "di", "shop", "", "passive"},
		{[]string{"dhr/route", "passive"}, `DynamicHTTPRoute "route": spec.override pins passive mode; state "flag" would select active mode`, "dhr", "route", "Passive", "passive"},
		{[]string{"DynamicHTTPRoutes/route", "none"}, `DynamicHTTPRoute "route": spec.override removed; it follows state "flag", which selects active mode`, "dhr", "route", "", "active"},
	}
	for _, tt := range tests {
		out := plugin(t, append([]string{"override", "-n", ns}, tt.args...)...)
		if out != tt.stdout+"\n" {
			t.Errorf("override %v printed %q, want %q", tt.args, out, tt.stdout)
		}
		if got := kubectl(t, "", "get", "-n", ns, tt.kind, tt.name, "-o", "jsonpath={.spec.override}"); got != tt.override {
			t.Errorf("after override %v: spec.override = %q, want %q", tt.args, got, tt.override)
		}
		plugin(t, "wait", "flag", "-n", ns, "--timeout", "60s")
		target := map[string]string{"di": "ingress", "dhr": "httproute"}[tt.kind]
		if got := shapeOf(t, ns, target, tt.name); got != tt.shape {
			t.Errorf("after override %v: %s %s is %s, want %s", tt.args, target, tt.name, got, tt.shape)
		}
	}

	_, stderr, code := runPlugin(t, "override", "-n", ns, "di/nope", "active")
	if want := `error: DynamicIngress "nope" not found in namespace "` + ns + `"` + "\n"; code != 1 || stderr != want {
		t.Errorf("override di/nope: exit %d, stderr %q; want exit 1, %q", code, stderr, want)
	}
	_, stderr, code = runPlugin(t, "override", "-n", ns, "di/shop", "sideways")
	if want := `error: mode "sideways": use active, passive or none` + "\n"; code != 2 || stderr != want {
		t.Errorf("override di/shop sideways: exit %d, stderr %q; want exit 2, %q", code, stderr, want)
	}
	if got := kubectl(t, "", "get", "-n", ns, "di", "shop", "-o", "jsonpath={.spec.override}"); got != "" {
		t.Errorf("a refused override changed spec.override to %q", got)
	}

	// Dry runs say what would be and write nothing; --field-manager names
	// the writer in managedFields.
	for _, dryRun := range []string{"server", "client"} {
		out := plugin(t, "override", "-n", ns, "di/shop", "active", "--dry-run="+dryRun)
		if want := `DynamicIngress "shop": spec.override pins active mode; state "flag" would select passive mode (` + dryRun + " dry run)\n"; out != want {
			t.Errorf("override --dry-run=%s printed %q, want %q", dryRun, out, want)
		}
		if got := kubectl(t, "", "get", "-n", ns, "di", "shop", "-o", "jsonpath={.spec.override}"); got != "" {
			t.Errorf("override --dry-run=%s set spec.override to %q", dryRun, got)
		}
	}
	_, stderr, code = runPlugin(t, "override", "-n", ns, "di/shop", "active", "--dry-run=yes")
	if want := `error: --dry-run "yes": use none, server or client` + "\n"; code != 2 || stderr != want {
		t.Errorf("override --dry-run=yes: exit %d, stderr %q; want exit 2, %q", code, stderr, want)
	}
	plugin(t, "override", "-n", ns, "di/shop", "passive", "--field-manager=oncall-alice")
	if got := kubectl(t, "", "get", "-n", ns, "di", "shop", "--show-managed-fields", "-o", "jsonpath={.metadata.managedFields[*].manager}"); !strings.Contains(got, "oncall-alice") {
		t.Errorf("after override --field-manager=oncall-alice, managedFields managers are %q", got)
	}
}

func TestKubectlDynamicErrorsAndExitCodes(t *testing.T) {
	ns := newNamespace(t, "plugin-errors")
	apply(t, builders.FixedState(ns, "flag", "200", "").YAML(),
		builders.ScheduleState(ns, "weekly").Cron("0 2 * * 0", time.Hour).YAML(),
		webIngress(ns, "checkout", "weekly").Expression("response.json.open").YAML())
	kubectl(t, "", "wait", "-n", ns, "--for=condition=Ready", "dis", "--all", "--timeout=30s")

	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string // the whole of stderr, or its beginning when it ends with "..."
	}{
		{"missing state", []string{"status", "x", "-n", ns}, 1, `error: state "x" not found in namespace "` + ns + `"`},
		{"missing state, preview", []string{"preview", "x", "-n", ns, "--status", "503"}, 1, `error: state "x" not found in namespace "` + ns + `"`},
		{"missing state, wait", []string{"wait", "x", "-n", ns}, 1, `error: state "x" not found in namespace "` + ns + `"`},
		{"no arguments", []string{"wait", "-n", ns}, 2, "error: expected one STATE, got 0 arguments"},
		{"unknown flag", []string{"status", "flag", "-n", ns, "--bogus"}, 2, "error: unknown flag: --bogus"},
		{"bad --status", []string{"preview", "flag", "-n", ns, "--status", "abc"}, 2, `error: --status "abc" is not an HTTP status code (100-599)`},
		{"both --status and --at", []string{"preview", "flag", "-n", ns, "--status", "503", "--at", "2026-12-24T00:00:00Z"}, 2, "error: give exactly one of --status CODE or --at RFC3339"},
		{"--at on a fixed state", []string{"preview", "flag", "-n", ns, "--at", "2026-12-24T00:00:00Z"}, 1, `error: --at is for a schedule state; state "flag" in namespace "` + ns + `" has no spec.schedule`},
		{"bad -o", []string{"status", "flag", "-n", ns, "-o", "wide"}, 2, `error: unable to match a printer suitable for the output format "wide", allowed formats are: go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,kyaml,name,template,templatefile,yaml`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, code := runPlugin(t, tt.args...)
			if code != tt.code {
				t.Errorf("kubectl dynamic %s: exit %d, want %d\n%s%s", strings.Join(tt.args, " "), code, tt.code, out, stderr)
			}
			if stderr != tt.stderr+"\n" {
				t.Errorf("kubectl dynamic %s: stderr %q, want the one line %q", strings.Join(tt.args, " "), stderr, tt.stderr)
			}
		})
	}

	// --at on a schedule state: inside the window (Sunday 02:30 UTC) the
	// checkout would be active, outside it stays passive.
	p := pluginPreview(t, ns, "weekly", "--at", "2026-12-27T02:30:00Z")
	if diff := cmp.Diff([]string{"DynamicIngress/checkout passive->active"}, p.summary()); diff != "" {
		t.Errorf("preview weekly --at inside the window (-want +got):\n%s", diff)
	}
	if p := pluginPreview(t, ns, "weekly", "--at", "2026-12-28T02:30:00Z"); len(p.Changes) != 0 {
		t.Errorf("preview weekly --at outside the window: %v, want no change", p.summary())
	}
	if s := pluginStatus(t, ns, "weekly"); s.State.NextTransitionTime == "" || s.State.Reason != v1beta1.ReasonScheduled {
		t.Errorf("status of a schedule state: %+v, want reason Scheduled and a nextTransitionTime", s.State)
	}

	var stdout, stderr bytes.Buffer
	version := exec.Command(filepath.Join(pluginDir, "kubectl-dynamic"), "--version")
	version.Stdout, version.Stderr = &stdout, &stderr
	if err := version.Run(); err != nil {
		t.Fatalf("kubectl-dynamic --version: %v: %s", err, stderr.String())
	}
	if !regexp.MustCompile(`^kubectl-dynamic version dev, commit \S+, go\S+ \S+/\S+\n$`).MatchString(stdout.String()) {
		t.Errorf("kubectl-dynamic --version printed %q, want \"kubectl-dynamic version dev, commit ..., go... os/arch\"", stdout.String())
	}
}

// routeStatus is an HTTPRoute status with one Accepted condition per
// parent, each at the observedGeneration given.
func routeStatus(t *testing.T, generations ...int64) string {
	t.Helper()
	var parents []map[string]any
	for i, gen := range generations {
		parents = append(parents, map[string]any{
			"parentRef":      map[string]any{"name": fmt.Sprintf("gateway-%d", i)},
			"controllerName": "example.com/gateway-controller",
			"conditions": []map[string]any{{
				"type": "Accepted", "status": "True", "reason": "Accepted", "message": "Route accepted",
				"observedGeneration": gen, "lastTransitionTime": "2026-01-01T00:00:00Z",
			}},
		})
	}
	raw, err := json.Marshal(map[string]any{"status": map[string]any{"parents": parents}})
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// setRouteStatus writes the HTTPRoute's status as a gateway controller
// does: through the status subresource.
func setRouteStatus(t *testing.T, ns, name, patch string) {
	t.Helper()
	kubectl(t, "", "patch", "-n", ns, "httproute", name, "--subresource=status", "--type=merge", "-p", patch)
}

func routeGeneration(t *testing.T, ns, name string) int64 {
	t.Helper()
	var gen int64
	if _, err := fmt.Sscan(kubectl(t, "", "get", "-n", ns, "httproute", name, "-o", "jsonpath={.metadata.generation}"), &gen); err != nil {
		t.Fatal(err)
	}
	return gen
}

func TestKubectlDynamicHTTPRouteAccepted(t *testing.T) {
	ns := newNamespace(t, "plugin-accepted")
	apply(t, builders.FixedState(ns, "flag", "200", "").YAML(), webRoute(ns, "route", "flag").ExpectCode("503").YAML())
	waitSwitchesReady(t, ns, "dhr")
	plugin(t, "wait", "flag", "-n", ns, "--timeout", "60s")

	acceptedOf := func() string {
		s := pluginStatus(t, ns, "flag")
		if len(s.Switches) != 1 || s.Switches[0].Accepted == nil {
			t.Fatalf("status: %+v, want one switch with accepted", s.Switches)
		}
		return *s.Switches[0].Accepted
	}
	if got := acceptedOf(); got != "unknown" {
		t.Errorf("accepted with no parent reported = %q, want unknown", got)
	}
	gen := routeGeneration(t, ns, "route")
	setRouteStatus(t, ns, "route", routeStatus(t, gen, gen))
	if got := acceptedOf(); got != "true" {
		t.Errorf("accepted with every parent Accepted at generation %d = %q, want true", gen, got)
	}
	if out := plugin(t, "status", "flag", "-n", ns); !regexp.MustCompile(`(?m)^DynamicHTTPRoute\s+route\s+\S+\s+passive\s+yes\s+none\s+true\s+-$`).MatchString(out) {
		t.Errorf("status table:\n%s\nwant route passive, in shape, accepted true", out)
	}
	setRouteStatus(t, ns, "route", routeStatus(t, gen, gen-1))
	if got := acceptedOf(); got != "false" {
		t.Errorf("accepted with one parent at generation %d of %d = %q, want false", gen-1, gen, got)
	}
	setRouteStatus(t, ns, "route", routeStatus(t, gen))

	// The flip writes a new generation; the parents still show the old
	// one, so wait --accepted waits until the gateway catches up.
	kubectl(t, "", "patch", "-n", ns, "dis", "flag", "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"503"}}}`)
	done, stdout, stderr := startPlugin(t, "wait", "flag", "-n", ns, "--accepted", "--timeout", "60s")
	kubectl(t, "", "wait", "-n", ns, "--for=condition=Active", "dhr/route", "--timeout=30s")
	kubectl(t, "", "wait", "-n", ns, "--for=jsonpath={.spec.rules[0].filters[0].type}=RequestRedirect", "httproute/route", "--timeout=30s")
	// In shape, not accepted: wait --accepted keeps waiting.
	select {
	case err := <-done:
		t.Fatalf("wait --accepted returned before any parent accepted the new generation: %v\n%s%s", err, stdout.String(), stderr.String())
	case <-time.After(2 * time.Second):
	}
	if got := acceptedOf(); got != "false" {
		t.Errorf("accepted after the flip, before the gateway's update = %q, want false", got)
	}
	if out, _, code := runPlugin(t, "wait", "flag", "-n", ns, "--timeout", "10s"); code != 0 {
		t.Errorf("wait without --accepted: exit %d, want 0 (the route is in shape): %s", code, out)
	}
	newGen := routeGeneration(t, ns, "route")
	if newGen == gen {
		t.Fatalf("the flip left the HTTPRoute's generation at %d", gen)
	}
	setRouteStatus(t, ns, "route", routeStatus(t, newGen))
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("wait --accepted: %v\n%s%s", err, stdout.String(), stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("wait --accepted did not return within 30s of every parent accepting generation %d", newGen)
	}
	if !strings.HasPrefix(stdout.String(), `State "flag": all 1 switch in shape and accepted (1 active, 0 passive) after `) {
		t.Errorf("wait --accepted printed %q", stdout.String())
	}
}

// startPlugin starts `kubectl dynamic args...` in the background: done
// receives its end, and stdout and stderr what it printed, once it is done.
// A command still running when the test ends is killed.
func startPlugin(t *testing.T, args ...string) (done <-chan error, stdout, stderr *bytes.Buffer) {
	t.Helper()
	return startAs(t, pluginKubectl(), args...)
}

// TestKubectlDynamicClusterState: a cluster state's followers in two
// namespaces, through cdis/NAME: status -A lists both namespaces' switches,
// -n one of them; wait -A returns once a flip is in place everywhere;
// status without a state lists the states with their follower counts.
func TestKubectlDynamicClusterState(t *testing.T) {
	name, label, value := clusterState(t, "200")
	shop := admittedNamespace(t, "plugin-cdis-shop", label, value)
	blog := admittedNamespace(t, "plugin-cdis-blog", label, value)
	for _, ns := range []string{shop, blog} {
		apply(t, webIngress(ns, "web", "").ClusterState(name).ExpectCode("503").YAML(),
			builders.FixedState(ns, "own", "200", "").YAML())
		waitSwitchesReady(t, ns, "di")
	}

	out := plugin(t, "status", "cdis/"+name, "-A")
	for _, want := range []string{
		"Cluster state " + name + ": HTTP 200, Fixed\n",
		"DynamicIngress   " + shop + "/web", "DynamicIngress   " + blog + "/web",
		"2 switches: 0 active, 2 passive, 0 not yet in shape\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status cdis/%s -A: no %q in\n%s", name, want, out)
		}
	}
	if out := plugin(t, "status", "clusterdynamicingressstate/"+name, "-n", shop); !strings.Contains(out, "1 switch: 0 active, 1 passive, 0 not yet in shape") {
		t.Errorf("status clusterdynamicingressstate/%s -n %s: want the one switch of that namespace\n%s", name, shop, out)
	}

	// kubectl's output flags: -o name and jsonpath over the report.
	if got, want := plugin(t, "status", "cdis/"+name, "-A", "-o", "name"), "dynamicingress.ingress.dynamicingress.io/web\ndynamicingress.ingress.dynamicingress.io/web\n"; got != want {
		t.Errorf("status -o name printed %q, want %q", got, want)
	}
	if got := plugin(t, "status", "cdis/"+name, "-A", "-o", "jsonpath={.summary.total} {.switches[*].namespace}"); got != "2 "+blog+" "+shop {
		t.Errorf("status -o jsonpath printed %q, want the total and both namespaces, in order", got)
	}

	kubectl(t, "", "patch", "cdis", name, "--type=merge", "-p", `{"spec":{"fixedResponse":{"status":"503"}}}`)
	if out := plugin(t, "wait", "cdis/"+name, "-A", "--timeout", "60s"); !strings.Contains(out, "all 2 switches in shape (2 active, 0 passive)") {
		t.Errorf("wait cdis/%s -A printed %q, want both switches active", name, out)
	}
	for _, ns := range []string{shop, blog} {
		if got := backend(t, ns, "web"); got != "sorry" {
			t.Errorf("after wait, Ingress %s/web sends to %q, want sorry", ns, got)
		}
	}

	var listed struct {
		States []struct {
			Kind, Name, Namespace, StatusCode string
			Followers                         int
		}
	}
	if err := json.Unmarshal([]byte(plugin(t, "status", "-n", shop, "-o", "json")), &listed); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range listed.States {
		if s.Kind == "DynamicIngressState" || s.Name == name {
			got = append(got, fmt.Sprintf("%s %s/%s %s %d", s.Kind, s.Namespace, s.Name, s.StatusCode, s.Followers))
		}
	}
	want := []string{"DynamicIngressState " + shop + "/own 200 0", "ClusterDynamicIngressState /" + name + " 503 1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status -n %s -o json: states (-want +got):\n%s", shop, diff)
	}

	// Shell completion through kubectl itself: kubectl runs
	// kubectl_complete-dynamic, a link to the plugin, with the words typed.
	helper := filepath.Join(pluginDir, "kubectl_complete-dynamic")
	if err := os.Symlink("kubectl-dynamic", helper); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	completed, _, err := pluginKubectl().Run("", "__complete", "dynamic", "status", "-n", shop, "")
	if err != nil {
		t.Fatalf("kubectl __complete dynamic status: %v", err)
	}
	for _, want := range []string{"own\n", "cdis/" + name + "\n", ":4\n"} {
		if !strings.Contains(completed, want) {
			t.Errorf("kubectl __complete dynamic status -n %s \"\": no %q in\n%s", shop, want, completed)
		}
	}
	if completed, _, _ := pluginKubectl().Run("", "__complete", "dynamic", "override", "-n", shop, "di/"); !strings.HasPrefix(completed, "di/web\n") {
		t.Errorf("kubectl __complete dynamic override di/: got\n%s\nwant di/web first", completed)
	}

	_, stderr, code := runPlugin(t, "status", "ingress/web", "-n", shop)
	if wantErr := `error: "ingress/web": name a state as NAME, dis/NAME or cdis/NAME` + "\n"; code != 2 || stderr != wantErr {
		t.Errorf("status ingress/web: exit %d, stderr %q; want exit 2 and %q", code, stderr, wantErr)
	}
}

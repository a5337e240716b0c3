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

// TestKubectlDynamicHistory: a fixed state created at 200 and flipped to
// 503 and back has three entries in its history, newest first, each of
// cause Fixed; `kubectl dynamic history` prints them as a table with the
// flip of each change once its follower shows it, and -o json prints them
// as the API has them. A user who may not read the state gets one line
// naming the permission.
func TestKubectlDynamicHistory(t *testing.T) {
	ns := newNamespace(t, "plugin-history")
	apply(t, builders.FixedState(ns, "flag", "200", "").YAML(),
		builders.FixedState(ns, "quiet", "200", "").YAML(),
		webIngress(ns, "shop", "flag").ExpectCode("503").YAML())
	waitSwitchesReady(t, ns, "di")

	for i, code := range []string{"503", "200"} {
		kubectl(t, "", "patch", "-n", ns, "dis", "flag", "--type=merge", "-p", `{"spec":{"fixedResponse":{"status":"`+code+`"}}}`)
		// The follower shows the change, and the change's entry its flip.
		want := fmt.Sprintf("%d/%s/1", i+2, code)
		waitFor(t, 60*time.Second, func() bool {
			got := kubectl(t, "", "get", "-n", ns, "dis", "flag", "-o", "jsonpath={.status.history[0].sequence}/{.status.history[0].statusCode}/{.status.history[0].flip.followers}")
			return got == want
		}, "history[0] of flag to be "+want+" (sequence/statusCode/flip.followers)")
	}

	out := plugin(t, "history", "flag", "-n", ns)
	got := tables(out)
	if len(got) != 1 {
		t.Fatalf("history flag printed %d tables, want 1:\n%s", len(got), out)
	}
	if diff := cmp.Diff([]string{"SEQ", "TIME", "CODE", "CAUSE", "BODY", "FLIP"}, got[0].header); diff != "" {
		t.Errorf("history flag header (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]string{{"3", "200", "Fixed"}, {"2", "503", "Fixed"}, {"1", "200", "Fixed"}}, got[0].cells("SEQ", "CODE", "CAUSE")); diff != "" {
		t.Errorf("history flag (-want +got):\n%s", diff)
	}
	// An empty body, its digest shortened; RFC 3339 in UTC; the flips of
	// both changes reached the one follower.
	emptyBody := "sha256:e3b0c44298fc"
	stamp := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)
	flip := regexp.MustCompile(`^1 follower in \S+$`)
	var times []string
	for i, row := range got[0].cells("TIME", "BODY", "FLIP") {
		if !stamp.MatchString(row[0]) || row[1] != emptyBody {
			t.Errorf("history flag row %d: TIME %q, BODY %q; want an RFC 3339 UTC time and %s", i, row[0], row[1], emptyBody)
		}
		if i < 2 && !flip.MatchString(row[2]) {
			t.Errorf("history flag row %d: FLIP %q, want \"1 follower in <duration>\"", i, row[2])
		}
		times = append(times, row[0])
	}
	if len(times) == 3 && (times[0] < times[1] || times[1] < times[2]) {
		t.Errorf("history flag times %v, want newest first", times)
	}

	// -o json: the entries as the API has them.
	var report struct {
		State   map[string]string `json:"state"`
		History json.RawMessage   `json:"history"`
	}
	if err := json.Unmarshal([]byte(plugin(t, "history", "flag", "-n", ns, "-o", "json")), &report); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"kind": "DynamicIngressState", "name": "flag", "namespace": ns}, report.State); diff != "" {
		t.Errorf("history flag -o json: state (-want +got):\n%s", diff)
	}
	var fromPlugin, fromAPI any
	if err := json.Unmarshal(report.History, &fromPlugin); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(kubectl(t, "", "get", "-n", ns, "dis", "flag", "-o", "jsonpath={.status.history}")), &fromAPI); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fromAPI, fromPlugin); diff != "" {
		t.Errorf("history flag -o json: history (-status.history +printed):\n%s", diff)
	}
	if yaml := plugin(t, "history", "flag", "-n", ns, "-o", "yaml"); !strings.Contains(yaml, "history:\n- bodyDigest: sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n") {
		t.Errorf("history flag -o yaml printed:\n%s", yaml)
	}

	// quiet's creation is its one change.
	if diff := cmp.Diff([][]string{{"1", "200", "Fixed", "-"}}, tables(plugin(t, "history", "dis/quiet", "-n", ns))[0].cells("SEQ", "CODE", "CAUSE", "FLIP")); diff != "" {
		t.Errorf("history dis/quiet (-want +got):\n%s", diff)
	}

	_, stderr, code := runPlugin(t, "history", "nope", "-n", ns)
	if want := `error: state "nope" not found in namespace "` + ns + `"` + "\n"; code != 1 || stderr != want {
		t.Errorf("history nope: exit %d, stderr %q; want exit 1, %q", code, stderr, want)
	}

	// A user bound to a role that reads pods only.
	kubectl(t, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: e2e-pod-reader}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get, list]}
`, "apply", "-f", "-")
	outsider := boundKubectl(t, ns, "outsider", "e2e-pod-reader", "get", "pods")
	_, stderr, code = runAs(t, outsider, "history", "flag")
	want := `error: history needs get on dynamicingressstates.ingress.dynamicingress.io in namespace "` + ns + `": ` +
		`dynamicingressstates.ingress.dynamicingress.io "flag" is forbidden: User "system:serviceaccount:` + ns + `:outsider" cannot get resource "dynamicingressstates" in API group "ingress.dynamicingress.io" in the namespace "` + ns + `"` + "\n"
	if code != 1 || stderr != want {
		t.Errorf("history flag as a user who may not read it: exit %d, stderr %q; want exit 1, %q", code, stderr, want)
	}
}

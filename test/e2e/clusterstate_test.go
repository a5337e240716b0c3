package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// clusterState is a fixed ClusterDynamicIngressState for one test, with a
// name unique within the run and a grant over a label of its own, so that
// no other test's namespace follows it. It is deleted when the test ends.
func clusterState(t *testing.T, code string) (name, label, value string) {
	t.Helper()
	name = fmt.Sprintf("killswitch-%d", namespaces.Add(1))
	label, value = "e2e.dynamicingress.io/follows", name
	apply(t, builders.FixedState("", name, code, "").Cluster().FollowersMatching(map[string]string{label: value}).YAML())
	t.Cleanup(func() { _, _, _ = runKubectl("", "delete", "cdis", name, "--ignore-not-found") })
	kubectl(t, "", "wait", "--for=condition=Ready", "cdis/"+name, "--timeout=30s")
	return name, label, value
}

// admittedNamespace is a new namespace labelled label=value.
func admittedNamespace(t *testing.T, prefix, label, value string) string {
	t.Helper()
	ns := newNamespace(t, prefix)
	kubectl(t, "", "label", "namespace", ns, label+"="+value)
	return ns
}

// backend is the Service the first path of Ingress ns/name sends to.
func backend(t *testing.T, ns, name string) string {
	t.Helper()
	return kubectl(t, "", "get", "-n", ns, "ingress", name, "-o", "jsonpath={.spec.rules[0].http.paths[0].backend.service.name}")
}

// TestClusterStateColumns: `kubectl get cdis` and `kubectl get dynamic`
// show a cluster state and the switches that follow one, in the columns
// the types declare.
func TestClusterStateColumns(t *testing.T) {
	name, label, value := clusterState(t, "200")
	ns := admittedNamespace(t, "cdis-columns", label, value)
	apply(t, builders.FixedState(ns, "own", "200", "").YAML(),
		webIngress(ns, "local", "own").ExpectCode("503").YAML(),
		webIngress(ns, "follower", "").ClusterState(name).ExpectCode("503").YAML(),
		webRoute(ns, "route", "").ClusterState(name).ExpectCode("503").YAML())
	kubectl(t, "", "wait", "-n", ns, "--for=condition=Ready", "di,dhr", "--all", "--timeout=30s")

	got := tables(kubectl(t, "", "get", "cdis", name))
	if diff := cmp.Diff([]string{"NAME", "MODE", "CODE", "READY", "AGE"}, got[0].header); diff != "" {
		t.Errorf("kubectl get cdis header (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]string{{name, "Fixed", "200", "True"}}, got[0].cells("NAME", "MODE", "CODE", "READY")); diff != "" {
		t.Errorf("kubectl get cdis %s (-want +got):\n%s", name, diff)
	}
	got = tables(kubectl(t, "", "get", "cdis", name, "-o", "wide"))
	if diff := cmp.Diff([]string{"NAME", "MODE", "CODE", "READY", "AGE", "FOLLOWERS", "BODY"}, got[0].header); diff != "" {
		t.Errorf("kubectl get cdis -o wide header (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]string{{name, "Selector", ""}}, got[0].cells("NAME", "FOLLOWERS", "BODY")); diff != "" {
		t.Errorf("kubectl get cdis %s -o wide (-want +got):\n%s", name, diff)
	}

	// The category lists the switches and states of the namespace, and
	// every cluster state, followed from there or not.
	out := kubectl(t, "", "get", "-n", ns, "dynamic")
	byKind := map[string]table{}
	for _, tb := range tables(out) {
		if len(tb.rows) > 0 {
			kind, _, _ := strings.Cut(tb.rows[0][0], "/")
			byKind[kind] = tb
		}
	}
	switches := []string{"NAME", "TARGET", "STATE", "STATEREF", "ACTIVE", "READY", "AGE"}
	for kind, want := range map[string]struct {
		header []string
		rows   [][]string
	}{
		"dynamicingress.ingress.dynamicingress.io": {switches, [][]string{
			{"dynamicingress.ingress.dynamicingress.io/follower", "follower", "", name, "False", "True"},
			{"dynamicingress.ingress.dynamicingress.io/local", "local", "own", "", "False", "True"},
		}},
		"dynamichttproute.ingress.dynamicingress.io": {switches, [][]string{
			{"dynamichttproute.ingress.dynamicingress.io/route", "route", "", name, "False", "True"},
		}},
		"dynamicingressstate.ingress.dynamicingress.io": {[]string{"NAME", "MODE", "CODE", "READY", "AGE"}, [][]string{
			{"dynamicingressstate.ingress.dynamicingress.io/own", "Fixed", "200", "True"},
		}},
	} {
		tb, ok := byKind[kind]
		if !ok {
			t.Errorf("kubectl get dynamic -n %s printed no table of %s:\n%s", ns, kind, out)
			continue
		}
		if diff := cmp.Diff(want.header, tb.header); diff != "" {
			t.Errorf("kubectl get dynamic: %s header (-want +got):\n%s", kind, diff)
		}
		if diff := cmp.Diff(want.rows, tb.cells(want.header[:len(want.header)-1]...)); diff != "" {
			t.Errorf("kubectl get dynamic: %s rows (-want +got):\n%s", kind, diff)
		}
	}
	cluster := byKind["clusterdynamicingressstate.ingress.dynamicingress.io"]
	if diff := cmp.Diff([]string{"NAME", "MODE", "CODE", "READY", "AGE"}, cluster.header); diff != "" {
		t.Errorf("kubectl get dynamic: clusterdynamicingressstate header (-want +got):\n%s", diff)
	}
	row := []string{"clusterdynamicingressstate.ingress.dynamicingress.io/" + name, "Fixed", "200", "True"}
	if !slices.ContainsFunc(cluster.cells("NAME", "MODE", "CODE", "READY"), func(r []string) bool { return slices.Equal(r, row) }) {
		t.Errorf("kubectl get dynamic -n %s:\n%s\nwant a row %v", ns, out, row)
	}
}

// TestClusterStateFlipsFollowersInAdmittedNamespaces: one edit of a
// cluster state switches its followers in every namespace its grant
// admits; a namespace that loses the label stops following it
// (StateNotAdmitted, its failurePolicy's mode), and follows it again once
// the label is back.
func TestClusterStateFlipsFollowersInAdmittedNamespaces(t *testing.T) {
	name, label, value := clusterState(t, "200")
	a := admittedNamespace(t, "cdis-a", label, value)
	b := admittedNamespace(t, "cdis-b", label, value)
	for _, ns := range []string{a, b} {
		apply(t, webIngress(ns, "site", "").ClusterState(name).ExpectCode("503").YAML())
		kubectl(t, "", "wait", "-n", ns, "--for=condition=Ready", "di/site", "--timeout=30s")
		if got := backend(t, ns, "site"); got != "web" {
			t.Errorf("Ingress %s/site sends to %q before the flip, want web", ns, got)
		}
	}

	kubectl(t, "", "patch", "cdis", name, "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"503"}}}`)
	for _, ns := range []string{a, b} {
		kubectl(t, "", "wait", "-n", ns, "--for=jsonpath={.spec.rules[0].http.paths[0].backend.service.name}=sorry", "ingress/site", "--timeout=30s")
		kubectl(t, "", "wait", "-n", ns, "--for=condition=Active", "di/site", "--timeout=30s")
	}
	if got := tables(kubectl(t, "", "get", "cdis", name))[0].cells("CODE"); !cmp.Equal(got, [][]string{{"503"}}) {
		t.Errorf("kubectl get cdis %s: CODE %v, want 503", name, got)
	}
	for _, ns := range []string{a, b} {
		got := tables(kubectl(t, "", "get", "-n", ns, "di", "site"))[0].cells("STATEREF", "ACTIVE", "READY")
		if diff := cmp.Diff([][]string{{name, "True", "True"}}, got); diff != "" {
			t.Errorf("kubectl get -n %s di site (-want +got):\n%s", ns, diff)
		}
	}

	kubectl(t, "", "label", "namespace", b, label+"-")
	kubectl(t, "", "wait", "-n", b, "--for=condition=Ready=False", "di/site", "--timeout=30s")
	kubectl(t, "", "wait", "-n", b, "--for=jsonpath={.spec.rules[0].http.paths[0].backend.service.name}=web", "ingress/site", "--timeout=30s")
	message := fmt.Sprintf(`ClusterDynamicIngressState %q does not admit namespace %q: its spec.followers.namespaces admits the namespaces whose labels match "%s=%s"`, name, b, label, value)
	// Both conditions say why; Active adds the mode the failurePolicy
	// (Passive, the default) selects meanwhile.
	for cond, then := range map[string]string{
		"Ready":  "the target follows the passive template",
		"Active": "spec.failurePolicy Passive selects passive mode",
	} {
		got := kubectl(t, "", "get", "-n", b, "di", "site", "-o", fmt.Sprintf(`jsonpath={.status.conditions[?(@.type==%q)].status} {.status.conditions[?(@.type==%q)].reason}: {.status.conditions[?(@.type==%q)].message}`, cond, cond, cond))
		if want := "False StateNotAdmitted: " + message + "; " + then; got != want {
			t.Errorf("di %s/site %s condition:\n%s\nwant:\n%s", b, cond, got, want)
		}
	}
	if got := backend(t, a, "site"); got != "sorry" {
		t.Errorf("Ingress %s/site sends to %q after %s lost its label, want sorry still", a, got, b)
	}

	kubectl(t, "", "label", "namespace", b, label+"="+value)
	kubectl(t, "", "wait", "-n", b, "--for=condition=Active", "di/site", "--timeout=30s")
	kubectl(t, "", "wait", "-n", b, "--for=condition=Ready", "di/site", "--timeout=30s")
	if got := backend(t, b, "site"); got != "sorry" {
		t.Errorf("Ingress %s/site sends to %q once its namespace is admitted again, want sorry", b, got)
	}

	kubectl(t, "", "patch", "cdis", name, "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"200"}}}`)
	for _, ns := range []string{a, b} {
		kubectl(t, "", "wait", "-n", ns, "--for=jsonpath={.spec.rules[0].http.paths[0].backend.service.name}=web", "ingress/site", "--timeout=30s")
	}
}

// TestClusterStateRefusesNotAdmittedNamespace: kubectl apply of a switch
// that follows a cluster state whose grant does not admit its namespace
// fails with one line naming the state and the grant, and creates nothing.
func TestClusterStateRefusesNotAdmittedNamespace(t *testing.T) {
	name, label, value := clusterState(t, "200")
	ns := newNamespace(t, "cdis-refused")
	grant := fmt.Sprintf(`ClusterDynamicIngressState %q does not admit namespace %q: its spec.followers.namespaces admits the namespaces whose labels match "%s=%s"`, name, ns, label, value)
	tests := []struct {
		object, manifest, stderr string
	}{
		{"di/site", webIngress(ns, "site", "").ClusterState(name).ExpectCode("503").YAML(),
			`The DynamicIngress "site" is invalid: spec.stateRef: Forbidden: ` + grant},
		{"dhr/route", webRoute(ns, "route", "").ClusterState(name).ExpectCode("503").YAML(),
			`The DynamicHTTPRoute "route" is invalid: spec.stateRef: Forbidden: ` + grant},
	}
	for _, tt := range tests {
		applyRefused(t, ns, tt.object, tt.manifest, tt.stderr)
	}

	// Once the namespace has the label, the same apply goes through.
	kubectl(t, "", "label", "namespace", ns, label+"="+value)
	for _, tt := range tests {
		apply(t, tt.manifest)
		kubectl(t, "", "wait", "-n", ns, "--for=condition=Ready", tt.object, "--timeout=30s")
	}
}

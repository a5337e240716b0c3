package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestEditUserCannotMakeTheManagerSendRequests: a user bound to the
// built-in edit role (the operator's switch and notifier editor roles
// aggregated into it) may create switches and change their templates, but
// kubectl apply --as that user of a switch with spec.served, of a change
// of its URL, or of a notifier's sink fails with one line naming the field
// and the permission it needs (docs/security.md); bound to the state
// editor role too, the same user may.
func TestEditUserCannotMakeTheManagerSendRequests(t *testing.T) {
	aggregateRole(t, "edit", "*_editor_role.yaml")
	ns := newNamespace(t, "request-permission")
	user := "editor-" + ns
	kubectl(t, "", "create", "rolebinding", "editor", "-n", ns, "--clusterrole=edit", "--user="+user)
	as := "--as=" + user
	waitCan(t, as, "create", "dynamicingresses.ingress.dynamicingress.io", ns, "yes")
	if out, _, _ := runKubectl("", "auth", "can-i", "create", "dynamicingressstates.ingress.dynamicingress.io", "-n", ns, as); strings.TrimSpace(out) != "no" {
		t.Fatalf("the edit role lets %s create dynamicingressstates: %q", user, out)
	}

	// A served URL on loopback where nothing listens: whatever the manager
	// requests there is refused at once.
	served := func(path string) *builders.ServedWrapper {
		return builders.Served("http://127.0.0.1:1/"+path, "503", "200").Timeout(5 * time.Second)
	}
	need := `needs permission to create dynamicingressstates in namespace "` + ns + `"`
	// applyAsRefused applies manifest as the user and wants it refused,
	// kubectl printing want (a create's one line), or a message that
	// contains it (a patch's, which kubectl wraps).
	applyAsRefused := func(object, manifest, want string, exact bool) {
		t.Helper()
		out, stderr, err := runKubectl(manifest, "apply", "-f", "-", as)
		got := strings.TrimSpace(stderr)
		if code := exitCode(t, err); code != 1 || exact && got != want || !strings.Contains(got, want) {
			t.Errorf("kubectl apply %s of %s: exit %d\n%s%s\nwant exit 1 and:\n%s", as, object, code, out, stderr, want)
		}
	}

	applyAsRefused("di/checked", webIngress(ns, "checked", "flag").ExpectCode("503").Served(served("a")).YAML(),
		`The DynamicIngress "checked" is invalid: spec.served: Forbidden: a served check makes the manager send requests; it `+need, true)
	applyAsRefused("dnotify/oncall", builders.Notifier(ns, "oncall", "http://127.0.0.1:1/hooks").State("flag").YAML(),
		`The DynamicIngressNotifier "oncall" is invalid: spec.sink: Forbidden: a notification sink makes the manager send requests; it `+need, true)

	// Made by an administrator, then edited by the user: a template yes,
	// the served URL no.
	apply(t, webIngress(ns, "site", "flag").ExpectCode("503").Served(served("a")).YAML())
	if out, stderr, err := runKubectl(webIngress(ns, "site", "flag").ExpectCode("503").Served(served("a")).
		Active(builders.IngressTo("site.example.com", "maintenance")).YAML(), "apply", "-f", "-", as); err != nil {
		t.Errorf("kubectl apply %s of a template change of di/site: %v\n%s%s", as, err, out, stderr)
	}
	applyAsRefused("di/site", webIngress(ns, "site", "flag").ExpectCode("503").Served(served("b")).YAML(),
		`spec.served: Forbidden: a served check makes the manager send requests; it `+need, false)

	// With the state editor role too, the same changes are accepted.
	kubectl(t, "", "create", "rolebinding", "state-editor", "-n", ns, "--clusterrole=dynamicingressstate-editor", "--user="+user)
	waitCan(t, as, "create", "dynamicingressstates.ingress.dynamicingress.io", ns, "yes")
	for _, manifest := range []string{
		webIngress(ns, "checked", "flag").ExpectCode("503").Served(served("a")).YAML(),
		builders.Notifier(ns, "oncall", "http://127.0.0.1:1/hooks").State("flag").YAML(),
		webIngress(ns, "site", "flag").ExpectCode("503").Served(served("b")).YAML(),
	} {
		if out, stderr, err := runKubectl(manifest, "apply", "-f", "-", as); err != nil {
			t.Errorf("kubectl apply %s with the state editor role: %v\n%s%s", as, err, out, stderr)
		}
	}
}

// waitCan waits until kubectl auth can-i verb resource -n ns, with the
// impersonation flag as, answers want (the authorizer sees a new binding a
// moment after it is made).
func waitCan(t *testing.T, as, verb, resource, ns, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _, _ := runKubectl("", "auth", "can-i", verb, resource, "-n", ns, as)
		if strings.TrimSpace(out) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubectl auth can-i %s %s -n %s %s: %q 30s after the binding, want %q", verb, resource, ns, as, out, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestIncidentPinWithApproval: three people with their own names and the
// shipped roles. alice (edit) pins the storefront live against the kill
// switch with `kubectl dynamic override --for --reason`; the kill
// switch's policy wants a second person for that, so the pin waits and
// the sorry page stays. alice cannot approve her own pin, carol (edit,
// without the approver role) may not approve at all; bob (edit and
// override-approver) approves with `kubectl dynamic approve`, and the
// storefront is live. carol reads it all with `kubectl dynamic status`
// and `history`. A change of the pin needs a new approval, and a pin
// with --for ends by itself.
func TestIncidentPinWithApproval(t *testing.T) {
	aggregateRole(t, "edit", "*_editor_role.yaml")
	aggregateRole(t, "view", "*_viewer_role.yaml")
	kubectl(t, "", "apply", "-f", filepath.Join(controlplane.RepoRoot(), "config", "rbac", "override_approver_role.yaml"))
	ns := newNamespace(t, "approval")
	for _, user := range []string{"alice", "bob", "carol"} {
		kubectl(t, "", "create", "rolebinding", user+"-edit", "-n", ns, "--clusterrole=edit", "--user="+user)
		kubectl(t, "", "create", "rolebinding", user+"-view", "-n", ns, "--clusterrole=view", "--user="+user)
	}
	kubectl(t, "", "create", "rolebinding", "bob-approver", "-n", ns, "--clusterrole=override-approver", "--user=bob")
	waitCan(t, "--as=bob", "approve", "dynamicingresses.ingress.dynamicingress.io", ns, "yes")
	waitCan(t, "--as=carol", "patch", "dynamicingresses.ingress.dynamicingress.io", ns, "yes")
	waitCan(t, "--as=carol", "get", "dynamicingressstates.ingress.dynamicingress.io", ns, "yes")
	if out, _, _ := runKubectl("", "auth", "can-i", "approve", "dynamicingresses.ingress.dynamicingress.io", "-n", ns, "--as=carol"); strings.TrimSpace(out) != "no" {
		t.Fatalf("the edit role lets carol approve: %q", out)
	}

	apply(t, builders.FixedState(ns, "killswitch", "503", "").RequireReason().ApprovalFor(v1beta1.ModePassive).YAML(),
		webIngress(ns, "storefront", "killswitch").ExpectCode("503").YAML())
	waitSwitchesReady(t, ns, "di")
	if got := backend(t, ns, "storefront"); got != "sorry" {
		t.Fatalf("the kill switch is on: backend %q, want sorry", got)
	}

	// alice pins the storefront live for an hour.
	out := plugin(t, "override", "-n", ns, "di/storefront", "passive", "--for", "1h", "--reason", "INC-7 checkout fixed", "--as=alice")
	if !strings.Contains(out, "it awaits approval by a second person (kubectl dynamic approve)") {
		t.Errorf("override as alice said:\n%s\nwant it to say the pin awaits approval", out)
	}
	waitForField(t, ns, "di", "storefront", "{.status.override.summary}", "Passive (PendingApproval)")
	waitForField(t, ns, "di", "storefront", `{.status.conditions[?(@.type=="Active")].reason}`, "Matched")
	if got := backend(t, ns, "storefront"); got != "sorry" {
		t.Errorf("a pin awaiting approval decided the target: backend %q, want sorry", got)
	}

	refused := func(user, want string) {
		t.Helper()
		out, stderr, code := runPlugin(t, "approve", "-n", ns, "di/storefront", "--as="+user)
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("kubectl dynamic approve as %s: exit %d\n%s%s\nwant exit 1 and %q", user, code, out, stderr, want)
		}
	}
	refused("alice", `Forbidden: "alice" set the pin and cannot approve it: a second person must (overridePolicy.approval of DynamicIngressState "killswitch")`)
	refused("carol", `Forbidden: "carol" may not approve the pin: it needs the verb approve on dynamicingresses in namespace "`+ns+`"`)

	out = plugin(t, "approve", "-n", ns, "di/storefront", "--as=bob")
	if want := `DynamicIngress "storefront": passive pinned by alice until `; !strings.HasPrefix(out, want) ||
		!strings.HasSuffix(strings.TrimSpace(out), `, approved by bob: INC-7 checkout fixed`) {
		t.Errorf("approve as bob said %q, want %q... approved by bob: INC-7 checkout fixed", out, want)
	}
	waitForField(t, ns, "di", "storefront", "{.status.override.approvedBy}/{.status.override.phase}", "bob/InEffect")
	waitForField(t, ns, "ingress", "storefront", "{.spec.rules[0].http.paths[0].backend.service.name}", "web")

	status := plugin(t, "status", "-n", ns, "killswitch", "--as=carol")
	if !strings.Contains(status, `DynamicIngress "storefront": passive pinned by alice until `) || !strings.Contains(status, "approved by bob: INC-7 checkout fixed") {
		t.Errorf("status as carol:\n%s\nwant the pin by alice, approved by bob", status)
	}
	history := plugin(t, "history", "-n", ns, "killswitch", "--as=carol")
	for _, want := range []string{"Pinned", `DynamicIngress "storefront": passive pin by alice approved by bob: INC-7 checkout fixed`} {
		if !strings.Contains(history, want) {
			t.Errorf("history as carol:\n%s\nwant %q", history, want)
		}
	}

	// alice shortens the pin: it needs a new approval, and ends by itself.
	plugin(t, "override", "-n", ns, "di/storefront", "passive", "--for", "8s", "--reason", "INC-7 checkout fixed", "--as=alice")
	waitForField(t, ns, "di", "storefront", "{.status.override.summary}", "Passive (PendingApproval)")
	waitForField(t, ns, "ingress", "storefront", "{.spec.rules[0].http.paths[0].backend.service.name}", "sorry")
	plugin(t, "approve", "-n", ns, "di/storefront", "--as=bob")
	waitForField(t, ns, "ingress", "storefront", "{.spec.rules[0].http.paths[0].backend.service.name}", "web")
	waitForField(t, ns, "di", "storefront", "{.status.override.phase}", "Expired")
	waitForField(t, ns, "ingress", "storefront", "{.spec.rules[0].http.paths[0].backend.service.name}", "sorry")
	history = plugin(t, "history", "-n", ns, "killswitch", "--as=carol")
	if !strings.Contains(history, "PinExpired") {
		t.Errorf("history as carol after the pin ended:\n%s\nwant PinExpired", history)
	}
}

package v1beta1_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	webhookv1beta1 "github.com/dynamicingress/dynamic-ingress-operator/internal/webhook/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestApprovalAdmission: through the API server and its authorizer, with
// impersonated users, a pin to a mode the state's overridePolicy.approval
// names is approved by a second person with the verb approve (the
// approval annotation then names them, whatever they wrote); its author,
// a user without the verb, a second approval, and an approval of a pin
// that needs none or of no pin are refused with the reason; a change of
// the pin removes the approval; the approval time cannot be edited.
func TestApprovalAdmission(t *testing.T) {
	ns := newNamespace(t)
	applyEditorRoles(t)
	state := builders.FixedState(ns, "killswitch", "200", "").Obj()
	state.Spec.OverridePolicy = &v1beta1.OverridePolicy{Approval: &v1beta1.OverrideApproval{Modes: []v1beta1.Mode{v1beta1.ModePassive}}}
	if err := k8s.Create(ctx, state); err != nil {
		t.Fatal(err)
	}
	alice := userClient(t, ns, "alice", "dynamicingress-editor")
	bob := userClient(t, ns, "bob", "dynamicingress-editor", "override-approver")
	carol := userClient(t, ns, "carol", "dynamicingress-editor")

	pinned := func(name string, mode v1beta1.Mode) *v1beta1.DynamicIngress {
		t.Helper()
		sw := builders.DynamicIngress(ns, name).State("killswitch").ExpectCode("503").
			Passive(builders.IngressTo(name+".example.com", "web")).Obj()
		if mode != "" {
			sw.Spec.Override = mode
			until := metav1.NewTime(time.Now().Add(time.Hour))
			sw.Spec.OverrideUntil = &until
			sw.Spec.OverrideReason = "INC-1"
		}
		if err := alice.Create(ctx, sw); err != nil {
			t.Fatal(err)
		}
		return sw
	}
	approve := func(c client.Client, name, value string) (*v1beta1.DynamicIngress, string) {
		t.Helper()
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{webhookv1beta1.OverrideApprovedByAnnotation: value}}})
		sw := &v1beta1.DynamicIngress{}
		sw.Namespace, sw.Name = ns, name
		if err := c.Patch(ctx, sw, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return nil, err.Error()
		}
		return sw, "<nil>"
	}
	const denied = `admission webhook "vdynamicingress.ingress.dynamicingress.io" denied the request: DynamicIngress.ingress.dynamicingress.io `
	const field = `metadata.annotations[ingress.dynamicingress.io/override-approved-by]: Forbidden: `

	pinned("storefront", v1beta1.ModePassive)
	pinned("live", v1beta1.ModeActive)
	pinned("unpinned", "")
	refusals := []struct {
		name string
		c    client.Client
		sw   string
		want string
	}{
		{"its author", alice, "storefront", denied + `"storefront" is invalid: ` + field +
			`"alice" set the pin and cannot approve it: a second person must (overridePolicy.approval of DynamicIngressState "killswitch")`},
		{"a user without the verb approve", carol, "storefront", denied + `"storefront" is invalid: ` + field +
			`"carol" may not approve the pin: it needs the verb approve on dynamicingresses in namespace "` + ns + `" (docs/security.md, "Who may approve a pin")`},
		{"a pin that needs no approval", bob, "live", denied + `"live" is invalid: ` + field +
			`the pin to Active mode needs no approval: no state the switch follows names Active in overridePolicy.approval.modes`},
		{"no pin", bob, "unpinned", denied + `"unpinned" is invalid: ` + field + `there is no pin to approve: spec.override is not set`},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			if _, got := approve(tt.c, tt.sw, "me"); got != tt.want {
				t.Errorf("(-want +got):\n%s", cmp.Diff(tt.want, got))
			}
		})
	}

	sw, err := approve(bob, "storefront", "someone-else")
	if err != "<nil>" {
		t.Fatalf("bob's approval: %s", err)
	}
	if got := sw.Annotations[webhookv1beta1.OverrideApprovedByAnnotation]; got != "bob" {
		t.Errorf("override-approved-by = %q after bob wrote someone-else, want bob", got)
	}
	if _, perr := time.Parse(v1beta1.OverrideAtFormat, sw.Annotations[webhookv1beta1.OverrideApprovedAtAnnotation]); perr != nil {
		t.Errorf("override-approved-at: %v", perr)
	}
	if _, got := approve(bob, "storefront", "again"); got != denied+`"storefront" is invalid: `+field+`the pin is approved already, by "bob"` {
		t.Errorf("a second approval: %s", got)
	}

	// An edit of the approval time alone, by anyone, is refused.
	patch := []byte(`{"metadata":{"annotations":{"` + webhookv1beta1.OverrideApprovedAtAnnotation + `":"2026-12-02T00:00:00.000000Z"}}}`)
	edited := &v1beta1.DynamicIngress{}
	edited.Namespace, edited.Name = ns, "storefront"
	wantEdit := denied + `"storefront" is invalid: metadata.annotations[ingress.dynamicingress.io/override-approved-at]: Forbidden: ` +
		`set by the admission webhook when a second person approves the pin (kubectl dynamic approve); it cannot be edited or removed otherwise: a change of the pin removes it`
	if err := k8s.Patch(ctx, edited, client.RawPatch(types.MergePatchType, patch)); err == nil || err.Error() != wantEdit {
		t.Errorf("editing override-approved-at: %v\nwant %s", err, wantEdit)
	}

	// A pinned switch that moves to a state with an approval policy makes
	// its pin anew: the audit moves, so the pin in effect under the state
	// without a policy does not carry over, and it needs an approval.
	open := builders.FixedState(ns, "open", "200", "").Obj()
	if err := k8s.Create(ctx, open); err != nil {
		t.Fatal(err)
	}
	moved := builders.DynamicIngress(ns, "moved").State("open").ExpectCode("503").Override(v1beta1.ModePassive).
		Passive(builders.IngressTo("moved.example.com", "web")).Obj()
	if err := alice.Create(ctx, moved); err != nil {
		t.Fatal(err)
	}
	if _, got := approve(bob, "moved", "me"); !strings.Contains(got, "needs no approval") {
		t.Errorf("approving a pin under a state without a policy: %s", got)
	}
	at := moved.Annotations[webhookv1beta1.OverrideAtAnnotation]
	time.Sleep(10 * time.Millisecond)
	beforeMove := moved.DeepCopy()
	moved.Spec.State = "killswitch"
	if err := alice.Patch(ctx, moved, client.MergeFrom(beforeMove)); err != nil {
		t.Fatal(err)
	}
	if moved.Annotations[webhookv1beta1.OverrideAtAnnotation] == at {
		t.Errorf("following another state while pinned left override-at at %s", at)
	}
	if _, got := approve(bob, "moved", "me"); got != "<nil>" {
		t.Errorf("approving the pin after the move to killswitch: %s", got)
	}

	// A change of the pin removes the approval.
	before := sw.DeepCopy()
	sw.Spec.OverrideReason = "INC-2"
	if err := alice.Patch(ctx, sw, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{webhookv1beta1.OverrideApprovedByAnnotation, webhookv1beta1.OverrideApprovedAtAnnotation} {
		if v, ok := sw.Annotations[key]; ok {
			t.Errorf("after the pin's reason changed, %s = %q, want none", key, v)
		}
	}
}

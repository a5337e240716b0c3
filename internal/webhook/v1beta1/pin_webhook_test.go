package v1beta1_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	webhookv1beta1 "github.com/dynamicingress/dynamic-ingress-operator/internal/webhook/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestPinAdmission: through the API server, overrideUntil without
// override and an overrideUntil in the past are refused with the field
// named; a pin to the future is stored; moving its end records the audit
// anew.
func TestPinAdmission(t *testing.T) {
	ns := newNamespace(t)
	pinned := func(name string) *builders.DynamicIngressWrapper {
		return builders.DynamicIngress(ns, name).State("flag").ExpectCode("503").
			Passive(builders.IngressTo(name+".example.com", "web"))
	}
	noOverride := pinned("no-override").OverrideUntil(time.Now().Add(time.Hour)).Obj()
	past := pinned("past").Override(v1beta1.ModeActive).OverrideUntil(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)).Obj()
	long := pinned("long").Override(v1beta1.ModeActive).OverrideReason(strings.Repeat("x", 257)).Obj()
	tests := []struct {
		name string
		obj  client.Object
		want string
	}{
		{"overrideUntil without override", noOverride,
			`DynamicIngress.ingress.dynamicingress.io "no-override" is invalid: spec.overrideUntil: Invalid value: overrideUntil requires override`},
		{"overrideUntil in the past", past,
			`admission webhook "vdynamicingress.ingress.dynamicingress.io" denied the request: DynamicIngress.ingress.dynamicingress.io "past" is invalid: ` +
				`spec.overrideUntil: Invalid value: "2026-01-02T03:04:05Z": must be in the future (now is NOW): a pin that ends before it starts pins nothing`},
		{"a reason over 256 characters", long,
			`DynamicIngress.ingress.dynamicingress.io "long" is invalid: [spec.overrideReason: Too long: may not be more than 256 bytes, ` +
				`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := k8s.Create(ctx, tt.obj)
			got := "<nil>"
			if err != nil {
				got = nowPattern(err.Error())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	sw := pinned("web").Override(v1beta1.ModeActive).OverrideUntil(time.Now().Add(time.Hour)).OverrideReason("INC-1").Obj()
	if err := k8s.Create(ctx, sw); err != nil {
		t.Fatal(err)
	}
	at := sw.Annotations[webhookv1beta1.OverrideAtAnnotation]
	time.Sleep(10 * time.Millisecond)
	later := metav1.NewTime(time.Now().Add(2 * time.Hour))
	before := sw.DeepCopy()
	sw.Spec.OverrideUntil = &later
	if err := k8s.Patch(ctx, sw, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	if sw.Annotations[webhookv1beta1.OverrideAtAnnotation] == at {
		t.Errorf("moving overrideUntil left override-at at %s", at)
	}
}

// nowPattern replaces the "now is ..." time of a message with NOW.
func nowPattern(msg string) string {
	const mark = "(now is "
	i := strings.Index(msg, mark)
	if i < 0 {
		return msg
	}
	j := strings.Index(msg[i:], ")")
	return msg[:i+len(mark)] + "NOW" + msg[i+j:]
}

// TestPinPolicyAdmission: a pin of a follower must keep to the override
// policy of the states it follows, the strictest of them with anyOf; the
// refusal names the state and its policy. A pin left alone is not checked
// again when the policy tightens.
func TestPinPolicyAdmission(t *testing.T) {
	ns := newNamespace(t)
	strict := builders.FixedState(ns, "killswitch", "200", "").Obj()
	strict.Spec.OverridePolicy = &v1beta1.OverridePolicy{MaxDuration: &metav1.Duration{Duration: 4 * time.Hour}}
	reasoned := builders.FixedState(ns, "window", "200", "").Obj()
	reasoned.Spec.OverridePolicy = &v1beta1.OverridePolicy{RequireReason: true, MaxDuration: &metav1.Duration{Duration: 24 * time.Hour}}
	for _, s := range []client.Object{strict, reasoned} {
		if err := k8s.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	single := func(name string) *builders.DynamicIngressWrapper {
		return builders.DynamicIngress(ns, name).State("killswitch").ExpectCode("503").
			Passive(builders.IngressTo(name+".example.com", "web")).Override(v1beta1.ModeActive)
	}
	both := single("both").Obj()
	both.Spec.State, both.Spec.Expected = "", v1beta1.ExpectedResponse{}
	both.Spec.AnyOf = []v1beta1.StateEntry{{Name: "kill", State: "killswitch", Expected: v1beta1.ExpectedResponse{StatusCode: "503"}},
		{Name: "window", State: "window", Expected: v1beta1.ExpectedResponse{StatusCode: "503"}}}
	const denied = `admission webhook "vdynamicingress.ingress.dynamicingress.io" denied the request: `
	tests := []struct {
		name string
		obj  client.Object
		want string
	}{
		{"a pin without an end", single("no-end").Obj(), denied + `DynamicIngress.ingress.dynamicingress.io "no-end" is invalid: ` +
			`spec.overrideUntil: Required value: DynamicIngressState "killswitch" has overridePolicy.maxDuration 4h: a pin must carry overrideUntil, at most 4h ahead`},
		{"a pin too long", single("too-long").OverrideUntil(time.Now().Add(5 * time.Hour)).Obj(), "too long"},
		{"within the policy", single("fine").OverrideUntil(time.Now().Add(time.Hour)).Obj(), "<nil>"},
		{"anyOf: the strictest of both", both, denied + `DynamicIngress.ingress.dynamicingress.io "both" is invalid: [` +
			`spec.overrideUntil: Required value: DynamicIngressState "killswitch" has overridePolicy.maxDuration 4h: a pin must carry overrideUntil, at most 4h ahead, ` +
			`spec.overrideReason: Required value: DynamicIngressState "window" has overridePolicy.requireReason: a pin must say why in overrideReason]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := k8s.Create(ctx, tt.obj)
			got := "<nil>"
			if err != nil {
				got = err.Error()
			}
			if tt.want == "too long" {
				if !strings.Contains(got, `spec.overrideUntil: Invalid value: "`) || !strings.Contains(got, `DynamicIngressState "killswitch" has overridePolicy.maxDuration 4h: a pin must end at most 4h ahead, by `) {
					t.Errorf("got %s, want spec.overrideUntil refused for the policy's 4h", got)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	// The policy tightens: the pin made before stays, and other edits of
	// the switch pass.
	before := strict.DeepCopy()
	strict.Spec.OverridePolicy.RequireReason = true
	if err := k8s.Patch(ctx, strict, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	fine := &v1beta1.DynamicIngress{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fine"}, fine); err != nil {
		t.Fatal(err)
	}
	old := fine.DeepCopy()
	fine.Spec.FailurePolicy = v1beta1.FailurePolicyRetain
	if err := k8s.Patch(ctx, fine, client.MergeFrom(old)); err != nil {
		t.Errorf("an edit of a switch whose pin predates the policy: %v", err)
	}
}

// TestOverridePolicyAdmission: a state's overridePolicy out of its bounds
// is refused through the API server with the field named: maxDuration
// outside 1m-720h, approval.modes empty or with an unknown mode, on both
// state kinds.
func TestOverridePolicyAdmission(t *testing.T) {
	ns := newNamespace(t)
	withPolicy := func(name string, policy v1beta1.OverridePolicy) client.Object {
		s := builders.FixedState(ns, name, "200", "").Obj()
		s.Spec.OverridePolicy = &policy
		return s
	}
	cluster := &v1beta1.ClusterDynamicIngressState{}
	cluster.Name = ns + "-cluster"
	cluster.Spec.FixedResponse = &v1beta1.FixedResponse{Status: "200"}
	cluster.Spec.Followers.Namespaces.From = v1beta1.NamespacesFromAll
	cluster.Spec.OverridePolicy = &v1beta1.OverridePolicy{Approval: &v1beta1.OverrideApproval{Modes: []v1beta1.Mode{"Live"}}}
	tests := []struct {
		name string
		obj  client.Object
		want string
	}{
		{"maxDuration under 1m", withPolicy("short", v1beta1.OverridePolicy{MaxDuration: &metav1.Duration{Duration: 30 * time.Second}}),
			`DynamicIngressState.ingress.dynamicingress.io "short" is invalid: spec.overridePolicy.maxDuration: Invalid value: "30s": must be at least 1m and at most 720h`},
		{"maxDuration over 720h", withPolicy("long", v1beta1.OverridePolicy{MaxDuration: &metav1.Duration{Duration: 721 * time.Hour}}),
			`DynamicIngressState.ingress.dynamicingress.io "long" is invalid: spec.overridePolicy.maxDuration: Invalid value: "721h0m0s": must be at least 1m and at most 720h`},
		{"no approval mode", withPolicy("none", v1beta1.OverridePolicy{Approval: &v1beta1.OverrideApproval{Modes: []v1beta1.Mode{}}}),
			`DynamicIngressState.ingress.dynamicingress.io "none" is invalid: spec.overridePolicy.approval.modes: Invalid value: 0: spec.overridePolicy.approval.modes in body should have at least 1 items`},
		{"an unknown mode, on a cluster state", cluster, `ClusterDynamicIngressState.ingress.dynamicingress.io "` + cluster.Name + `" is invalid: [` +
			`spec.overridePolicy.approval.modes[0]: Unsupported value: "Live": supported values: "Active", "Passive", ` +
			`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`},
		{"within bounds", withPolicy("fine", v1beta1.OverridePolicy{MaxDuration: &metav1.Duration{Duration: 4 * time.Hour}, RequireReason: true,
			Approval: &v1beta1.OverrideApproval{Modes: []v1beta1.Mode{v1beta1.ModePassive, v1beta1.ModeActive}}}), "<nil>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := k8s.Create(ctx, tt.obj)
			got := "<nil>"
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

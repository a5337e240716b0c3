package controller

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/event"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

func TestFollowedState(t *testing.T) {
	earlier := &metav1.MicroTime{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	seen := &metav1.MicroTime{Time: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}
	fixed := func(code, body string, status v1beta1.DynamicIngressStateStatus) *v1beta1.DynamicIngressState {
		s := builders.FixedState("ns", "flag", code, body).Obj()
		s.Status = status
		return s
	}
	probed := builders.ProbedState("ns", "flag", "http://192.0.2.1/").Obj()
	probed.Status = v1beta1.DynamicIngressStateStatus{StatusCode: "503", Body: "down", LastUpdateTime: earlier}
	tests := []struct {
		name  string
		state *v1beta1.DynamicIngressState
		// want is the status the switches decide from; same: state itself
		// is returned.
		want v1beta1.DynamicIngressStateStatus
		same bool
	}{
		{"missing state", nil, v1beta1.DynamicIngressStateStatus{}, true},
		{"probed state: its status", probed, probed.Status, true},
		{"fixed state whose status shows its spec", fixed("200", "ok", v1beta1.DynamicIngressStateStatus{StatusCode: "200", Body: "ok", LastUpdateTime: earlier}),
			v1beta1.DynamicIngressStateStatus{StatusCode: "200", Body: "ok", LastUpdateTime: earlier}, true},
		{"fixed state edited, status not written yet: the spec's response, seen when the edit was",
			fixed("200", "ok", v1beta1.DynamicIngressStateStatus{StatusCode: "503", Body: "ok", LastUpdateTime: earlier, Mode: v1beta1.StateModeFixed}),
			v1beta1.DynamicIngressStateStatus{StatusCode: "200", Body: "ok", Mode: v1beta1.StateModeFixed, LastUpdateTime: seen}, false},
		{"new fixed state without a status", fixed("503", "", v1beta1.DynamicIngressStateStatus{}),
			v1beta1.DynamicIngressStateStatus{StatusCode: "503", LastUpdateTime: seen}, false},
		{"probed state turned fixed", fixed("200", "", v1beta1.DynamicIngressStateStatus{StatusCode: "200", Body: "long", BodyTruncated: true, LastUpdateTime: earlier}),
			v1beta1.DynamicIngressStateStatus{StatusCode: "200", LastUpdateTime: seen}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before *v1beta1.DynamicIngressState
			if tt.state != nil {
				before = tt.state.DeepCopy()
			}
			got := decision.Followed(tt.state, seen)
			if tt.state == nil {
				if got != nil {
					t.Fatalf("decision.Followed(nil, seen) = %v, want nil", got)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got.Status); diff != "" {
				t.Errorf("status decided from (-want +got):\n%s", diff)
			}
			if (got == tt.state) != tt.same {
				t.Errorf("returned the state itself: %v, want %v", got == tt.state, tt.same)
			}
			if diff := cmp.Diff(before, tt.state); diff != "" {
				t.Errorf("the cached state was changed (-before +after):\n%s", diff)
			}
		})
	}
}

func TestFixedChanges(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f := newFixedChanges(clk)
	state := builders.FixedState("ns", "flag", "200", "").Obj()
	state.Status.StatusCode = "503"
	at := func() string {
		if t := f.at(state); t != nil {
			return t.UTC().Format(time.RFC3339)
		}
		return "unknown"
	}
	if got := at(); got != "unknown" {
		t.Errorf("before the watch delivered the edit: %s, want unknown", got)
	}
	f.note(state)
	clk.SetTime(clk.Now().Add(time.Minute))
	f.note(state) // the same edit delivered again (a resync) keeps the first sighting
	if got := at(); got != "2026-01-01T00:00:00Z" {
		t.Errorf("after the edit: %s, want when it was first seen", got)
	}
	state.Spec.FixedResponse.Status = "302"
	if got := at(); got != "unknown" {
		t.Errorf("another response than the one seen: %s, want unknown", got)
	}
	f.note(state)
	if got := at(); got != "2026-01-01T00:01:00Z" {
		t.Errorf("after the second edit: %s, want its own sighting", got)
	}
	state.Status.StatusCode = "302"
	f.note(state)
	if got := at(); got != "unknown" {
		t.Errorf("once the status shows it: %s, want unknown (the status's lastUpdateTime counts)", got)
	}
}

func TestResponseChangedFollowsFixedSpecs(t *testing.T) {
	withStatus := func(s *v1beta1.DynamicIngressState, code string) *v1beta1.DynamicIngressState {
		s.Status.StatusCode = code
		return s
	}
	tests := []struct {
		name        string
		old, new    *v1beta1.DynamicIngressState
		wantEnqueue bool
	}{
		{"fixed spec edited: enqueued at once",
			withStatus(builders.FixedState("ns", "s", "503", "").Obj(), "503"), withStatus(builders.FixedState("ns", "s", "200", "").Obj(), "503"), true},
		{"the fixed state's status catching up: not again",
			withStatus(builders.FixedState("ns", "s", "200", "").Obj(), "503"), withStatus(builders.FixedState("ns", "s", "200", "").Obj(), "200"), false},
		{"probed state's status changed",
			withStatus(builders.ProbedState("ns", "s", "http://192.0.2.1/").Obj(), "503"), withStatus(builders.ProbedState("ns", "s", "http://192.0.2.1/").Obj(), "200"), true},
		{"probed state's spec changed alone",
			withStatus(builders.ProbedState("ns", "s", "http://192.0.2.1/").Obj(), "200"), withStatus(builders.ProbedState("ns", "s", "http://192.0.2.2/").Obj(), "200"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := responseChanged().Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new}); got != tt.wantEnqueue {
				t.Errorf("responseChanged = %v, want %v", got, tt.wantEnqueue)
			}
		})
	}
}

func TestCacheTransforms(t *testing.T) {
	entry := func(manager string, op metav1.ManagedFieldsOperationType) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}
	}
	ours := entry(v1beta1.FieldOwner, metav1.ManagedFieldsOperationApply)
	oursCreate := entry(v1beta1.FieldOwner, metav1.ManagedFieldsOperationUpdate)
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{"a": "b"},
			ManagedFields: []metav1.ManagedFieldsEntry{ours, entry("ingress-controller", metav1.ManagedFieldsOperationUpdate), oursCreate}},
		Spec:   networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web"}}},
		Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.9"}}}},
	}
	want := ing.DeepCopy()
	want.ManagedFields = []metav1.ManagedFieldsEntry{ours, oursCreate}
	want.Status = networkingv1.IngressStatus{}
	got, _ := stripTarget(ing)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stripTarget(Ingress) (-want +got):\n%s", diff)
	}
	accepted := metav1.Condition{Type: "Accepted", Status: "True", ObservedGeneration: 3, Reason: "Accepted", Message: "fine", LastTransitionTime: metav1.Now()}
	resolved := metav1.Condition{Type: "ResolvedRefs", Status: "True", Reason: "ResolvedRefs"}
	route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{entry("gateway", metav1.ManagedFieldsOperationUpdate)}},
		Status: gatewayv1.HTTPRouteStatus{RouteStatus: gatewayv1.RouteStatus{Parents: []gatewayv1.RouteParentStatus{{ControllerName: "x",
			ParentRef: gatewayv1.ParentReference{Name: "gw"}, Conditions: []metav1.Condition{resolved, accepted}}}}}}
	got, _ = stripTarget(route)
	wantParents := []gatewayv1.RouteParentStatus{{ControllerName: "x", ParentRef: gatewayv1.ParentReference{Name: "gw"},
		Conditions: []metav1.Condition{{Type: "Accepted", Status: "True", ObservedGeneration: 3, Reason: "Accepted"}}}}
	if r := got.(*gatewayv1.HTTPRoute); len(r.ManagedFields) != 0 || !cmp.Equal(wantParents, r.Status.Parents) {
		t.Errorf("stripTarget(HTTPRoute) kept %v and %v, want no managedFields and each parent's Accepted condition only", r.ManagedFields, r.Status)
	}

	di := builders.DynamicIngress("ns", "web").Obj()
	di.Annotations = map[string]string{lastAppliedAnnotation: `{"a whole":"copy"}`, "team": "web"}
	di.ManagedFields = []metav1.ManagedFieldsEntry{entry("kubectl", metav1.ManagedFieldsOperationUpdate)}
	di.Status.Conditions = []metav1.Condition{{Type: v1beta1.ConditionActive, Status: metav1.ConditionTrue}}
	wantDI := di.DeepCopy()
	wantDI.ManagedFields = nil
	wantDI.Annotations = map[string]string{"team": "web"}
	got, _ = stripSwitch(di)
	if diff := cmp.Diff(wantDI, got); diff != "" {
		t.Errorf("stripSwitch(DynamicIngress) (-want +got):\n%s", diff)
	}
}

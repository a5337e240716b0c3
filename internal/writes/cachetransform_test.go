package writes

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

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
	got, _ := StripTarget(ing)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stripTarget(Ingress) (-want +got):\n%s", diff)
	}
	accepted := metav1.Condition{Type: "Accepted", Status: "True", ObservedGeneration: 3, Reason: "Accepted", Message: "fine", LastTransitionTime: metav1.Now()}
	resolved := metav1.Condition{Type: "ResolvedRefs", Status: "True", Reason: "ResolvedRefs"}
	route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{entry("gateway", metav1.ManagedFieldsOperationUpdate)}},
		Status: gatewayv1.HTTPRouteStatus{RouteStatus: gatewayv1.RouteStatus{Parents: []gatewayv1.RouteParentStatus{{ControllerName: "x",
			ParentRef: gatewayv1.ParentReference{Name: "gw"}, Conditions: []metav1.Condition{resolved, accepted}}}}}}
	got, _ = StripTarget(route)
	wantParents := []gatewayv1.RouteParentStatus{{ControllerName: "x", ParentRef: gatewayv1.ParentReference{Name: "gw"},
		Conditions: []metav1.Condition{{Type: "Accepted", Status: "True", ObservedGeneration: 3, Reason: "Accepted"}}}}
	if r := got.(*gatewayv1.HTTPRoute); len(r.ManagedFields) != 0 || !cmp.Equal(wantParents, r.Status.Parents) {
		t.Errorf("stripTarget(HTTPRoute) kept %v and %v, want no managedFields and each parent's Accepted condition only", r.ManagedFields, r.Status)
	}

	di := builders.DynamicIngress("ns", "web").Obj()
	di.Annotations = map[string]string{LastAppliedAnnotation: `{"a whole":"copy"}`, "team": "web"}
	di.ManagedFields = []metav1.ManagedFieldsEntry{entry("kubectl", metav1.ManagedFieldsOperationUpdate)}
	di.Status.Conditions = []metav1.Condition{{Type: v1beta1.ConditionActive, Status: metav1.ConditionTrue}}
	wantDI := di.DeepCopy()
	wantDI.ManagedFields = nil
	wantDI.Annotations = map[string]string{"team": "web"}
	got, _ = StripSwitch(di)
	if diff := cmp.Diff(wantDI, got); diff != "" {
		t.Errorf("stripSwitch(DynamicIngress) (-want +got):\n%s", diff)
	}
}

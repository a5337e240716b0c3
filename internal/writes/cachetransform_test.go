package writes

import (
	"reflect"
	"runtime"
	"testing"
	"unsafe"

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

// TestCacheTransformsShare: two targets, decoded apart, keep one copy of
// the strings they hold alike and one labels map for equal labels; two
// switches one copy of their conditions' strings and one map for equal
// template annotations.
// The values are the same (TestCacheTransforms).
func TestCacheTransformsShare(t *testing.T) {
	// fresh is a copy of s in memory of its own, as a decoder makes it.
	fresh := func(s string) string { return string([]byte(s)) }
	target := func(name string) *networkingv1.Ingress {
		return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fresh("shop"),
			Labels:          map[string]string{fresh(v1beta1.LabelManagedBy): fresh(v1beta1.ManagedByValue)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: fresh("ingress.dynamicingress.io/v1beta1"), Kind: fresh("DynamicIngress"), Name: name}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: fresh(v1beta1.FieldOwner), Operation: metav1.ManagedFieldsOperationType(fresh("Apply")),
				APIVersion: fresh("networking.k8s.io/v1"), FieldsType: fresh("FieldsV1")}}}}
	}
	a, b := target("a"), target("b")
	_, _ = StripTarget(a)
	// A collection between two objects: the shared copy must outlive it.
	runtime.GC()
	_, _ = StripTarget(b)
	same := func(what, x, y string) {
		t.Helper()
		if unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: two copies of %q", what, x)
		}
	}
	same("namespace", a.Namespace, b.Namespace)
	same("owner apiVersion", a.OwnerReferences[0].APIVersion, b.OwnerReferences[0].APIVersion)
	same("owner kind", a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind)
	same("field manager", a.ManagedFields[0].Manager, b.ManagedFields[0].Manager)
	same("managed fields apiVersion", a.ManagedFields[0].APIVersion, b.ManagedFields[0].APIVersion)
	same("managed fields operation", string(a.ManagedFields[0].Operation), string(b.ManagedFields[0].Operation))
	if reflect.ValueOf(a.Labels).UnsafePointer() != reflect.ValueOf(b.Labels).UnsafePointer() {
		t.Error("two labels maps of the operator's label alone")
	}
	c := target("c")
	c.Labels["team"] = "web"
	_, _ = StripTarget(c)
	if reflect.ValueOf(c.Labels).UnsafePointer() == reflect.ValueOf(a.Labels).UnsafePointer() || len(c.Labels) != 2 {
		t.Errorf("a target with labels of its own lost them: %v", c.Labels)
	}

	sw := func(name string) *v1beta1.DynamicIngress {
		di := builders.DynamicIngress(fresh("shop"), name).Obj()
		di.Status.Conditions = []metav1.Condition{{Type: fresh(v1beta1.ConditionActive), Status: metav1.ConditionStatus(fresh("True")), Reason: fresh("StateActive")}}
		return di
	}
	x, y := sw("x"), sw("y")
	for _, d := range []*v1beta1.DynamicIngress{x, y} {
		d.Spec.ActiveIngress = &v1beta1.IngressVariant{Template: v1beta1.IngressTemplate{Metadata: v1beta1.TemplateMetadata{
			Annotations: map[string]string{fresh("nginx.ingress.kubernetes.io/permanent-redirect"): fresh("https://sorry.example.com")}}}}
	}
	_, _ = StripSwitch(x)
	_, _ = StripSwitch(y)
	if reflect.ValueOf(x.Spec.ActiveIngress.Template.Metadata.Annotations).UnsafePointer() != reflect.ValueOf(y.Spec.ActiveIngress.Template.Metadata.Annotations).UnsafePointer() {
		t.Error("two equal template annotation maps kept apart")
	}
	if got := x.Spec.ActiveIngress.Template.Metadata.Annotations["nginx.ingress.kubernetes.io/permanent-redirect"]; got != "https://sorry.example.com" {
		t.Errorf("a shared template annotation reads %q", got)
	}
	same("switch namespace", x.Namespace, y.Namespace)
	same("condition type", x.Status.Conditions[0].Type, y.Status.Conditions[0].Type)
	same("condition status", string(x.Status.Conditions[0].Status), string(y.Status.Conditions[0].Status))
	same("condition reason", x.Status.Conditions[0].Reason, y.Status.Conditions[0].Reason)
}

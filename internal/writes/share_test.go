package writes

import (
	"maps"
	"reflect"
	"runtime"
	"testing"
	"unsafe"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

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

// TestShareMapComparesContent: two maps whose keys and values run
// together alike (an annotation's value may hold a NUL) are not shared.
func TestShareMapComparesContent(t *testing.T) {
	first := shareMap(map[string]string{"x.example.com/a": "b\x00x.example.com/c\x00d"})
	second := map[string]string{"x.example.com/a": "b", "x.example.com/c": "d"}
	if got := shareMap(second); !maps.Equal(got, second) {
		t.Errorf("shareMap(%q) = %q: another map's content (%q)", second, got, first)
	}
}

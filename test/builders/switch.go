package builders

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// DynamicIngressWrapper builds a v1beta1.DynamicIngress.
type DynamicIngressWrapper struct {
	v1beta1.DynamicIngress
}

// DynamicIngress starts a DynamicIngress ns/name whose target is an Ingress
// of the same name; it has no state, expectation nor shapes yet.
func DynamicIngress(ns, name string) *DynamicIngressWrapper {
	return &DynamicIngressWrapper{v1beta1.DynamicIngress{
		ObjectMeta: objectMeta(ns, name),
		Spec:       v1beta1.DynamicIngressSpec{Target: v1beta1.TargetReference{Name: name}},
	}}
}

// Obj returns the DynamicIngress built so far (not a copy).
func (w *DynamicIngressWrapper) Obj() *v1beta1.DynamicIngress { return &w.DynamicIngress }

// YAML renders the DynamicIngress, with apiVersion and kind, for kubectl.
func (w *DynamicIngressWrapper) YAML() string {
	obj := w.DeepCopy()
	obj.TypeMeta = typeMeta("DynamicIngress")
	return toYAML(obj)
}

// Target names the Ingress the DynamicIngress manages.
func (w *DynamicIngressWrapper) Target(name string) *DynamicIngressWrapper {
	w.Spec.Target.Name = name
	return w
}

// State names the DynamicIngressState the DynamicIngress follows.
func (w *DynamicIngressWrapper) State(name string) *DynamicIngressWrapper {
	w.Spec.State = name
	return w
}

// ClusterState makes the DynamicIngress follow the ClusterDynamicIngressState name
// (spec.stateRef) instead of a DynamicIngressState.
func (w *DynamicIngressWrapper) ClusterState(name string) *DynamicIngressWrapper {
	w.Spec.State = ""
	w.Spec.StateRef = &v1beta1.StateReference{Kind: v1beta1.StateKindCluster, Name: name}
	return w
}

// ExpectCode sets the status code that selects active mode.
func (w *DynamicIngressWrapper) ExpectCode(code string) *DynamicIngressWrapper {
	w.Spec.Expected.StatusCode = code
	return w
}

// ExpectBody sets the body that selects active mode.
func (w *DynamicIngressWrapper) ExpectBody(body string) *DynamicIngressWrapper {
	w.Spec.Expected.Body = ptr.To(body)
	return w
}

// BodyMatch sets how the expected body is compared.
func (w *DynamicIngressWrapper) BodyMatch(m v1beta1.BodyMatch) *DynamicIngressWrapper {
	w.Spec.Expected.BodyMatch = m
	return w
}

// Expression sets the CEL expression that selects active mode.
func (w *DynamicIngressWrapper) Expression(cel string) *DynamicIngressWrapper {
	w.Spec.Expected.Expression = cel
	return w
}

// FailurePolicy sets the mode taken when the state has no response.
func (w *DynamicIngressWrapper) FailurePolicy(p v1beta1.FailurePolicy) *DynamicIngressWrapper {
	w.Spec.FailurePolicy = p
	return w
}

// Override pins the DynamicIngress to a mode whatever the state says.
func (w *DynamicIngressWrapper) Override(m v1beta1.Mode) *DynamicIngressWrapper {
	w.Spec.Override = m
	return w
}

// OverrideUntil ends the pin at until.
func (w *DynamicIngressWrapper) OverrideUntil(until time.Time) *DynamicIngressWrapper {
	w.Spec.OverrideUntil = &metav1.Time{Time: until}
	return w
}

// OverrideReason sets why the DynamicIngress is pinned.
func (w *DynamicIngressWrapper) OverrideReason(reason string) *DynamicIngressWrapper {
	w.Spec.OverrideReason = reason
	return w
}

// Passive sets the passive shape; nil removes it. The DynamicIngress
// shares the shape's variant, so later changes to the shape show in it.
func (w *DynamicIngressWrapper) Passive(s *IngressShape) *DynamicIngressWrapper {
	w.Spec.PassiveIngress = s.Obj()
	return w
}

// Active sets the active shape; nil removes it. The DynamicIngress
// shares the shape's variant, so later changes to the shape show in it.
func (w *DynamicIngressWrapper) Active(s *IngressShape) *DynamicIngressWrapper {
	w.Spec.ActiveIngress = s.Obj()
	return w
}

// DynamicHTTPRouteWrapper builds a v1beta1.DynamicHTTPRoute.
type DynamicHTTPRouteWrapper struct {
	v1beta1.DynamicHTTPRoute
}

// DynamicHTTPRoute starts a DynamicHTTPRoute ns/name whose target is an
// HTTPRoute of the same name; it has no state, expectation nor shapes yet.
func DynamicHTTPRoute(ns, name string) *DynamicHTTPRouteWrapper {
	return &DynamicHTTPRouteWrapper{v1beta1.DynamicHTTPRoute{
		ObjectMeta: objectMeta(ns, name),
		Spec:       v1beta1.DynamicHTTPRouteSpec{Target: v1beta1.TargetReference{Name: name}},
	}}
}

// Obj returns the DynamicHTTPRoute built so far (not a copy).
func (w *DynamicHTTPRouteWrapper) Obj() *v1beta1.DynamicHTTPRoute { return &w.DynamicHTTPRoute }

// YAML renders the DynamicHTTPRoute, with apiVersion and kind, for kubectl.
func (w *DynamicHTTPRouteWrapper) YAML() string {
	obj := w.DeepCopy()
	obj.TypeMeta = typeMeta("DynamicHTTPRoute")
	return toYAML(obj)
}

// Target names the HTTPRoute the DynamicHTTPRoute manages.
func (w *DynamicHTTPRouteWrapper) Target(name string) *DynamicHTTPRouteWrapper {
	w.Spec.Target.Name = name
	return w
}

// State names the DynamicIngressState the DynamicHTTPRoute follows.
func (w *DynamicHTTPRouteWrapper) State(name string) *DynamicHTTPRouteWrapper {
	w.Spec.State = name
	return w
}

// ClusterState makes the DynamicHTTPRoute follow the ClusterDynamicIngressState name
// (spec.stateRef) instead of a DynamicIngressState.
func (w *DynamicHTTPRouteWrapper) ClusterState(name string) *DynamicHTTPRouteWrapper {
	w.Spec.State = ""
	w.Spec.StateRef = &v1beta1.StateReference{Kind: v1beta1.StateKindCluster, Name: name}
	return w
}

// ExpectCode sets the status code that selects active mode.
func (w *DynamicHTTPRouteWrapper) ExpectCode(code string) *DynamicHTTPRouteWrapper {
	w.Spec.Expected.StatusCode = code
	return w
}

// ExpectBody sets the body that selects active mode.
func (w *DynamicHTTPRouteWrapper) ExpectBody(body string) *DynamicHTTPRouteWrapper {
	w.Spec.Expected.Body = ptr.To(body)
	return w
}

// BodyMatch sets how the expected body is compared.
func (w *DynamicHTTPRouteWrapper) BodyMatch(m v1beta1.BodyMatch) *DynamicHTTPRouteWrapper {
	w.Spec.Expected.BodyMatch = m
	return w
}

// Expression sets the CEL expression that selects active mode.
func (w *DynamicHTTPRouteWrapper) Expression(cel string) *DynamicHTTPRouteWrapper {
	w.Spec.Expected.Expression = cel
	return w
}

// FailurePolicy sets the mode taken when the state has no response.
func (w *DynamicHTTPRouteWrapper) FailurePolicy(p v1beta1.FailurePolicy) *DynamicHTTPRouteWrapper {
	w.Spec.FailurePolicy = p
	return w
}

// Override pins the DynamicHTTPRoute to a mode whatever the state says.
func (w *DynamicHTTPRouteWrapper) Override(m v1beta1.Mode) *DynamicHTTPRouteWrapper {
	w.Spec.Override = m
	return w
}

// Passive sets the passive shape; nil removes it. The DynamicHTTPRoute
// shares the shape's variant, so later changes to the shape show in it.
func (w *DynamicHTTPRouteWrapper) Passive(s *HTTPRouteShape) *DynamicHTTPRouteWrapper {
	w.Spec.PassiveRoute = s.Obj()
	return w
}

// Active sets the active shape; nil removes it. The DynamicHTTPRoute
// shares the shape's variant, so later changes to the shape show in it.
func (w *DynamicHTTPRouteWrapper) Active(s *HTTPRouteShape) *DynamicHTTPRouteWrapper {
	w.Spec.ActiveRoute = s.Obj()
	return w
}

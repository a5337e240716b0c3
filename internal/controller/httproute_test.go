package controller_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// routeTo is an HTTPRoute shape for host, attached to the Gateway "public",
// sending everything to service.
func routeTo(host, service string) *v1beta1.HTTPRouteVariant {
	return &v1beta1.HTTPRouteVariant{Template: v1beta1.HTTPRouteTemplate{
		Metadata: v1beta1.TemplateMetadata{Labels: map[string]string{"app": service}},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "public"}}},
			Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(host)},
			Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
				BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(service), Port: ptr.To(gatewayv1.PortNumber(80))},
			}}}}},
		},
	}}
}

// redirectToSorryPage is an HTTPRoute shape that redirects every request
// for host to the status page.
func redirectToSorryPage(host string) *v1beta1.HTTPRouteVariant {
	return &v1beta1.HTTPRouteVariant{Template: v1beta1.HTTPRouteTemplate{
		Metadata: v1beta1.TemplateMetadata{Annotations: map[string]string{"example.com/mode": "sorry"}},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "public"}}},
			Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(host)},
			Rules: []gatewayv1.HTTPRouteRule{{Filters: []gatewayv1.HTTPRouteFilter{{
				Type: gatewayv1.HTTPRouteFilterRequestRedirect,
				RequestRedirect: &gatewayv1.HTTPRequestRedirectFilter{
					Hostname: ptr.To(gatewayv1.PreciseHostname("status.example.com")), StatusCode: ptr.To(302)},
			}}}},
		},
	}}
}

func dynamicHTTPRoute(ns, name, state, expectCode string, passive, active *v1beta1.HTTPRouteVariant) *v1beta1.DynamicHTTPRoute {
	return &v1beta1.DynamicHTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1beta1.DynamicHTTPRouteSpec{
			Target: v1beta1.TargetReference{Name: name}, PassiveRoute: passive, ActiveRoute: active,
			State: state, Expected: v1beta1.ExpectedResponse{StatusCode: expectCode},
		},
	}
}

// routeOf reads an HTTPRoute from the API server; nil when it does not exist.
func routeOf(t *testing.T, ns, name string) func() *gatewayv1.HTTPRoute {
	return func() *gatewayv1.HTTPRoute {
		r := &gatewayv1.HTTPRoute{}
		err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, r)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			t.Fatalf("reading HTTPRoute %s/%s: %v", ns, name, err)
		}
		return r
	}
}

// routeShape is "redirect" when the route's first rule redirects, else the
// first rule's backend, "<none>" when the route does not exist.
func routeShape(t *testing.T, ns, name string) func() string {
	return func() string {
		r := routeOf(t, ns, name)()
		switch {
		case r == nil:
			return "<none>"
		case len(r.Spec.Rules) == 0:
			return "<no rules>"
		case len(r.Spec.Rules[0].Filters) > 0 && r.Spec.Rules[0].Filters[0].RequestRedirect != nil:
			return "redirect"
		case len(r.Spec.Rules[0].BackendRefs) > 0:
			return string(r.Spec.Rules[0].BackendRefs[0].Name)
		}
		return "<empty rule>"
	}
}

// TestDynamicHTTPRouteSwitches drives a DynamicHTTPRoute through its
// conditions: the RequestRedirect to the sorry page comes with the active
// mode and goes with the passive one, while a label another controller set
// and the route's status survive; with no passive template the route goes.
func TestDynamicHTTPRouteSwitches(t *testing.T) {
	ns := newNamespace(t)
	state := fixedState(ns, "killswitch", "200", "")
	dhr := dynamicHTTPRoute(ns, "storefront", "killswitch", "503", routeTo("shop.example.com", "storefront"), redirectToSorryPage("shop.example.com"))
	create(t, state, dhr)
	eventually(t, conditionOf(dhr, v1beta1.ConditionReady)).Should(Equal("True/Synced"))
	NewWithT(t).Expect(conditionOf(dhr, v1beta1.ConditionActive)()).To(Equal("False/NotMatched"))
	eventually(t, routeShape(t, ns, "storefront")).Should(Equal("storefront"))
	route := routeOf(t, ns, "storefront")()
	if !metav1.IsControlledBy(route, dhr) || route.Labels[v1beta1.LabelManagedBy] != v1beta1.ManagedByValue {
		t.Fatalf("the HTTPRoute is not ours: owners %v, labels %v", route.OwnerReferences, route.Labels)
	}

	// Another controller labels the route and a Gateway reports on it.
	patch := client.MergeFrom(route.DeepCopy())
	route.Labels["gateway.example.com/accepted"] = "true"
	if err := k8s.Patch(ctx, route, patch, client.FieldOwner("gateway-controller")); err != nil {
		t.Fatal(err)
	}
	route.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: gatewayv1.ParentReference{Name: "public"},
		ControllerName: "example.com/gateway", Conditions: []metav1.Condition{{Type: "Accepted", Status: "True", Reason: "Accepted", LastTransitionTime: metav1.Now()}}}}
	if err := k8s.Status().Update(ctx, route, client.FieldOwner("gateway-controller")); err != nil {
		t.Fatal(err)
	}

	setFixedStatus(t, state, "503")
	eventually(t, conditionOf(dhr, v1beta1.ConditionActive)).Should(Equal("True/Matched"))
	eventually(t, routeShape(t, ns, "storefront")).Should(Equal("redirect"))
	route = routeOf(t, ns, "storefront")()
	if route.Annotations["example.com/mode"] != "sorry" || route.Labels["app"] != "" {
		t.Errorf("active route: annotations %v, labels %v; want the sorry annotation and no app label", route.Annotations, route.Labels)
	}

	setFixedStatus(t, state, "200")
	eventually(t, routeShape(t, ns, "storefront")).Should(Equal("storefront"))
	route = routeOf(t, ns, "storefront")()
	if _, ok := route.Annotations["example.com/mode"]; ok {
		t.Error("the active template's annotation survived the switch back")
	}
	if route.Labels["gateway.example.com/accepted"] != "true" || len(route.Status.Parents) != 1 {
		t.Errorf("what the Gateway set is gone: labels %v, status %v", route.Labels, route.Status.Parents)
	}
	eventually(t, eventReasons(ns, "storefront")).Should(ContainElement("Switched"))
}

// TestUnownedHTTPRouteIsLeftAlone: an HTTPRoute of someone else at the
// target name is never changed.
func TestUnownedHTTPRouteIsLeftAlone(t *testing.T) {
	ns := newNamespace(t)
	theirs := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"}, Spec: routeTo("taken.example.com", "theirs").Template.Spec}
	create(t, theirs, fixedState(ns, "flag", "503", ""))
	before := routeOf(t, ns, "taken")()
	dhr := dynamicHTTPRoute(ns, "taken", "flag", "503", nil, redirectToSorryPage("taken.example.com"))
	create(t, dhr)
	eventually(t, conditionOf(dhr, v1beta1.ConditionReady)).Should(Equal("False/TargetConflict"))
	eventually(t, eventReasons(ns, "taken")).Should(ContainElement("TargetConflict"))
	if diff := cmp.Diff(before, routeOf(t, ns, "taken")()); diff != "" {
		t.Errorf("the unowned HTTPRoute changed (-before +after):\n%s", diff)
	}
}

// TestOneStateDrivesIngressesAndRoutes: a kill switch flips Ingresses and
// HTTPRoutes together, and a change nobody compares writes nothing to them.
func TestOneStateDrivesIngressesAndRoutes(t *testing.T) {
	ns := newNamespace(t)
	state := fixedState(ns, "killswitch", "200", "off")
	create(t, state)
	for _, name := range []string{"a", "b"} {
		create(t, dynamicIngress(ns, "ing-"+name, "killswitch", "503", variant(name+".example.com", "web", nil), variant(name+".example.com", "sorry", nil)),
			dynamicHTTPRoute(ns, "route-"+name, "killswitch", "503", routeTo(name+".example.com", "web"), redirectToSorryPage(name+".example.com")))
	}
	for _, name := range []string{"a", "b"} {
		eventually(t, backendOf(t, ns, "ing-"+name)).Should(Equal("web"))
		eventually(t, routeShape(t, ns, "route-"+name)).Should(Equal("web"))
	}
	setFixedStatus(t, state, "503")
	for _, name := range []string{"a", "b"} {
		eventually(t, backendOf(t, ns, "ing-"+name)).Should(Equal("sorry"))
		eventually(t, routeShape(t, ns, "route-"+name)).Should(Equal("redirect"))
	}

	// Converged: a body nobody compares makes every switch reconcile, and
	// the targets, whose schema defaults the server filled in, are left as
	// they are.
	eventually(t, func() int64 {
		before := writesTo(ns, "httproutes") + writesTo(ns, "ingresses")
		time.Sleep(time.Second)
		return writesTo(ns, "httproutes") + writesTo(ns, "ingresses") - before
	}).Should(BeZero())
	before := writesTo(ns, "httproutes") + writesTo(ns, "ingresses")
	setFixedBody(t, state, "still on")
	eventually(t, stateStatus(state)).Should(Equal(`503 "still on"`))
	time.Sleep(2 * time.Second)
	if got := writesTo(ns, "httproutes") + writesTo(ns, "ingresses") - before; got != 0 {
		t.Errorf("%d writes to up-to-date targets after a change nobody compares, want 0", got)
	}
}

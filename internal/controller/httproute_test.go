package controller_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

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
	state := builders.FixedState(ns, "killswitch", "200", "").Obj()
	dhr := builders.DynamicHTTPRoute(ns, "storefront").State("killswitch").ExpectCode("503").
		Passive(builders.RouteTo("shop.example.com", "storefront").Label("app", "storefront")).
		Active(builders.RedirectTo("shop.example.com", "status.example.com").Annotation("example.com/mode", "sorry")).Obj()
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
	patch = client.MergeFrom(route.DeepCopy())
	route.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: gatewayv1.ParentReference{Name: "public"},
		ControllerName: "example.com/gateway", Conditions: []metav1.Condition{{Type: "Accepted", Status: "True", Reason: "Accepted", LastTransitionTime: metav1.Now()}}}}
	if err := k8s.Status().Patch(ctx, route, patch, client.FieldOwner("gateway-controller")); err != nil {
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
	theirs := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"}, Spec: builders.RouteTo("taken.example.com", "theirs").Label("app", "theirs").Template.Spec}
	create(t, theirs, builders.FixedState(ns, "flag", "503", "").Obj())
	before := routeOf(t, ns, "taken")()
	dhr := builders.DynamicHTTPRoute(ns, "taken").State("flag").ExpectCode("503").
		Active(builders.RedirectTo("taken.example.com", "status.example.com").Annotation("example.com/mode", "sorry")).Obj()
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
	state := builders.FixedState(ns, "killswitch", "200", "off").Obj()
	create(t, state)
	for _, name := range []string{"a", "b"} {
		create(t, builders.DynamicIngress(ns, "ing-"+name).State("killswitch").ExpectCode("503").
			Passive(builders.IngressTo(name+".example.com", "web").Label("app", "web")).
			Active(builders.IngressTo(name+".example.com", "sorry").Label("app", "sorry")).Obj(),
			builders.DynamicHTTPRoute(ns, "route-"+name).State("killswitch").ExpectCode("503").
				Passive(builders.RouteTo(name+".example.com", "web").Label("app", "web")).
				Active(builders.RedirectTo(name+".example.com", "status.example.com").Annotation("example.com/mode", "sorry")).Obj())
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

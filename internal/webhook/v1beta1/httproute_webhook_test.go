package v1beta1_test

import (
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// rejection is what kubectl prints after `<Kind> "<name>" is invalid: `.
func rejection(t *testing.T, err error) string {
	t.Helper()
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) {
		t.Fatalf("want an Invalid status, got %v", err)
	}
	_, after, _ := strings.Cut(err.Error(), " is invalid: ")
	return after
}

// TestDynamicHTTPRouteRejections: the same rules as for DynamicIngresses,
// and templates checked by a dry run against the Gateway API CRDs, whose
// own validation gives the message.
func TestDynamicHTTPRouteRejections(t *testing.T) {
	ns := newNamespace(t)
	theirs := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"}, Spec: builders.RouteTo("t.example.com", "x").Template.Spec}
	if err := k8s.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	first := builders.DynamicHTTPRoute(ns, "first").State("flag").ExpectCode("503").
		Passive(builders.RouteTo("first.example.com", "web")).
		Active(builders.RouteTo("first.example.com", "sorry")).Obj()
	first.Spec.Target.Name, first.Spec.PassiveRoute = "shared", nil
	if err := k8s.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() int {
		_ = k8s.Get(ctx, client.ObjectKeyFromObject(first), first)
		return len(first.Status.Conditions)
	}).ShouldNot(BeZero())

	badRedirect := builders.DynamicHTTPRoute(ns, "bad-redirect").State("flag").ExpectCode("503").
		Passive(builders.RouteTo("bad-redirect.example.com", "web")).
		Active(builders.RouteTo("bad-redirect.example.com", "sorry")).Obj()
	badRedirect.Spec.ActiveRoute.Template.Spec.Rules = []gatewayv1.HTTPRouteRule{{Filters: []gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterRequestRedirect}}}}
	second := builders.DynamicHTTPRoute(ns, "second").State("flag").ExpectCode("503").
		Passive(builders.RouteTo("second.example.com", "web")).
		Active(builders.RouteTo("second.example.com", "sorry")).Obj()
	second.Spec.Target.Name = "shared"
	noTemplates := builders.DynamicHTTPRoute(ns, "no-templates").State("flag").ExpectCode("503").
		Passive(builders.RouteTo("no-templates.example.com", "web")).
		Active(builders.RouteTo("no-templates.example.com", "sorry")).Obj()
	noTemplates.Spec.PassiveRoute, noTemplates.Spec.ActiveRoute = nil, nil
	tests := []struct {
		name string
		obj  *v1beta1.DynamicHTTPRoute
		want string
	}{
		{"target already exists", builders.DynamicHTTPRoute(ns, "taken").State("flag").ExpectCode("503").
			Passive(builders.RouteTo("taken.example.com", "web")).
			Active(builders.RouteTo("taken.example.com", "sorry")).Obj(),
			`spec.target: Invalid value: "` + ns + `/taken": HTTPRoute ` + ns + `/taken already exists; a DynamicHTTPRoute creates its target and never takes over an existing HTTPRoute: delete it first or choose another name`},
		{"target named by another DynamicHTTPRoute", second,
			`spec.target: Invalid value: "` + ns + `/shared": DynamicHTTPRoute "first" already targets HTTPRoute ` + ns + `/shared; each HTTPRoute has at most one DynamicHTTPRoute`},
		{"template the Gateway API rejects", badRedirect,
			`spec.activeRoute.template.spec.rules[0].filters[0]: Invalid value: filter.requestRedirect must be specified for RequestRedirect filter.type`},
		{"no template", noTemplates, "spec: Invalid value: at least one of passiveRoute and activeRoute must be set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := rejection(t, k8s.Create(ctx, tt.obj))
			if !strings.Contains(got, tt.want) {
				t.Errorf("kubectl would print:\n  %s\nwant it to contain:\n  %s", got, tt.want)
			}
		})
	}
}

// TestWithoutGatewayAPI: on a cluster without the Gateway API CRDs the
// manager starts and switches Ingresses, and a DynamicHTTPRoute is refused
// with a message that says what to install.
func TestWithoutGatewayAPI(t *testing.T) {
	env := controlplane.EnvironmentWithoutGatewayAPI(true)
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	stop, err := startManager(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ns := suite.NewNamespace(t, c)

	state := &v1beta1.DynamicIngressState{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flag"},
		Spec: v1beta1.DynamicIngressStateSpec{FixedResponse: &v1beta1.FixedResponse{Status: "200"}}}
	di := builders.DynamicIngress(ns, "site").State("flag").ExpectCode("200").
		Passive(builders.IngressTo("site.example.com", "web")).
		Active(builders.IngressTo("site.example.com", "sorry")).Obj()
	di.Spec.State = "flag"
	for _, obj := range []client.Object{state, di} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, func() string {
		_ = c.Get(ctx, client.ObjectKeyFromObject(di), di)
		if cond := meta.FindStatusCondition(di.Status.Conditions, v1beta1.ConditionReady); cond != nil {
			return string(cond.Status)
		}
		return ""
	}).Should(Equal("True"))

	got := rejection(t, c.Create(ctx, builders.DynamicHTTPRoute(ns, "route").State("flag").ExpectCode("503").
		Passive(builders.RouteTo("route.example.com", "web")).
		Active(builders.RouteTo("route.example.com", "sorry")).Obj()))
	want := `spec.target: Invalid value: "` + ns + `/route": the cluster has no gateway.networking.k8s.io/v1 HTTPRoute API (install the Gateway API CRDs)`
	if got != want {
		t.Errorf("kubectl would print:\n  %s\nwant:\n  %s", got, want)
	}
}

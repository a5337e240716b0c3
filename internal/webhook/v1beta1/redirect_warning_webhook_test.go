package v1beta1_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// warningRecorder keeps the warnings the API server sends back, as kubectl
// prints them after "Warning: ".
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

// HandleWarningHeaderWithContext implements rest.WarningHandlerWithContext.
func (r *warningRecorder) HandleWarningHeaderWithContext(_ context.Context, code int, _, text string) {
	if code != 299 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, text)
}

// warningClient is a client of the control plane that keeps the warnings
// the API server sends back, as kubectl prints them.
func warningClient(t *testing.T) (client.Client, *warningRecorder) {
	t.Helper()
	cfg := rest.CopyConfig(restConfig)
	recorder := &warningRecorder{}
	cfg.WarningHandlerWithContext = recorder
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c, recorder
}

// take returns the warnings recorded since the last call.
func (r *warningRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.warnings
	r.warnings = nil
	return w
}

// TestPermanentRedirectWarnings: a template with a permanent redirect is
// accepted, and the API server passes on the webhook's warning, on create
// and on update; temporary redirects get none.
func TestPermanentRedirectWarnings(t *testing.T) {
	c, recorder := warningClient(t)
	ns := newNamespace(t)
	const advice = "is a permanent redirect: browsers and caches keep it after the maintenance ends; use 302 or 307"

	redirect := func(host string, code int) *builders.HTTPRouteShape {
		shape := builders.RedirectTo(host, "status.example.com")
		shape.Template.Spec.Rules[0].Filters[0].RequestRedirect.StatusCode = ptr.To(code)
		return shape
	}
	route := func(name string, code int) client.Object {
		return builders.DynamicHTTPRoute(ns, name).State("flag").ExpectCode("503").
			Passive(builders.RouteTo(name+".example.com", "web")).Active(redirect(name+".example.com", code)).Obj()
	}
	ingress := func(name string, annotations ...string) client.Object {
		active := builders.IngressTo(name+".example.com", "sorry")
		for i := 0; i+1 < len(annotations); i += 2 {
			active.Annotation(annotations[i], annotations[i+1])
		}
		return builders.DynamicIngress(ns, name).State("flag").ExpectCode("503").
			Passive(builders.IngressTo(name+".example.com", "web")).Active(active).Obj()
	}
	tests := []struct {
		name string
		obj  client.Object
		want []string
	}{
		{"HTTPRoute redirect 301", route("moved", 301),
			[]string{"spec.activeRoute.template.spec.rules[0].filters[0].requestRedirect.statusCode: 301 " + advice}},
		{"HTTPRoute redirect 308", route("moved-for-good", 308),
			[]string{"spec.activeRoute.template.spec.rules[0].filters[0].requestRedirect.statusCode: 308 " + advice}},
		{"ALB redirect HTTP_301", ingress("alb-moved", "alb.ingress.kubernetes.io/actions.sorry",
			`{"type":"redirect","redirectConfig":{"host":"status.example.com","port":"443","protocol":"HTTPS","statusCode":"HTTP_301"}}`),
			[]string{"spec.activeIngress.template.metadata.annotations[alb.ingress.kubernetes.io/actions.sorry]: redirectConfig.statusCode HTTP_301 " +
				advice + " (an ALB redirect has HTTP_302 and no 307)"}},
		{"nginx permanent-redirect", ingress("nginx-moved", "nginx.ingress.kubernetes.io/permanent-redirect", "https://status.example.com/"),
			[]string{"spec.activeIngress.template.metadata.annotations[nginx.ingress.kubernetes.io/permanent-redirect]: 301 " +
				"(ingress-nginx's default without nginx.ingress.kubernetes.io/permanent-redirect-code) " + advice +
				" (set nginx.ingress.kubernetes.io/permanent-redirect-code)"}},
		{"HTTPRoute redirect 302", route("found", 302), nil},
		{"HTTPRoute redirect 307", route("temporary", 307), nil},
		{"ALB redirect HTTP_302", ingress("alb-found", "alb.ingress.kubernetes.io/actions.sorry",
			`{"type":"redirect","redirectConfig":{"host":"status.example.com","statusCode":"HTTP_302"}}`), nil},
		{"nginx permanent-redirect with code 302", ingress("nginx-found", "nginx.ingress.kubernetes.io/permanent-redirect", "https://status.example.com/",
			"nginx.ingress.kubernetes.io/permanent-redirect-code", "302"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recorder.take()
			if err := c.Create(ctx, tt.obj); err != nil {
				t.Fatalf("creating: %v", err)
			}
			if diff := cmp.Diff(tt.want, recorder.take()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("update to a permanent redirect", func(t *testing.T) {
		obj := route("updated", 302)
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		// Another writer (the status) may update the object in between:
		// read it afresh and update again, keeping the last try's warnings.
		updated := builders.DynamicHTTPRoute(ns, "updated").Obj()
		update := func(change func()) error {
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				recorder.take()
				if err := c.Get(ctx, client.ObjectKeyFromObject(obj), updated); err != nil {
					return err
				}
				change()
				return c.Update(ctx, updated)
			})
		}
		if err := update(func() {
			updated.Spec.ActiveRoute.Template.Spec.Rules[0].Filters[0].RequestRedirect.StatusCode = ptr.To(301)
		}); err != nil {
			t.Fatalf("updating: %v", err)
		}
		want := []string{"spec.activeRoute.template.spec.rules[0].filters[0].requestRedirect.statusCode: 301 " + advice}
		if diff := cmp.Diff(want, recorder.take()); diff != "" {
			t.Errorf("warnings on update (-want +got):\n%s", diff)
		}
		// Labels alone are not validated again, so they warn no more.
		if err := update(func() { updated.Labels = map[string]string{"team": "shop"} }); err != nil {
			t.Fatalf("relabelling: %v", err)
		}
		if got := recorder.take(); len(got) != 0 {
			t.Errorf("warnings on relabelling: %q, want none", got)
		}
	})
}

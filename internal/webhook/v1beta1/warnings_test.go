package v1beta1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

func TestRedirectWarningsIngress(t *testing.T) {
	const (
		albAction = "alb.ingress.kubernetes.io/actions.sorry"
		annPath   = "spec.activeIngress.template.metadata.annotations"
		advice    = "is a permanent redirect: browsers and caches keep it after the maintenance ends; use 302 or 307"
	)
	albRedirect := func(code string) string {
		return `{"type":"redirect","redirectConfig":{"host":"status.example.com","port":"443","protocol":"HTTPS","statusCode":"` + code + `"}}`
	}
	tests := []struct {
		name        string
		annotations map[string]string
		// passive is set on the passive template instead of the active one.
		passive bool
		want    []string
	}{
		{name: "no annotations"},
		{
			name:        "ALB redirect 301",
			annotations: map[string]string{albAction: albRedirect("HTTP_301")},
			want: []string{annPath + "[" + albAction + "]: redirectConfig.statusCode HTTP_301 " + advice +
				" (an ALB redirect has HTTP_302 and no 307)"},
		},
		{name: "ALB redirect 302", annotations: map[string]string{albAction: albRedirect("HTTP_302")}},
		{
			name: "ALB redirect with capitalised keys, as the controller's own examples write them",
			annotations: map[string]string{
				"alb.ingress.kubernetes.io/actions.ssl-redirect": `{"Type": "redirect", "RedirectConfig": {"Protocol": "HTTPS", "Port": "443", "StatusCode": "HTTP_301"}}`,
			},
			want: []string{annPath + "[alb.ingress.kubernetes.io/actions.ssl-redirect]: redirectConfig.statusCode HTTP_301 " + advice +
				" (an ALB redirect has HTTP_302 and no 307)"},
		},
		{
			name:        "ALB action key in another case",
			annotations: map[string]string{"alb.ingress.kubernetes.io/Actions.Sorry": albRedirect("http_301")},
			want: []string{annPath + "[alb.ingress.kubernetes.io/Actions.Sorry]: redirectConfig.statusCode http_301 " + advice +
				" (an ALB redirect has HTTP_302 and no 307)"},
		},
		{
			name: "ALB fixed response",
			annotations: map[string]string{
				albAction: `{"type":"fixed-response","fixedResponseConfig":{"contentType":"text/plain","statusCode":"503","messageBody":"back soon"}}`,
			},
		},
		{name: "ALB action that is not JSON", annotations: map[string]string{albAction: "HTTP_301"}},
		{name: "ALB conditions annotation", annotations: map[string]string{"alb.ingress.kubernetes.io/conditions.sorry": albRedirect("HTTP_301")}},
		{
			name:        "nginx permanent redirect without a code",
			annotations: map[string]string{nginxPermanentRedirect: "https://status.example.com/"},
			want: []string{annPath + "[" + nginxPermanentRedirect + "]: 301 (ingress-nginx's default without " + nginxPermanentRedirectCode + ") " +
				advice + " (set " + nginxPermanentRedirectCode + ")"},
		},
		{
			name:        "nginx permanent redirect with code 308",
			annotations: map[string]string{nginxPermanentRedirect: "https://status.example.com/", nginxPermanentRedirectCode: "308"},
			want: []string{annPath + "[" + nginxPermanentRedirect + "]: 308 (from " + nginxPermanentRedirectCode + ") " +
				advice + " (set " + nginxPermanentRedirectCode + ")"},
		},
		{
			name:        "nginx permanent redirect with a code ingress-nginx replaces by 301",
			annotations: map[string]string{nginxPermanentRedirect: "https://status.example.com/", nginxPermanentRedirectCode: "200"},
			want: []string{annPath + "[" + nginxPermanentRedirect + "]: 301 (ingress-nginx's default for a " + nginxPermanentRedirectCode +
				` of "200", which is not from 300 to 308) ` + advice + " (set " + nginxPermanentRedirectCode + ")"},
		},
		{name: "nginx permanent redirect with code 302", annotations: map[string]string{nginxPermanentRedirect: "https://status.example.com/", nginxPermanentRedirectCode: "302"}},
		{name: "nginx permanent redirect with code 307", annotations: map[string]string{nginxPermanentRedirect: "https://status.example.com/", nginxPermanentRedirectCode: " 307 "}},
		{name: "nginx permanent redirect left empty", annotations: map[string]string{nginxPermanentRedirect: ""}},
		{name: "nginx temporal redirect", annotations: map[string]string{"nginx.ingress.kubernetes.io/temporal-redirect": "https://status.example.com/"}},
		{
			name:        "on the passive template",
			passive:     true,
			annotations: map[string]string{nginxPermanentRedirect: "https://status.example.com/", nginxPermanentRedirectCode: "301"},
			want: []string{"spec.passiveIngress.template.metadata.annotations[" + nginxPermanentRedirect + "]: 301 (from " + nginxPermanentRedirectCode + ") " +
				advice + " (set " + nginxPermanentRedirectCode + ")"},
		},
		{
			name: "several, in the order of their keys",
			annotations: map[string]string{
				nginxPermanentRedirect: "https://status.example.com/",
				albAction:              albRedirect("HTTP_301"),
			},
			want: []string{
				annPath + "[" + albAction + "]: redirectConfig.statusCode HTTP_301 " + advice + " (an ALB redirect has HTTP_302 and no 307)",
				annPath + "[" + nginxPermanentRedirect + "]: 301 (ingress-nginx's default without " + nginxPermanentRedirectCode + ") " +
					advice + " (set " + nginxPermanentRedirectCode + ")",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shape := builders.IngressTo("shop.example.com", "sorry-page")
			for k, v := range tt.annotations {
				shape.Annotation(k, v)
			}
			w := builders.DynamicIngress("shop", "storefront").State("killswitch").ExpectCode("503").
				Passive(builders.IngressTo("shop.example.com", "storefront")).Active(shape)
			if tt.passive {
				w = builders.DynamicIngress("shop", "storefront").State("killswitch").ExpectCode("503").
					Passive(shape).Active(builders.IngressTo("shop.example.com", "storefront"))
			}
			if diff := cmp.Diff(tt.want, redirectWarnings(target.Ingress{}, w.Obj())); diff != "" {
				t.Errorf("redirectWarnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRedirectWarningsHTTPRoute(t *testing.T) {
	const advice = "is a permanent redirect: browsers and caches keep it after the maintenance ends; use 302 or 307"
	redirect := func(code *int) gatewayv1.HTTPRouteFilter {
		return gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterRequestRedirect,
			RequestRedirect: &gatewayv1.HTTPRequestRedirectFilter{Hostname: ptr.To(gatewayv1.PreciseHostname("status.example.com")), StatusCode: code}}
	}
	tests := []struct {
		name  string
		rules []gatewayv1.HTTPRouteRule
		want  []string
	}{
		{name: "backend only", rules: builders.RouteTo("shop.example.com", "sorry-page").Template.Spec.Rules},
		{name: "302", rules: []gatewayv1.HTTPRouteRule{{Filters: []gatewayv1.HTTPRouteFilter{redirect(ptr.To(302))}}}},
		{name: "307", rules: []gatewayv1.HTTPRouteRule{{Filters: []gatewayv1.HTTPRouteFilter{redirect(ptr.To(307))}}}},
		{name: "no status code: 302 by default", rules: []gatewayv1.HTTPRouteRule{{Filters: []gatewayv1.HTTPRouteFilter{redirect(nil)}}}},
		{
			name:  "301",
			rules: []gatewayv1.HTTPRouteRule{{Filters: []gatewayv1.HTTPRouteFilter{redirect(ptr.To(301))}}},
			want:  []string{"spec.activeRoute.template.spec.rules[0].filters[0].requestRedirect.statusCode: 301 " + advice},
		},
		{
			name: "308 in a later rule, after another filter",
			rules: []gatewayv1.HTTPRouteRule{
				{Filters: []gatewayv1.HTTPRouteFilter{redirect(ptr.To(302))}},
				{Filters: []gatewayv1.HTTPRouteFilter{
					{Type: gatewayv1.HTTPRouteFilterResponseHeaderModifier, ResponseHeaderModifier: &gatewayv1.HTTPHeaderFilter{
						Set: []gatewayv1.HTTPHeader{{Name: "Cache-Control", Value: "no-store"}}}},
					redirect(ptr.To(308)),
				}},
			},
			want: []string{"spec.activeRoute.template.spec.rules[1].filters[1].requestRedirect.statusCode: 308 " + advice},
		},
		{
			name: "301 in a backendRef's filters",
			rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{
				BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "sorry-page", Port: ptr.To(gatewayv1.PortNumber(80))}},
				Filters:    []gatewayv1.HTTPRouteFilter{redirect(ptr.To(301))},
			}}}},
			want: []string{"spec.activeRoute.template.spec.rules[0].backendRefs[0].filters[0].requestRedirect.statusCode: 301 " + advice},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			active := builders.RouteTo("shop.example.com", "sorry-page")
			active.Template.Spec.Rules = tt.rules
			dhr := builders.DynamicHTTPRoute("shop", "storefront").State("killswitch").ExpectCode("503").
				Passive(builders.RouteTo("shop.example.com", "storefront")).Active(active).Obj()
			if diff := cmp.Diff(tt.want, redirectWarnings(target.HTTPRoute{}, dhr)); diff != "" {
				t.Errorf("redirectWarnings (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("both templates, passive first", func(t *testing.T) {
		passive := builders.RouteTo("shop.example.com", "storefront")
		passive.Template.Spec.Rules = []gatewayv1.HTTPRouteRule{{Filters: []gatewayv1.HTTPRouteFilter{redirect(ptr.To(308))}}}
		active := builders.RouteTo("shop.example.com", "sorry-page")
		active.Template.Spec.Rules = []gatewayv1.HTTPRouteRule{{Filters: []gatewayv1.HTTPRouteFilter{redirect(ptr.To(301))}}}
		dhr := builders.DynamicHTTPRoute("shop", "storefront").State("killswitch").ExpectCode("503").Passive(passive).Active(active).Obj()
		want := []string{
			"spec.passiveRoute.template.spec.rules[0].filters[0].requestRedirect.statusCode: 308 " + advice,
			"spec.activeRoute.template.spec.rules[0].filters[0].requestRedirect.statusCode: 301 " + advice,
		}
		if diff := cmp.Diff(want, redirectWarnings(target.HTTPRoute{}, dhr)); diff != "" {
			t.Errorf("redirectWarnings (-want +got):\n%s", diff)
		}
	})
}

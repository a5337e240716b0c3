package v1beta1

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// The annotations of the two Ingress controllers whose redirects are
// checked.
const (
	albActionsPrefix           = "alb.ingress.kubernetes.io/actions."
	nginxPermanentRedirect     = "nginx.ingress.kubernetes.io/permanent-redirect"
	nginxPermanentRedirectCode = "nginx.ingress.kubernetes.io/permanent-redirect-code"
)

// permanentRedirect is the tail of every redirect warning.
const permanentRedirect = "is a permanent redirect: browsers and caches keep it after the maintenance ends; use 302 or 307"

// redirectWarnings returns an admission warning for every permanent
// redirect (301 or 308) in the templates of a switch: a RequestRedirect
// filter of an HTTPRoute template, an AWS Load Balancer Controller action
// annotation whose redirect answers HTTP_301, and ingress-nginx's
// permanent-redirect annotation unless its code is a temporary one. Each
// names the field path. A switch with such a redirect is accepted: the
// redirect works, but the maintenance outlives itself in every browser
// and cache that saw it (docs/recipes.md, "Maintenance answers that do not
// stick").
func redirectWarnings(kind target.Kind, sw target.Switch) []string {
	var warnings []string
	for _, active := range []bool{false, true} {
		tpl, ok := kind.Template(sw, active)
		if !ok {
			continue
		}
		path := field.NewPath(kind.TemplateField(active)).Child("template")
		switch spec := tpl.Spec.(type) {
		case networkingv1.IngressSpec:
			warnings = append(warnings, annotationRedirectWarnings(path.Child("metadata", "annotations"), tpl.Metadata.Annotations)...)
		case gatewayv1.HTTPRouteSpec:
			warnings = append(warnings, routeRedirectWarnings(path.Child("spec"), spec)...)
		}
	}
	return warnings
}

// routeRedirectWarnings checks the RequestRedirect filters of every rule,
// and of every backendRef of a rule.
func routeRedirectWarnings(path *field.Path, spec gatewayv1.HTTPRouteSpec) []string {
	var warnings []string
	check := func(path *field.Path, filters []gatewayv1.HTTPRouteFilter) {
		for i, f := range filters {
			if f.RequestRedirect == nil || f.RequestRedirect.StatusCode == nil {
				continue // the default is 302
			}
			if code := *f.RequestRedirect.StatusCode; code == 301 || code == 308 {
				warnings = append(warnings, fmt.Sprintf("%s: %d %s",
					path.Index(i).Child("requestRedirect", "statusCode"), code, permanentRedirect))
			}
		}
	}
	for i, rule := range spec.Rules {
		rulePath := path.Child("rules").Index(i)
		check(rulePath.Child("filters"), rule.Filters)
		for j, ref := range rule.BackendRefs {
			check(rulePath.Child("backendRefs").Index(j).Child("filters"), ref.Filters)
		}
	}
	return warnings
}

// annotationRedirectWarnings checks the redirect annotations of an Ingress
// template, in the order of their keys.
func annotationRedirectWarnings(path *field.Path, annotations map[string]string) []string {
	var warnings []string
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch {
		case strings.HasPrefix(strings.ToLower(k), albActionsPrefix):
			if code := albRedirectCode(annotations[k]); strings.EqualFold(code, "HTTP_301") {
				warnings = append(warnings, fmt.Sprintf("%s: redirectConfig.statusCode %s %s (an ALB redirect has HTTP_302 and no 307)",
					path.Key(k), code, permanentRedirect))
			}
		case k == nginxPermanentRedirect && strings.TrimSpace(annotations[k]) != "":
			if code, why := nginxRedirectCode(annotations); code == 301 || code == 308 {
				warnings = append(warnings, fmt.Sprintf("%s: %d (%s) %s (set %s)",
					path.Key(k), code, why, permanentRedirect, nginxPermanentRedirectCode))
			}
		}
	}
	return warnings
}

// albRedirectCode is the redirect status code of an AWS Load Balancer
// Controller action annotation, "" when it has none or is not JSON. JSON
// keys match case-insensitively, as they do for the controller, which
// reads the annotation with encoding/json too.
func albRedirectCode(action string) string {
	var a struct {
		RedirectConfig *struct {
			StatusCode string `json:"statusCode"`
		} `json:"redirectConfig"`
	}
	if err := json.Unmarshal([]byte(action), &a); err != nil || a.RedirectConfig == nil {
		return ""
	}
	return a.RedirectConfig.StatusCode
}

// nginxRedirectCode is the status code ingress-nginx answers with for
// its permanent-redirect annotation, and where that code comes from:
// permanent-redirect-code when it is a number from 300 to 308, otherwise
// 301.
func nginxRedirectCode(annotations map[string]string) (int, string) {
	value, ok := annotations[nginxPermanentRedirectCode]
	if !ok {
		return 301, "ingress-nginx's default without " + nginxPermanentRedirectCode
	}
	code, err := strconv.Atoi(strings.TrimSpace(value))
	if err != nil || code < 300 || code > 308 {
		return 301, fmt.Sprintf("ingress-nginx's default for a %s of %q, which is not from 300 to 308", nginxPermanentRedirectCode, value)
	}
	return code, "from " + nginxPermanentRedirectCode
}

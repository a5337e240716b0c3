package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// recipesDir holds the recipes of docs/recipes.md, one file each.
const recipesDir = "config/samples/recipes"

// applyRecipe applies one recipe file into a new namespace, waits until all
// its objects are Ready, and returns the namespace. The recipes' states are
// fixed, so the test flips them with flipState.
func applyRecipe(t *testing.T, file string) string {
	t.Helper()
	ns := newNamespace(t, "recipe")
	out, stderr, err := runKubectl("", "apply", "-n", ns, "-f", filepath.Join(recipesDir, file))
	if err != nil {
		t.Fatalf("kubectl apply -f %s: %v\n%s%s", file, err, out, stderr)
	}
	// The recipes follow their own advice: no permanent redirect anywhere.
	if strings.Contains(stderr, "Warning:") {
		t.Errorf("kubectl apply -f %s printed warnings:\n%s", file, stderr)
	}
	waitReady(t, ns)
	return ns
}

// waitReady waits until every state and switch of ns is Ready.
func waitReady(t *testing.T, ns string) {
	t.Helper()
	for _, kind := range []string{"dynamicingressstate", "dynamicingress", "dynamichttproute"} {
		kubectl(t, "", "wait", "-n", ns, "--for=condition=Ready", kind, "--all", "--timeout=60s")
	}
}

// flipState sets a fixed state's status code and waits until the named
// switches ("di/x", "dhr/y") follow it: active for 503, passive otherwise.
func flipState(t *testing.T, ns, state, code string, switches ...string) {
	t.Helper()
	kubectl(t, "", "patch", "-n", ns, "dis", state, "--type", "merge", "-p", fmt.Sprintf(`{"spec":{"fixedResponse":{"status":%q}}}`, code))
	waitSwitches(t, ns, code == "503", switches...)
}

// flipClusterState is flipState for a fixed ClusterDynamicIngressState,
// with the followers in ns.
func flipClusterState(t *testing.T, ns, state, code string, switches ...string) {
	t.Helper()
	kubectl(t, "", "patch", "cdis", state, "--type", "merge", "-p", fmt.Sprintf(`{"spec":{"fixedResponse":{"status":%q}}}`, code))
	waitSwitches(t, ns, code == "503", switches...)
}

// waitSwitches waits until the named switches of ns are Ready and active
// (or passive).
func waitSwitches(t *testing.T, ns string, active bool, switches ...string) {
	t.Helper()
	for _, sw := range switches {
		kubectl(t, "", "wait", "-n", ns, "--for=condition=Active="+strconv.FormatBool(active), sw, "--timeout=30s")
		kubectl(t, "", "wait", "-n", ns, "--for=condition=Ready", sw, "--timeout=30s")
	}
}

// getJSON reads one object with kubectl into obj.
func getJSON(t *testing.T, ns, resource, name string, obj any) {
	t.Helper()
	if err := json.Unmarshal([]byte(kubectl(t, "", "get", "-n", ns, resource, name, "-o", "json")), obj); err != nil {
		t.Fatalf("decoding %s %s: %v", resource, name, err)
	}
}

func getIngress(t *testing.T, ns, name string) *networkingv1.Ingress {
	t.Helper()
	ing := &networkingv1.Ingress{}
	getJSON(t, ns, "ingress", name, ing)
	return ing
}

func getRoute(t *testing.T, ns, name string) *gatewayv1.HTTPRoute {
	t.Helper()
	route := &gatewayv1.HTTPRoute{}
	getJSON(t, ns, "httproute", name, route)
	return route
}

// ingressExists reports whether the Ingress ns/name exists, once the
// operator's write has landed (the caller waited for Ready).
func ingressExists(t *testing.T, ns, name string) bool {
	t.Helper()
	out := kubectl(t, "", "get", "-n", ns, "ingress", name, "--ignore-not-found", "-o", "name")
	return strings.TrimSpace(out) != ""
}

// albAction is the part of an AWS Load Balancer Controller action
// annotation the recipes use.
type albAction struct {
	Type                string `json:"type"`
	FixedResponseConfig *struct {
		ContentType string `json:"contentType"`
		StatusCode  string `json:"statusCode"`
		MessageBody string `json:"messageBody"`
	} `json:"fixedResponseConfig"`
	RedirectConfig *struct {
		StatusCode string `json:"statusCode"`
	} `json:"redirectConfig"`
	ForwardConfig *struct {
		TargetGroups []struct {
			ServiceName string `json:"serviceName"`
			ServicePort any    `json:"servicePort"`
		} `json:"targetGroups"`
	} `json:"forwardConfig"`
}

// albCondition is one entry of an alb.ingress.kubernetes.io/conditions.*
// annotation.
type albCondition struct {
	Field            string                     `json:"field"`
	SourceIPConfig   *struct{ Values []string } `json:"sourceIpConfig"`
	HTTPHeaderConfig *struct {
		HTTPHeaderName string   `json:"httpHeaderName"`
		Values         []string `json:"values"`
	} `json:"httpHeaderConfig"`
	HTTPRequestMethodConfig *struct{ Values []string } `json:"httpRequestMethodConfig"`
}

// albRule is what the AWS Load Balancer Controller makes of one path of an
// Ingress: its action and its extra conditions, from the annotations named
// after the path's backend.
type albRule struct {
	host, path string
	action     albAction
	conditions []albCondition
}

// albRules reads the rules of an ALB Ingress, in the order of its paths.
func albRules(t *testing.T, ing *networkingv1.Ingress) []albRule {
	t.Helper()
	var rules []albRule
	for _, r := range ing.Spec.Rules {
		for _, p := range r.HTTP.Paths {
			name := p.Backend.Service.Name
			rule := albRule{host: r.Host, path: p.Path}
			if p.Backend.Service.Port.Name != "use-annotation" {
				rule.action.Type = "forward to " + name
				rules = append(rules, rule)
				continue
			}
			action, ok := ing.Annotations["alb.ingress.kubernetes.io/actions."+name]
			if !ok {
				t.Fatalf("Ingress %s: path %s names action %q, which has no annotation", ing.Name, p.Path, name)
			}
			if err := json.Unmarshal([]byte(action), &rule.action); err != nil {
				t.Fatalf("Ingress %s: action %s: %v", ing.Name, name, err)
			}
			if c, ok := ing.Annotations["alb.ingress.kubernetes.io/conditions."+name]; ok {
				if err := json.Unmarshal([]byte(c), &rule.conditions); err != nil {
					t.Fatalf("Ingress %s: conditions %s: %v", ing.Name, name, err)
				}
			}
			rules = append(rules, rule)
		}
	}
	return rules
}

// groupOrder is an Ingress's place in its ALB IngressGroup.
func groupOrder(t *testing.T, ing *networkingv1.Ingress) int {
	t.Helper()
	order, err := strconv.Atoi(ing.Annotations["alb.ingress.kubernetes.io/group.order"])
	if err != nil {
		t.Fatalf("Ingress %s: group.order: %v", ing.Name, err)
	}
	return order
}

// httpRequest is what Gateway API's precedence looks at in a request.
type httpRequest struct {
	host, method, path string
	headers            map[string]string
}

// servedBy returns the route and the rule that Gateway API's precedence
// (the HTTPRoute API's documentation) picks for req, routes given oldest
// first; -1, -1 when none matches. First the routes with the most specific
// matching hostname; then, across their rules, the match with an Exact
// path, then the longest prefix, then a method, then the most headers,
// then the most query parameters; ties go to the oldest route and then to
// the first rule.
func servedBy(routes []*gatewayv1.HTTPRoute, req httpRequest) (route, rule int) {
	route, rule = -1, -1
	// hostRank is how specifically a route's hostnames match req.host:
	// characters of a matching exact name, then of a matching name; a
	// route without hostnames matches every host, least specifically.
	hostRank := func(r *gatewayv1.HTTPRoute) (best []int, ok bool) {
		if len(r.Spec.Hostnames) == 0 {
			return []int{0, 0}, true
		}
		for _, h := range r.Spec.Hostnames {
			name := string(h)
			var rank []int
			switch {
			case name == req.host:
				rank = []int{len(name), len(name)}
			case strings.HasPrefix(name, "*.") && strings.HasSuffix(req.host, name[1:]):
				rank = []int{0, len(name)}
			default:
				continue
			}
			if !ok || slices.Compare(rank, best) > 0 {
				best, ok = rank, true
			}
		}
		return best, ok
	}
	var bestHost []int
	for _, r := range routes {
		if rank, ok := hostRank(r); ok && (bestHost == nil || slices.Compare(rank, bestHost) > 0) {
			bestHost = rank
		}
	}
	var best []int
	for i, r := range routes {
		if rank, ok := hostRank(r); !ok || slices.Compare(rank, bestHost) != 0 {
			continue
		}
		for j, rl := range r.Spec.Rules {
			matches := rl.Matches
			if len(matches) == 0 {
				matches = []gatewayv1.HTTPRouteMatch{{}}
			}
			for _, m := range matches {
				rank, ok := matchRank(m, req)
				if ok && (best == nil || slices.Compare(rank, best) > 0) {
					best, route, rule = rank, i, j
				}
			}
		}
	}
	return route, rule
}

// matchRank is a match's precedence for req, and whether it matches.
func matchRank(m gatewayv1.HTTPRouteMatch, req httpRequest) ([]int, bool) {
	pathType, value := gatewayv1.PathMatchPathPrefix, "/"
	if m.Path != nil {
		pathType, value = *m.Path.Type, *m.Path.Value
	}
	exact := 0
	switch pathType {
	case gatewayv1.PathMatchExact:
		if req.path != value {
			return nil, false
		}
		exact = 1
	case gatewayv1.PathMatchPathPrefix:
		trimmed := strings.TrimSuffix(value, "/")
		if req.path != trimmed && !strings.HasPrefix(req.path, trimmed+"/") {
			return nil, false
		}
	}
	method := 0
	if m.Method != nil {
		if string(*m.Method) != req.method {
			return nil, false
		}
		method = 1
	}
	for _, h := range m.Headers {
		if v, ok := req.headers[strings.ToLower(string(h.Name))]; !ok || v != h.Value {
			return nil, false
		}
	}
	return []int{exact, len(value), method, len(m.Headers), len(m.QueryParams)}, true
}

// backendOf names where a route rule sends requests: its backend, or its
// redirect with the status code.
func backendOf(rule gatewayv1.HTTPRouteRule) string {
	for _, f := range rule.Filters {
		if f.RequestRedirect != nil {
			return fmt.Sprintf("redirect %d to %s", *f.RequestRedirect.StatusCode, *f.RequestRedirect.Hostname)
		}
	}
	var names []string
	for _, b := range rule.BackendRefs {
		names = append(names, string(b.Name))
	}
	return strings.Join(names, ",")
}

// checkRouting asserts where each request goes among routes (oldest first).
func checkRouting(t *testing.T, routes []*gatewayv1.HTTPRoute, want map[string]httpRequest) {
	t.Helper()
	for to, req := range want {
		to, _, _ = strings.Cut(to, "#") // "#..." tells apart requests going to the same place
		got := "no rule (404)"
		if i, j := servedBy(routes, req); i >= 0 {
			got = routes[i].Name + ": " + backendOf(routes[i].Spec.Rules[j])
		}
		if got != to {
			t.Errorf("%s %s%s with headers %v goes to %q, want %q", req.method, req.host, req.path, req.headers, got, to)
		}
	}
}

// TestRecipesApplyWithTheSamples: the samples and every recipe apply into
// one namespace, and all become Ready.
func TestRecipesApplyWithTheSamples(t *testing.T) {
	ns := newNamespace(t, "recipes")
	// Admitted to the cluster states of the samples and of recipe 6.
	kubectl(t, "", "label", "namespace", ns, publicTier)
	kubectl(t, "", "apply", "-n", ns, "-k", "config/samples")
	out, stderr, err := runKubectl("", "apply", "-n", ns, "-k", recipesDir)
	if err != nil {
		t.Fatalf("kubectl apply -k %s after config/samples: %v\n%s%s", recipesDir, err, out, stderr)
	}
	if strings.Contains(stderr, "Warning:") {
		t.Errorf("kubectl apply -k %s printed warnings:\n%s", recipesDir, stderr)
	}
	for _, want := range []string{
		"dynamicingressstate.ingress.dynamicingress.io/portal-maintenance created",
		"dynamicingress.ingress.dynamicingress.io/portal-admin-bypass created",
		"dynamicingress.ingress.dynamicingress.io/portal-maintenance-rule created",
		"dynamichttproute.ingress.dynamicingress.io/portal-route created",
		"dynamicingressstate.ingress.dynamicingress.io/group-maintenance created",
		"dynamicingress.ingress.dynamicingress.io/group-overlay created",
		"dynamichttproute.ingress.dynamicingress.io/group-overlay-route created",
		"dynamicingressstate.ingress.dynamicingress.io/orders-read-only created",
		"dynamichttproute.ingress.dynamicingress.io/orders-route created",
		"dynamicingress.ingress.dynamicingress.io/orders-read-only-rules created",
		"dynamicingressstate.ingress.dynamicingress.io/site-maintenance created",
		"dynamichttproute.ingress.dynamicingress.io/news-route created",
		"dynamicingress.ingress.dynamicingress.io/help-site created",
		"dynamicingress.ingress.dynamicingress.io/forum-site created",
		"dynamicingressstate.ingress.dynamicingress.io/shop-window created",
		"dynamicingress.ingress.dynamicingress.io/shop created",
		"dynamicingress.ingress.dynamicingress.io/shop-killswitch created",
		"dynamichttproute.ingress.dynamicingress.io/shop-route created",
		"dynamichttproute.ingress.dynamicingress.io/shop-killswitch-route created",
		"dynamicingressstate.ingress.dynamicingress.io/blog-window created",
		"dynamicingress.ingress.dynamicingress.io/blog created",
		"dynamicingressstate.ingress.dynamicingress.io/shop-app-up created",
		"dynamicingressstate.ingress.dynamicingress.io/shop-app-window created",
		"dynamicingress.ingress.dynamicingress.io/shop-app created",
		"dynamicingressstate.ingress.dynamicingress.io/checkout-killswitch created",
		"dynamicingress.ingress.dynamicingress.io/checkout-live created",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl apply -k %s printed:\n%s\nwant a line %q", recipesDir, out, want)
		}
	}
	// Cluster-scoped: another test may have created it.
	if !regexp.MustCompile(`(?m)^clusterdynamicingressstate.ingress.dynamicingress.io/public-killswitch (created|unchanged)$`).MatchString(out) {
		t.Errorf("kubectl apply -k %s printed:\n%s\nwant clusterdynamicingressstate.ingress.dynamicingress.io/public-killswitch created or unchanged", recipesDir, out)
	}
	// Recipe 8's state follows the app's Service, which the app's own
	// manifests create, not the recipe: no response until it exists, and
	// the switch stays Ready (failurePolicy decides).
	waitServiceNotFound(t, ns, "shop-app-up")
	waitSwitchesReady(t, ns, "di", "dhr")
	apply(t, objectYAML(t, builders.Service(ns, "shop-app")))
	waitReady(t, ns)
}

// waitServiceNotFound waits until the service state ns/name is
// Ready=False/ServiceNotFound.
func waitServiceNotFound(t *testing.T, ns, name string) {
	t.Helper()
	kubectl(t, "", "wait", "-n", ns, "--for=condition=Ready=False", "dis/"+name, "--timeout=60s")
	if got := kubectl(t, "", "get", "-n", ns, "dis", name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].reason}`); got != "ServiceNotFound" {
		t.Errorf("dis %s Ready reason %q without its Service, want ServiceNotFound", name, got)
	}
}

// TestRecipeAdminBypass: during maintenance the bypass rules come before
// the maintenance rule, on the ALB and in the HTTPRoute; outside it the
// ALB rules do not exist.
func TestRecipeAdminBypass(t *testing.T) {
	ns := applyRecipe(t, "admin-bypass.yaml")
	for _, name := range []string{"portal-admin-bypass", "portal-maintenance-rule"} {
		if ingressExists(t, ns, name) {
			t.Errorf("Ingress %s exists outside maintenance", name)
		}
	}
	portal := httpRequest{host: "portal.example.com", method: "GET", path: "/settings"}
	admin := portal
	admin.headers = map[string]string{"x-maintenance-bypass": "change-me-every-window"}
	checkRouting(t, []*gatewayv1.HTTPRoute{getRoute(t, ns, "portal-route")}, map[string]httpRequest{
		"portal-route: portal":        portal,
		"portal-route: portal#header": admin,
	})

	flipState(t, ns, "portal-maintenance", "503", "di/portal-admin-bypass", "di/portal-maintenance-rule", "dhr/portal-route")

	bypass, maintenance := getIngress(t, ns, "portal-admin-bypass"), getIngress(t, ns, "portal-maintenance-rule")
	for _, ing := range []*networkingv1.Ingress{bypass, maintenance} {
		if got := ing.Annotations["alb.ingress.kubernetes.io/group.name"]; got != "public" {
			t.Errorf("Ingress %s: group.name %q, want public", ing.Name, got)
		}
	}
	if b, m := groupOrder(t, bypass), groupOrder(t, maintenance); b >= m || m >= 0 {
		t.Errorf("group.order: bypass %d, maintenance %d; want bypass < maintenance < 0 (the apps' default)", b, m)
	}
	type rule struct{ Host, Path, Action, Condition string }
	summarize := func(rules []albRule) []rule {
		var out []rule
		for _, r := range rules {
			s := rule{Host: r.host, Path: r.path, Action: r.action.Type}
			if f := r.action.ForwardConfig; f != nil && len(f.TargetGroups) == 1 {
				s.Action += fmt.Sprintf(" %s:%v", f.TargetGroups[0].ServiceName, f.TargetGroups[0].ServicePort)
			}
			if f := r.action.FixedResponseConfig; f != nil {
				s.Action += " " + f.StatusCode
			}
			for _, c := range r.conditions {
				switch {
				case c.SourceIPConfig != nil:
					s.Condition = c.Field + " " + strings.Join(c.SourceIPConfig.Values, ",")
				case c.HTTPHeaderConfig != nil:
					s.Condition = c.Field + " " + c.HTTPHeaderConfig.HTTPHeaderName + "=" + strings.Join(c.HTTPHeaderConfig.Values, ",")
				}
			}
			out = append(out, s)
		}
		return out
	}
	want := []rule{
		{Host: "portal.example.com", Path: "/", Action: "forward portal:80", Condition: "source-ip 203.0.113.0/24"},
		{Host: "portal.example.com", Path: "/", Action: "forward portal:80", Condition: "http-header X-Maintenance-Bypass=change-me-every-window"},
		{Host: "portal.example.com", Path: "/", Action: "fixed-response 503"},
	}
	if diff := cmp.Diff(want, summarize(append(albRules(t, bypass), albRules(t, maintenance)...))); diff != "" {
		t.Errorf("ALB rules in group order (-want +got):\n%s", diff)
	}

	checkRouting(t, []*gatewayv1.HTTPRoute{getRoute(t, ns, "portal-route")}, map[string]httpRequest{
		"portal-route: redirect 302 to status.example.com": portal,
		"portal-route: portal":                             admin,
	})

	flipState(t, ns, "portal-maintenance", "200", "di/portal-admin-bypass", "di/portal-maintenance-rule", "dhr/portal-route")
	for _, name := range []string{"portal-admin-bypass", "portal-maintenance-rule"} {
		if ingressExists(t, ns, name) {
			t.Errorf("Ingress %s still exists after the maintenance", name)
		}
	}
	checkRouting(t, []*gatewayv1.HTTPRoute{getRoute(t, ns, "portal-route")}, map[string]httpRequest{"portal-route: portal": portal})
}

// TestRecipeGroupOverlay: the overlay Ingress exists only while active and
// precedes the group's apps; the overlay route wins over an older app route
// on the same hostname for every method.
func TestRecipeGroupOverlay(t *testing.T) {
	ns := applyRecipe(t, "group-overlay.yaml")
	// An app's own route, as its team wrote it: older than the overlay.
	kubectl(t, `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: blog}
spec:
  parentRefs: [{name: public}]
  hostnames: [blog.example.com]
  rules: [{backendRefs: [{name: blog, port: 80}]}]
`, "apply", "-n", ns, "-f", "-")
	if ingressExists(t, ns, "group-overlay") {
		t.Error("the overlay Ingress exists outside maintenance")
	}
	out := kubectl(t, "", "get", "-n", ns, "httproute", "group-overlay-route", "--ignore-not-found", "-o", "name")
	if strings.TrimSpace(out) != "" {
		t.Error("the overlay HTTPRoute exists outside maintenance")
	}

	flipState(t, ns, "group-maintenance", "503", "di/group-overlay", "dhr/group-overlay-route")

	overlay := getIngress(t, ns, "group-overlay")
	if got := overlay.Annotations["alb.ingress.kubernetes.io/group.name"]; got != "public" {
		t.Errorf("overlay group.name %q, want public", got)
	}
	if order := groupOrder(t, overlay); order >= 0 || order < -1000 {
		t.Errorf("overlay group.order %d, want from -1000 to -1, ahead of the apps' 0", order)
	}
	rules := albRules(t, overlay)
	if len(rules) != 1 || rules[0].host != "" || rules[0].path != "/" || rules[0].action.Type != "fixed-response" ||
		rules[0].action.FixedResponseConfig.StatusCode != "503" || len(rules[0].conditions) != 0 {
		t.Errorf("overlay rules = %+v, want one catch-all rule (no host, path /) answering a fixed 503", rules)
	}

	routes := []*gatewayv1.HTTPRoute{getRoute(t, ns, "blog"), getRoute(t, ns, "group-overlay-route")}
	want := map[string]httpRequest{}
	for _, method := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"} {
		want["group-overlay-route: sorry-page#"+method] = httpRequest{host: "blog.example.com", method: method, path: "/2026/11/hello"}
	}
	checkRouting(t, routes, want)

	flipState(t, ns, "group-maintenance", "200", "di/group-overlay", "dhr/group-overlay-route")
	if ingressExists(t, ns, "group-overlay") {
		t.Error("the overlay Ingress still exists after the maintenance")
	}
	out = kubectl(t, "", "get", "-n", ns, "httproute", "group-overlay-route", "--ignore-not-found", "-o", "name")
	if strings.TrimSpace(out) != "" {
		t.Error("the overlay HTTPRoute still exists after the maintenance")
	}
	checkRouting(t, []*gatewayv1.HTTPRoute{getRoute(t, ns, "blog")}, map[string]httpRequest{
		"blog: blog": {host: "blog.example.com", method: "POST", path: "/comments"},
	})
}

// TestRecipeReadOnly: while read-only, reads reach the app and writes the
// sorry page, by method, on the HTTPRoute and on the ALB.
func TestRecipeReadOnly(t *testing.T) {
	ns := applyRecipe(t, "read-only.yaml")
	if ingressExists(t, ns, "orders-read-only-rules") {
		t.Error("Ingress orders-read-only-rules exists outside the read-only window")
	}
	req := func(method, path string) httpRequest {
		return httpRequest{host: "orders.example.com", method: method, path: path}
	}
	checkRouting(t, []*gatewayv1.HTTPRoute{getRoute(t, ns, "orders-route")}, map[string]httpRequest{
		"orders-route: orders#GET": req("GET", "/orders/1"), "orders-route: orders#POST": req("POST", "/orders"),
	})

	flipState(t, ns, "orders-read-only", "503", "dhr/orders-route", "di/orders-read-only-rules")

	checkRouting(t, []*gatewayv1.HTTPRoute{getRoute(t, ns, "orders-route")}, map[string]httpRequest{
		"orders-route: orders#GET":         req("GET", "/orders/1"),
		"orders-route: orders#HEAD":        req("HEAD", "/orders/1"),
		"orders-route: orders#OPTIONS":     req("OPTIONS", "/orders"),
		"orders-route: orders#search":      req("POST", "/api/search"),
		"orders-route: sorry-page#POST":    req("POST", "/orders"),
		"orders-route: sorry-page#PUT":     req("PUT", "/orders/1"),
		"orders-route: sorry-page#PATCH":   req("PATCH", "/orders/1"),
		"orders-route: sorry-page#DELETE":  req("DELETE", "/orders/1"),
		"orders-route: sorry-page#search2": req("POST", "/api/search/saved"),
	})

	ing := getIngress(t, ns, "orders-read-only-rules")
	if order := groupOrder(t, ing); order >= 0 {
		t.Errorf("group.order %d, want negative: ahead of the app's own Ingress", order)
	}
	var blocked []string
	for _, r := range albRules(t, ing) {
		if r.host != "orders.example.com" || r.action.FixedResponseConfig == nil || r.action.FixedResponseConfig.StatusCode != "503" {
			t.Errorf("ALB rule %+v, want a fixed 503 for orders.example.com", r)
		}
		matches := 2 // the host and the path
		for _, c := range r.conditions {
			if c.Field != "http-request-method" || c.HTTPRequestMethodConfig == nil {
				t.Errorf("ALB rule condition %+v, want http-request-method", c)
				continue
			}
			if n := len(c.HTTPRequestMethodConfig.Values); n > 3 {
				t.Errorf("ALB condition with %d methods; an ALB condition holds at most 3", n)
			}
			matches += len(c.HTTPRequestMethodConfig.Values)
			blocked = append(blocked, c.HTTPRequestMethodConfig.Values...)
		}
		if matches > 5 {
			t.Errorf("ALB rule with %d match evaluations; an ALB rule holds at most 5", matches)
		}
	}
	slices.Sort(blocked)
	if diff := cmp.Diff([]string{"DELETE", "PATCH", "POST", "PUT"}, blocked); diff != "" {
		t.Errorf("methods the ALB rules answer with 503 (-want +got):\n%s", diff)
	}

	flipState(t, ns, "orders-read-only", "200", "dhr/orders-route", "di/orders-read-only-rules")
	if ingressExists(t, ns, "orders-read-only-rules") {
		t.Error("Ingress orders-read-only-rules still exists after the read-only window")
	}
	checkRouting(t, []*gatewayv1.HTTPRoute{getRoute(t, ns, "orders-route")}, map[string]httpRequest{
		"orders-route: orders": req("DELETE", "/orders/1"),
	})
}

// TestRecipeNoStick: the maintenance answers are 503s that are not stored,
// and redirects are temporary; everything goes back when it ends.
func TestRecipeNoStick(t *testing.T) {
	ns := applyRecipe(t, "no-stick.yaml")
	flipState(t, ns, "site-maintenance", "503", "dhr/news-route", "di/help-site", "di/forum-site")

	route := getRoute(t, ns, "news-route")
	if len(route.Spec.Rules) != 1 {
		t.Fatalf("news-route has %d rules, want 1", len(route.Spec.Rules))
	}
	rule := route.Spec.Rules[0]
	if got := backendOf(rule); got != "sorry-page" {
		t.Errorf("news-route sends to %q, want sorry-page", got)
	}
	var set []gatewayv1.HTTPHeader
	for _, f := range rule.Filters {
		if f.Type == gatewayv1.HTTPRouteFilterResponseHeaderModifier {
			set = f.ResponseHeaderModifier.Set
		}
	}
	if diff := cmp.Diff([]gatewayv1.HTTPHeader{{Name: "Cache-Control", Value: "no-store"}, {Name: "Retry-After", Value: "600"}}, set); diff != "" {
		t.Errorf("news-route ResponseHeaderModifier set (-want +got):\n%s", diff)
	}

	help := albRules(t, getIngress(t, ns, "help-site"))
	if len(help) != 1 || help[0].action.FixedResponseConfig == nil {
		t.Fatalf("help-site rules = %+v, want one fixed response", help)
	}
	if fr := help[0].action.FixedResponseConfig; fr.StatusCode != "503" || len(fr.MessageBody) > 1024 {
		t.Errorf("help-site answers %s with a body of %d bytes, want 503 within the ALB's 1024", fr.StatusCode, len(fr.MessageBody))
	}
	forum := getIngress(t, ns, "forum-site")
	if got := forum.Annotations["nginx.ingress.kubernetes.io/temporal-redirect"]; got != "https://status.example.com/forum" {
		t.Errorf("forum-site temporal-redirect = %q, want https://status.example.com/forum", got)
	}
	if _, ok := forum.Annotations["nginx.ingress.kubernetes.io/permanent-redirect"]; ok {
		t.Error("forum-site has a permanent redirect")
	}

	flipState(t, ns, "site-maintenance", "200", "dhr/news-route", "di/help-site", "di/forum-site")
	if got := backendOf(getRoute(t, ns, "news-route").Spec.Rules[0]); got != "news" {
		t.Errorf("news-route sends to %q after the maintenance, want news", got)
	}
	helpAfter := getIngress(t, ns, "help-site")
	if got := albRules(t, helpAfter); len(got) != 1 || got[0].action.Type != "forward to help" {
		t.Errorf("help-site after the maintenance = %+v, want forward to help", got)
	}
	if _, ok := helpAfter.Annotations["alb.ingress.kubernetes.io/actions.help-maintenance"]; ok {
		t.Error("help-site keeps its fixed-response action after the maintenance")
	}
	if _, ok := getIngress(t, ns, "forum-site").Annotations["nginx.ingress.kubernetes.io/temporal-redirect"]; ok {
		t.Error("forum-site keeps its redirect after the maintenance")
	}
}

// TestRecipePlatformKillSwitch: the shop's window switches the shop's own
// Ingress and route; the platform's cluster state adds the overlay ahead of
// them, whatever the window says; a namespace that loses its label stops
// following the kill switch, and follows it again once the label is back.
func TestRecipePlatformKillSwitch(t *testing.T) {
	ns := newNamespace(t, "recipe")
	kubectl(t, "", "label", "namespace", ns, publicTier)
	file := filepath.Join(recipesDir, "platform-killswitch.yaml")
	out, stderr, err := runKubectl("", "apply", "-n", ns, "-f", file)
	if err != nil || strings.Contains(stderr, "Warning:") {
		t.Fatalf("kubectl apply -f %s: %v\n%s%s", file, err, out, stderr)
	}
	// The kill switch is cluster-wide: leave it off for the other tests.
	t.Cleanup(func() {
		_, _, _ = runKubectl("", "patch", "cdis", "public-killswitch", "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"200"}}}`)
	})
	kubectl(t, "", "wait", "--for=condition=Ready", "cdis/public-killswitch", "--timeout=60s")
	waitReady(t, ns)

	// orderOf is an Ingress's group.order, 0 when unset (the ALB's default).
	orderOf := func(ing *networkingv1.Ingress) int {
		if _, ok := ing.Annotations["alb.ingress.kubernetes.io/group.order"]; !ok {
			return 0
		}
		return groupOrder(t, ing)
	}
	// groupRules summarises the rules of the group's Ingresses, in the
	// order the ALB evaluates them; the first that matches answers.
	groupRules := func() []string {
		ings := []*networkingv1.Ingress{getIngress(t, ns, "shop")}
		if ingressExists(t, ns, "shop-killswitch") {
			ings = append(ings, getIngress(t, ns, "shop-killswitch"))
		}
		slices.SortStableFunc(ings, func(a, b *networkingv1.Ingress) int { return orderOf(a) - orderOf(b) })
		var out []string
		for _, ing := range ings {
			if got := ing.Annotations["alb.ingress.kubernetes.io/group.name"]; got != "public" {
				t.Errorf("Ingress %s: group.name %q, want public", ing.Name, got)
			}
			for _, r := range albRules(t, ing) {
				rule := fmt.Sprintf("%s: %s%s %s", ing.Name, r.host, r.path, r.action.Type)
				if f := r.action.FixedResponseConfig; f != nil {
					rule += " " + f.StatusCode
				}
				out = append(out, rule)
			}
		}
		return out
	}
	routes := func() []*gatewayv1.HTTPRoute {
		routes := []*gatewayv1.HTTPRoute{getRoute(t, ns, "shop-route")}
		if out := kubectl(t, "", "get", "-n", ns, "httproute", "shop-killswitch-route", "--ignore-not-found", "-o", "name"); strings.TrimSpace(out) != "" {
			routes = append(routes, getRoute(t, ns, "shop-killswitch-route"))
		}
		return routes
	}
	shop := func(method string) httpRequest {
		return httpRequest{host: "shop.example.com", method: method, path: "/cart"}
	}
	everyMethod := func(to string) map[string]httpRequest {
		want := map[string]httpRequest{}
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"} {
			want[to+"#"+m] = shop(m)
		}
		return want
	}
	check := func(when string, wantRules []string, wantRoute string) {
		t.Helper()
		if diff := cmp.Diff(wantRules, groupRules()); diff != "" {
			t.Errorf("%s: ALB rules in group order (-want +got):\n%s", when, diff)
		}
		checkRouting(t, routes(), everyMethod(wantRoute))
	}

	check("neither on", []string{"shop: shop.example.com/ forward to shop"}, "shop-route: shop")

	// The shop's own window opens (a one-off window, open now): the
	// shop's own Ingress and route go to its maintenance page.
	now := time.Now().UTC()
	window := fmt.Sprintf(`[{"op":"add","path":"/spec/schedule/windows/-","value":{"start":%q,"end":%q}}]`,
		now.Add(-time.Minute).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339))
	kubectl(t, "", "patch", "-n", ns, "dis", "shop-window", "--type", "json", "-p", window)
	waitSwitches(t, ns, true, "di/shop", "dhr/shop-route")
	waitSwitches(t, ns, false, "di/shop-killswitch", "dhr/shop-killswitch-route")
	check("the shop's window", []string{"shop: shop.example.com/ forward to shop-maintenance"}, "shop-route: shop-maintenance")

	// The platform fires the kill switch: its overlay comes first.
	flipClusterState(t, ns, "public-killswitch", "503", "di/shop-killswitch", "dhr/shop-killswitch-route")
	check("the window and the kill switch", []string{
		"shop-killswitch: shop.example.com/ fixed-response 503",
		"shop: shop.example.com/ forward to shop-maintenance",
	}, "shop-killswitch-route: sorry-page")

	// The window closes: the kill switch still answers.
	kubectl(t, "", "patch", "-n", ns, "dis", "shop-window", "--type", "json", "-p", `[{"op":"remove","path":"/spec/schedule/windows/1"}]`)
	waitSwitches(t, ns, false, "di/shop", "dhr/shop-route")
	check("the kill switch", []string{
		"shop-killswitch: shop.example.com/ fixed-response 503",
		"shop: shop.example.com/ forward to shop",
	}, "shop-killswitch-route: sorry-page")

	// The platform takes the label away: the namespace no longer follows
	// the kill switch (failurePolicy Passive: no overlay).
	kubectl(t, "", "label", "namespace", ns, strings.Split(publicTier, "=")[0]+"-")
	for _, sw := range []string{"di/shop-killswitch", "dhr/shop-killswitch-route"} {
		kubectl(t, "", "wait", "-n", ns, "--for=condition=Ready=False", sw, "--timeout=30s")
		if got := kubectl(t, "", "get", "-n", ns, sw, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].reason}`); got != "StateNotAdmitted" {
			t.Errorf("%s Ready reason %q without the label, want StateNotAdmitted", sw, got)
		}
	}
	kubectl(t, "", "wait", "-n", ns, "--for=delete", "ingress/shop-killswitch", "httproute/shop-killswitch-route", "--timeout=30s")
	check("not admitted", []string{"shop: shop.example.com/ forward to shop"}, "shop-route: shop")

	// The label is back: the overlay is back at once, the kill switch being on.
	kubectl(t, "", "label", "namespace", ns, publicTier)
	waitSwitches(t, ns, true, "di/shop-killswitch", "dhr/shop-killswitch-route")
	check("admitted again", []string{
		"shop-killswitch: shop.example.com/ fixed-response 503",
		"shop: shop.example.com/ forward to shop",
	}, "shop-killswitch-route: sorry-page")

	flipClusterState(t, ns, "public-killswitch", "200", "di/shop-killswitch", "dhr/shop-killswitch-route")
	check("all clear", []string{"shop: shop.example.com/ forward to shop"}, "shop-route: shop")
}

// TestRecipeWindowOrKillSwitch: one anyOf switch sends the blog to its
// maintenance page when its own window opens or when the platform's kill
// switch fires, and back only when neither is on; kubectl shows STATE
// anyOf(2) and what each entry decided.
func TestRecipeWindowOrKillSwitch(t *testing.T) {
	ns := newNamespace(t, "recipe")
	kubectl(t, "", "label", "namespace", ns, publicTier)
	for _, file := range []string{"platform-killswitch.yaml", "window-or-killswitch.yaml"} {
		out, stderr, err := runKubectl("", "apply", "-n", ns, "-f", filepath.Join(recipesDir, file))
		if err != nil || strings.Contains(stderr, "Warning:") {
			t.Fatalf("kubectl apply -f %s: %v\n%s%s", file, err, out, stderr)
		}
	}
	t.Cleanup(func() {
		_, _, _ = runKubectl("", "patch", "cdis", "public-killswitch", "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"200"}}}`)
	})
	waitReady(t, ns)
	backend := func() string {
		ing := getIngress(t, ns, "blog")
		return ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name
	}
	states := func() string {
		return strings.TrimSpace(kubectl(t, "", "get", "-n", ns, "di", "blog", "-o",
			`jsonpath={.status.state}{range .status.states[*]} {.name}={.matched}/{.reason}{end}`))
	}
	check := func(when, wantBackend, wantStates string) {
		t.Helper()
		if got := backend(); got != wantBackend {
			t.Errorf("%s: blog.example.com goes to %q, want %q", when, got, wantBackend)
		}
		if got := states(); got != wantStates {
			t.Errorf("%s: status.state and status.states = %q, want %q", when, got, wantStates)
		}
	}
	check("neither on", "blog", "anyOf(2) platform=False/NotMatched window=False/NotMatched")
	if got := tables(kubectl(t, "", "get", "-n", ns, "di", "blog"))[0].cells("STATE", "ACTIVE"); !slices.Equal(got[0], []string{"anyOf(2)", "False"}) {
		t.Errorf("kubectl get di blog: STATE ACTIVE = %q, want anyOf(2) False", got[0])
	}

	flipState(t, ns, "blog-window", "503", "di/blog")
	check("the window open", "blog-maintenance", "anyOf(2) platform=False/NotMatched window=True/Matched")

	kubectl(t, "", "patch", "cdis", "public-killswitch", "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"503"}}}`)
	kubectl(t, "", "wait", "-n", ns, "--for=jsonpath={.status.states[0].matched}=True", "di/blog", "--timeout=30s")
	// The window closes while the kill switch is on: still active.
	kubectl(t, "", "patch", "-n", ns, "dis", "blog-window", "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"200"}}}`)
	kubectl(t, "", "wait", "-n", ns, "--for=jsonpath={.status.states[1].matched}=False", "di/blog", "--timeout=30s")
	waitSwitches(t, ns, true, "di/blog")
	check("the kill switch on, the window closed", "blog-maintenance", "anyOf(2) platform=True/Matched window=False/NotMatched")
	if got := kubectl(t, "", "get", "-n", ns, "di", "blog", "-o", `jsonpath={.status.conditions[?(@.type=="Active")].message}`); got != `platform matched (platform: state "public-killswitch" responded 503 as expected)` {
		t.Errorf("Active's message = %q, want it to name the platform's entry", got)
	}

	flipClusterState(t, ns, "public-killswitch", "200", "di/blog")
	check("neither on again", "blog", "anyOf(2) platform=False/NotMatched window=False/NotMatched")
}

// TestRecipeAppDown: recipe 8's switch follows the app's Service through
// shop-app-up with no one flipping anything: the sorry page once the
// Service's endpoints have all been not ready for unavailableAfter, the
// app again once they have been ready for availableAfter; the shop's own
// window and the platform's kill switch still send it to the sorry page;
// status.states and the Active message name the entry that decided. The
// test writes the Service's EndpointSlice itself (a local control plane
// runs no EndpointSlice controller), with addresses nothing sends a
// request to: the Ingress's class is nginx, which no proxy here serves.
func TestRecipeAppDown(t *testing.T) {
	ns := newNamespace(t, "recipe")
	kubectl(t, "", "label", "namespace", ns, publicTier)
	for _, file := range []string{"platform-killswitch.yaml", "app-down.yaml"} {
		out, stderr, err := runKubectl("", "apply", "-n", ns, "-f", filepath.Join(recipesDir, file))
		if err != nil || strings.Contains(stderr, "Warning:") {
			t.Fatalf("kubectl apply -f %s: %v\n%s%s", file, err, out, stderr)
		}
	}
	t.Cleanup(func() {
		_, _, _ = runKubectl("", "patch", "cdis", "public-killswitch", "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"200"}}}`)
		// Leave no endpoint of 10.x behind for the tests after this one.
		_, _, _ = runKubectl("", "delete", "-n", ns, "endpointslice", "shop-app-1", "--ignore-not-found")
	})
	const unavailableAfter, availableAfter = 2 * time.Second, 3 * time.Second
	pods := []string{"10.244.8.11", "10.244.8.12"}

	backend := func() string {
		return getIngress(t, ns, "shop-app").Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name
	}
	states := func() string {
		return strings.TrimSpace(kubectl(t, "", "get", "-n", ns, "di", "shop-app", "-o",
			`jsonpath={.status.state}{range .status.states[*]} {.name}={.matched}/{.reason}{end}`))
	}
	check := func(when, wantBackend, wantStates string) {
		t.Helper()
		if got := backend(); got != wantBackend {
			t.Errorf("%s: shop-app.example.com goes to %q, want %q", when, got, wantBackend)
		}
		if got := states(); got != wantStates {
			t.Errorf("%s: status.state and status.states = %q, want %q", when, got, wantStates)
		}
	}
	active := func(when, want string) {
		t.Helper()
		if got := kubectl(t, "", "get", "-n", ns, "di", "shop-app", "-o", `jsonpath={.status.conditions[?(@.type=="Active")].message}`); got != want {
			t.Errorf("%s: Active's message = %q, want %q", when, got, want)
		}
	}
	stateReady := func(when, want string) {
		t.Helper()
		if got := kubectl(t, "", "get", "-n", ns, "dis", "shop-app-up", "-o",
			`jsonpath={.status.mode} {.status.statusCode} {.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].reason} {.status.conditions[?(@.type=="Ready")].message}`); got != want {
			t.Errorf("%s: shop-app-up's mode, code and Ready = %q, want %q", when, got, want)
		}
	}
	// waitAnswer waits until shop-app-up answers code and returns how long
	// after since that was seen.
	waitAnswer := func(code string, since time.Time) time.Duration {
		t.Helper()
		kubectl(t, "", "wait", "-n", ns, "--for=jsonpath={.status.statusCode}="+code, "dis/shop-app-up", "--timeout=60s")
		return time.Since(since)
	}
	// slice writes the Service's one EndpointSlice, as the EndpointSlice
	// controller does when the pods' readiness changes.
	slice := func(ready bool) time.Time {
		t.Helper()
		s := builders.EndpointSlice(ns, "shop-app-1", "shop-app")
		if ready {
			s.Ready(pods...)
		} else {
			s.NotReady(pods...)
		}
		edited := time.Now()
		apply(t, objectYAML(t, s.Obj()))
		return edited
	}

	// Without its Service the state has no response: the app-down entry
	// decides nothing and the shop stays up (failurePolicy Passive).
	waitServiceNotFound(t, ns, "shop-app-up")
	waitSwitchesReady(t, ns, "di")
	waitSwitches(t, ns, false, "di/shop-app")
	check("no Service", "shop-app", "anyOf(3) window=False/NotMatched app-down=Unknown/NoResponse platform=False/NotMatched")

	// Short delays, so that the test is quick; then the app's Service, as
	// its own manifests create it, with two ready pods.
	kubectl(t, "", "patch", "-n", ns, "dis", "shop-app-up", "--type", "merge", "-p",
		fmt.Sprintf(`{"spec":{"service":{"unavailableAfter":%q,"availableAfter":%q}}}`, unavailableAfter, availableAfter))
	slice(true)
	apply(t, objectYAML(t, builders.Service(ns, "shop-app")))
	waitAnswer("200", time.Now())
	// The switch has seen the 200 (a Service seen before its slice
	// answers 503 at first).
	kubectl(t, "", "wait", "-n", ns, `--for=jsonpath={.status.states[?(@.name=="app-down")].matched}=False`, "di/shop-app", "--timeout=30s")
	waitSwitches(t, ns, false, "di/shop-app")
	waitReady(t, ns)
	stateReady("the app up", fmt.Sprintf("Service 200 True/EndpointsCounted Service %s/shop-app had 2 ready endpoints (minReady 1) when the answer turned 200", ns))
	if got := tables(kubectl(t, "", "get", "-n", ns, "dis", "shop-app-up"))[0].cells("MODE", "CODE"); !slices.Equal(got[0], []string{"Service", "200"}) {
		t.Errorf("kubectl get dis shop-app-up: MODE CODE = %q, want Service 200", got[0])
	}
	check("the app up", "shop-app", "anyOf(3) window=False/NotMatched app-down=False/NotMatched platform=False/NotMatched")

	// The app's pods all fail their readiness probes: the sorry page, no
	// sooner than unavailableAfter, with no one touching a state.
	generation := kubectl(t, "", "get", "-n", ns, "dis", "shop-app-up", "-o", "jsonpath={.metadata.generation}")
	edited := slice(false)
	down := waitAnswer("503", edited)
	waitSwitches(t, ns, true, "di/shop-app")
	check("the app down", "shop-sorry", "anyOf(3) window=False/NotMatched app-down=True/Matched platform=False/NotMatched")
	active("the app down", `app-down matched (app-down: state "shop-app-up" responded 503 as expected)`)
	stateReady("the app down", fmt.Sprintf("Service 503 True/EndpointsCounted Service %s/shop-app had 0 ready endpoints (minReady 1) when the answer turned 503", ns))
	if down < unavailableAfter {
		t.Errorf("shop-app-up answered 503 %s after the endpoints went not ready, before unavailableAfter (%s)", down.Round(time.Millisecond), unavailableAfter)
	}

	// The pods are ready again: the shop, no sooner than availableAfter.
	edited = slice(true)
	up := waitAnswer("200", edited)
	waitSwitches(t, ns, false, "di/shop-app")
	check("the app back", "shop-app", "anyOf(3) window=False/NotMatched app-down=False/NotMatched platform=False/NotMatched")
	stateReady("the app back", fmt.Sprintf("Service 200 True/EndpointsCounted Service %s/shop-app had 2 ready endpoints (minReady 1) when the answer turned 200", ns))
	if up < availableAfter {
		t.Errorf("shop-app-up answered 200 %s after the endpoints were ready again, before availableAfter (%s)", up.Round(time.Millisecond), availableAfter)
	}
	if got := kubectl(t, "", "get", "-n", ns, "dis", "shop-app-up", "-o", "jsonpath={.metadata.generation}"); got != generation {
		t.Errorf("shop-app-up's generation went from %s to %s: someone edited the state", generation, got)
	}
	t.Logf("shop-app-up answered 503 %s after the endpoints went not ready (unavailableAfter %s), 200 %s after they were ready again (availableAfter %s)",
		down.Round(time.Millisecond), unavailableAfter, up.Round(time.Millisecond), availableAfter)

	// The shop's own window, with the app up.
	flipState(t, ns, "shop-app-window", "503", "di/shop-app")
	check("the window open", "shop-sorry", "anyOf(3) window=True/Matched app-down=False/NotMatched platform=False/NotMatched")
	active("the window open", `window matched (window: state "shop-app-window" responded 503 as expected)`)
	flipState(t, ns, "shop-app-window", "200", "di/shop-app")
	check("the window closed", "shop-app", "anyOf(3) window=False/NotMatched app-down=False/NotMatched platform=False/NotMatched")

	// The platform's kill switch, with the app up.
	flipClusterState(t, ns, "public-killswitch", "503", "di/shop-app")
	check("the kill switch on", "shop-sorry", "anyOf(3) window=False/NotMatched app-down=False/NotMatched platform=True/Matched")
	active("the kill switch on", `platform matched (platform: state "public-killswitch" responded 503 as expected)`)
	flipClusterState(t, ns, "public-killswitch", "200", "di/shop-app")
	check("all clear", "shop-app", "anyOf(3) window=False/NotMatched app-down=False/NotMatched platform=False/NotMatched")
}

// TestRecipeFilesStayWithinALBLimits reads every recipe file: each ALB
// fixed-response body fits the ALB's 1024 bytes and no ALB redirect is
// permanent.
func TestRecipeFilesStayWithinALBLimits(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(controlplane.RepoRoot(), recipesDir, "*.yaml"))
	if err != nil || len(files) < 5 {
		t.Fatalf("recipe files: %v %v", files, err)
	}
	actions := 0
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		decoder := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := decoder.Decode(&obj.Object); err != nil {
				break
			}
			for _, mode := range []string{"passiveIngress", "activeIngress"} {
				annotations, _, _ := unstructured.NestedStringMap(obj.Object, "spec", mode, "template", "metadata", "annotations")
				for k, v := range annotations {
					if !strings.HasPrefix(k, "alb.ingress.kubernetes.io/actions.") {
						continue
					}
					actions++
					var a albAction
					if err := json.Unmarshal([]byte(v), &a); err != nil {
						t.Errorf("%s: %s: %v", filepath.Base(file), k, err)
						continue
					}
					if a.FixedResponseConfig != nil && len(a.FixedResponseConfig.MessageBody) > 1024 {
						t.Errorf("%s: %s: a body of %d bytes; an ALB fixed response holds at most 1024", filepath.Base(file), k, len(a.FixedResponseConfig.MessageBody))
					}
					if a.RedirectConfig != nil && a.RedirectConfig.StatusCode != "HTTP_302" {
						t.Errorf("%s: %s: redirect %s, want HTTP_302", filepath.Base(file), k, a.RedirectConfig.StatusCode)
					}
				}
			}
		}
		_ = f.Close()
	}
	if actions == 0 {
		t.Error("found no ALB actions in the recipes")
	}
}

// TestRecipeWarningForPermanentRedirects: kubectl apply of a template with a
// permanent redirect succeeds and prints the webhook's warning; 302 and 307
// print none.
func TestRecipeWarningForPermanentRedirects(t *testing.T) {
	ns := newNamespace(t, "warnings")
	const advice = "is a permanent redirect: browsers and caches keep it after the maintenance ends; use 302 or 307"
	route := func(name string, code int) string {
		return strings.Replace(dynamicHTTPRouteManifest(ns, name, "flag"), "statusCode: 302", fmt.Sprintf("statusCode: %d", code), 1)
	}
	ingress := func(name, annotations string) string {
		return fmt.Sprintf(`apiVersion: ingress.dynamicingress.io/v1beta1
kind: DynamicIngress
metadata: {namespace: %[1]s, name: %[2]s}
spec:
  target: {name: %[2]s}
  state: flag
  expected: {statusCode: "503"}
  activeIngress:
    template:
      metadata:
        annotations: {%[3]s}
      spec:
        rules:
        - host: %[2]s.example.com
          http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: sorry, port: {name: use-annotation}}}}]}
`, ns, name, annotations)
	}
	tests := []struct {
		name, manifest, created, warning string
	}{
		{"HTTPRoute 301", route("moved", 301), "dynamichttproute.ingress.dynamicingress.io/moved created",
			"Warning: spec.activeRoute.template.spec.rules[0].filters[0].requestRedirect.statusCode: 301 " + advice},
		{"HTTPRoute 308", route("moved-308", 308), "dynamichttproute.ingress.dynamicingress.io/moved-308 created",
			"Warning: spec.activeRoute.template.spec.rules[0].filters[0].requestRedirect.statusCode: 308 " + advice},
		{"ALB HTTP_301", ingress("alb-moved", `alb.ingress.kubernetes.io/actions.sorry: '{"type":"redirect","redirectConfig":{"host":"status.example.com","statusCode":"HTTP_301"}}'`),
			"dynamicingress.ingress.dynamicingress.io/alb-moved created",
			"Warning: spec.activeIngress.template.metadata.annotations[alb.ingress.kubernetes.io/actions.sorry]: redirectConfig.statusCode HTTP_301 " +
				advice + " (an ALB redirect has HTTP_302 and no 307)"},
		{"nginx permanent-redirect", ingress("nginx-moved", `nginx.ingress.kubernetes.io/permanent-redirect: "https://status.example.com/"`),
			"dynamicingress.ingress.dynamicingress.io/nginx-moved created",
			"Warning: spec.activeIngress.template.metadata.annotations[nginx.ingress.kubernetes.io/permanent-redirect]: 301 " +
				"(ingress-nginx's default without nginx.ingress.kubernetes.io/permanent-redirect-code) " + advice +
				" (set nginx.ingress.kubernetes.io/permanent-redirect-code)"},
		{"HTTPRoute 302", route("found", 302), "dynamichttproute.ingress.dynamicingress.io/found created", ""},
		{"HTTPRoute 307", route("temporary", 307), "dynamichttproute.ingress.dynamicingress.io/temporary created", ""},
		{"ALB HTTP_302", ingress("alb-found", `alb.ingress.kubernetes.io/actions.sorry: '{"type":"redirect","redirectConfig":{"host":"status.example.com","statusCode":"HTTP_302"}}'`),
			"dynamicingress.ingress.dynamicingress.io/alb-found created", ""},
		{"nginx permanent-redirect with code 307", ingress("nginx-307", `nginx.ingress.kubernetes.io/permanent-redirect: "https://status.example.com/", nginx.ingress.kubernetes.io/permanent-redirect-code: "307"`),
			"dynamicingress.ingress.dynamicingress.io/nginx-307 created", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, err := runKubectl(tt.manifest, "apply", "-f", "-")
			if err != nil {
				t.Fatalf("kubectl apply: %v\n%s%s", err, out, stderr)
			}
			if !strings.Contains(out, tt.created) {
				t.Errorf("kubectl apply printed %q, want %q", out, tt.created)
			}
			switch {
			case tt.warning == "" && strings.Contains(stderr, "Warning:"):
				t.Errorf("kubectl apply printed a warning:\n%s", stderr)
			case tt.warning != "" && strings.TrimSpace(stderr) != tt.warning:
				t.Errorf("kubectl apply printed on stderr:\n%s\nwant:\n%s", stderr, tt.warning)
			}
		})
	}
}

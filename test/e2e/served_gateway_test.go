package e2e

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// routeShopIP is the ClusterIP of the route test's storefront Service, an
// address of the loopback Service range where its local server listens,
// taken from the range's first 16 addresses, which the API server never
// assigns on its own (controlplane.ServiceCIDR). One test uses it, and
// deletes its Service: ClusterIPs are unique in the suite's cluster.
const routeShopIP = "127.0.1.12"

// routeRedirect is the Location of the route's active shape through
// Traefik (the filter sets no scheme).
const routeRedirect = "//status.example.com/"

// TestServedRouteThroughTraefiksGateway: Traefik's Gateway API provider
// serves the switch's HTTPRoute, attached to a Gateway of Traefik's
// GatewayClass. Once the state flips, kubectl dynamic wait --for=served
// returns with the route served in the active mode, and from then an
// outside client gets the active shape's redirect; once it flips back, the
// same with the storefront. Each time Traefik has accepted the HTTPRoute's
// generation the operator wrote (docs/behaviour.md, "Served").
func TestServedRouteThroughTraefiksGateway(t *testing.T) {
	if _, err := os.Stat(controlplane.TraefikBinary()); err != nil {
		t.Skipf("Traefik is not built (%s): run `make traefik`", controlplane.TraefikBinary())
	}
	ns := newNamespace(t, "served-route")
	host := ns + ".example.com"
	traefik := startTraefik(t, controlplane.TraefikOptions{Gateway: true})
	shop := startBackend(t, routeShopIP, http.StatusOK, shopAnswer)
	// The outside client takes the active shape's redirect as its answer.
	s := &servedStorefront{ns: ns, host: host, traefik: traefik, shop: shop, servedURL: "http://" + traefik.Address + "/",
		client: &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}

	gateway := builders.TraefikGateway(ns, "public", controlplane.TraefikGatewayController, traefik.Port())
	// The cluster-scoped GatewayClass and the Service's ClusterIP would
	// outlive the test's namespace: a rerun in the same cluster
	// (-count=2) needs both back.
	t.Cleanup(func() {
		kubectl(t, "", "delete", "gatewayclass", gateway[0].GetName(), "--ignore-not-found")
		kubectl(t, "", "delete", "-n", ns, "service", "shop", "--ignore-not-found")
	})
	manifests := []string{stateManifest(ns, "killswitch", "200"), objectYAML(t, builders.LoopbackClusterIP(ns, "shop", routeShopIP, shop.port))}
	for _, o := range gateway {
		manifests = append(manifests, objectYAML(t, o))
	}
	apply(t, manifests...)
	apply(t, builders.DynamicHTTPRoute(ns, "storefront").State("killswitch").ExpectCode("503").
		Passive(builders.RouteTo(host, "shop").Port(shop.port)).
		Active(builders.RedirectTo(host, "status.example.com")).
		Served(builders.Served(s.servedURL, "302", "200").Header("Host", host).Period(250*time.Millisecond).Timeout(time.Minute)).YAML())
	kubectl(t, "", "wait", "-n", ns, "--for=condition=Served", "dhr/storefront", "--timeout=90s")
	if got := s.answer(); got != "200 "+shopAnswer {
		t.Fatalf("before the flip, through Traefik: %s, want 200 %s", got, shopAnswer)
	}
	routeAccepted(t, ns)

	for _, flip := range []struct{ code, answer, wait, mode string }{
		{"503", "302 -> " + routeRedirect, "all 1 switch in shape and served (1 active, 0 passive)", "Active"},
		{"200", "200 " + shopAnswer, "all 1 switch in shape and served (0 active, 1 passive)", "Passive"},
	} {
		edited := s.flip(t, flip.code)
		// Served means an outside client gets the new shape from then on.
		s.waitServed(t, flip.wait)
		servedAfter := time.Since(edited)
		if got := s.answer(); got != flip.answer {
			t.Errorf("once the flip to %s was served, through Traefik: %q, want %q", flip.code, got, flip.answer)
		}
		served := kubectl(t, "", "get", "-n", ns, "dhr", "storefront", "-o",
			`jsonpath={.status.conditions[?(@.type=="Served")].status}/{.status.conditions[?(@.type=="Served")].reason} {.status.served.mode}`)
		if want := "True/Served " + flip.mode; served != want {
			t.Errorf("after the flip to %s the route's Served is %q, want %q", flip.code, served, want)
		}
		routeAccepted(t, ns)
		t.Logf("kubectl dynamic wait --for=served returned %s after the state's edit to %s", servedAfter.Round(time.Millisecond), flip.code)
	}
}

// routeAccepted fails unless the Gateway "public" (Traefik) accepted the
// current generation of the HTTPRoute "storefront".
func routeAccepted(t *testing.T, ns string) {
	t.Helper()
	got := kubectl(t, "", "get", "-n", ns, "httproute", "storefront", "-o",
		`jsonpath={.metadata.generation} {.status.parents[0].parentRef.name} {.status.parents[0].conditions[?(@.type=="Accepted")].status} {.status.parents[0].conditions[?(@.type=="Accepted")].observedGeneration}`)
	f := strings.Fields(got)
	if len(f) != 4 || f[1] != "public" || f[2] != "True" || f[3] != f[0] {
		t.Errorf("the HTTPRoute's generation, parent, Accepted and its observedGeneration: %q, want the Gateway public to accept the current generation", got)
	}
}

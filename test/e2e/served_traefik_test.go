package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controller"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// These tests put a real data plane between the operator and its users:
// Traefik on loopback serves the switch's Ingress, the storefront and the
// sorry page are local servers behind ExternalName Services, and an
// outside client requests the switch's host through Traefik, as users do
// (docs/behaviour.md, "Served").

// outsideAgent is the User-Agent of the tests' own requests, so that the
// backends tell them from the operator's checks.
const outsideAgent = "e2e-outside-client"

// The answers of the two backends.
const (
	shopAnswer  = "storefront"
	sorryAnswer = "sorry, back soon"
)

// loopbackBackend is a local server answering every request with one status and
// body, counting the requests that are not the tests' own.
type loopbackBackend struct {
	port int32
	// checks counts the requests from anyone but the outside client:
	// the operator's served checks, through Traefik.
	checks atomic.Int64
}

func startBackend(t *testing.T, ip string, code int, body string) *loopbackBackend {
	t.Helper()
	b := &loopbackBackend{}
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.UserAgent() != outsideAgent {
			b.checks.Add(1)
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}))
	_ = s.Listener.Close()
	s.Listener = l
	s.Start()
	t.Cleanup(s.Close)
	b.port = suite.ServerPort(s)
	return b
}

// servedStorefront is one test's data plane and switch: Traefik, the
// storefront (200) and the sorry page (503) behind it, and the
// DynamicIngress "storefront" of ns following the state "killswitch"
// (active while it answers 503) for host. The route's test
// (served_gateway_test.go) uses its outside client, flip and waitServed,
// with a DynamicHTTPRoute and no sorry page.
type servedStorefront struct {
	ns, host     string
	traefik      *controlplane.Traefik
	shop, sorry  *loopbackBackend
	period       time.Duration
	client       *http.Client
	servedURL    string
	activeShape  *builders.IngressShape
	passiveShape *builders.IngressShape
}

// newServedStorefront starts Traefik (applying configurations at most every
// throttle, 0 for its default 2 s) and the two backends, creates their
// Services and the state "killswitch" (200) in a new namespace; the
// switch's checks request every period.
func newServedStorefront(t *testing.T, prefix string, period, throttle time.Duration) *servedStorefront {
	t.Helper()
	if _, err := os.Stat(controlplane.TraefikBinary()); err != nil {
		t.Skipf("Traefik is not built (%s): run `make traefik`", controlplane.TraefikBinary())
	}
	ns := newNamespace(t, prefix)
	traefik := startTraefik(t, controlplane.TraefikOptions{Throttle: throttle})
	s := &servedStorefront{ns: ns, host: ns + ".example.com", traefik: traefik,
		shop:   startBackend(t, "127.0.0.1", http.StatusOK, shopAnswer),
		sorry:  startBackend(t, "127.0.0.1", http.StatusServiceUnavailable, sorryAnswer),
		period: period, client: &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}}
	s.servedURL = "http://" + traefik.Address + "/"
	s.passiveShape = builders.IngressTo(s.host, "shop").Port(s.shop.port)
	s.activeShape = builders.IngressTo(s.host, "sorry").Port(s.sorry.port)
	apply(t, serviceYAML(t, ns, "shop", s.shop.port), serviceYAML(t, ns, "sorry", s.sorry.port), stateManifest(ns, "killswitch", "200"))
	return s
}

// serviceYAML is a LoopbackService for kubectl.
func serviceYAML(t *testing.T, ns, name string, port int32) string {
	t.Helper()
	return objectYAML(t, builders.LoopbackService(ns, name, port))
}

// objectYAML is obj as a manifest for kubectl, with its apiVersion and kind.
func objectYAML(t *testing.T, obj client.Object) string {
	t.Helper()
	gvk, _, err := controller.NewScheme().ObjectKinds(obj)
	if err != nil || len(gvk) == 0 {
		t.Fatalf("no kind for %T: %v", obj, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk[0])
	out, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// startTraefik starts Traefik for one test, reading the suite's cluster,
// with its log in the test's output when the test fails.
func startTraefik(t *testing.T, opts controlplane.TraefikOptions) *controlplane.Traefik {
	t.Helper()
	opts.Dir, opts.Kubeconfig = t.TempDir(), cluster.Kubeconfig
	traefik, err := controlplane.StartTraefik(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		traefik.Stop()
		if t.Failed() {
			log, _ := os.ReadFile(traefik.Log)
			t.Logf("Traefik's log:\n%s", log)
		}
	})
	return traefik
}

// storefront is the switch: the passive and active shapes, and
// spec.served requesting the host through Traefik (503 while active, 200
// while passive) every period, NotServed after timeout.
func (s *servedStorefront) storefront(timeout time.Duration) string {
	return builders.DynamicIngress(s.ns, "storefront").State("killswitch").ExpectCode("503").
		Passive(s.passiveShape).Active(s.activeShape).
		Served(builders.Served(s.servedURL, "503", "200").Header("Host", s.host).Period(s.period).Timeout(timeout)).YAML()
}

// get requests the host through Traefik as an outside client: the status
// code and the body, or "-> Location" for a redirect.
func (s *servedStorefront) get(host string) (code int, body string, err error) {
	req, err := http.NewRequest(http.MethodGet, s.servedURL, nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = host
	req.Header.Set("User-Agent", outsideAgent)
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	if loc := resp.Header.Get("Location"); loc != "" {
		// A redirect (the client of the route's test does not follow
		// them): where to.
		return resp.StatusCode, "-> " + loc, nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b), err
}

// answer is what the outside client gets for the storefront's host:
// "200 storefront".
func (s *servedStorefront) answer() string {
	code, body, err := s.get(s.host)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d %s", code, body)
}

// firstSeen requests host through Traefik every 20ms until its answer, as
// "code body", starts with want ("503 sorry, back soon", "404 "), and
// returns how long after since that was.
func (s *servedStorefront) firstSeen(t *testing.T, host, want string, since time.Time) time.Duration {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var last string
	for {
		code, body, err := s.get(host)
		last = fmt.Sprintf("%d %s", code, body)
		if err != nil {
			last = err.Error()
		}
		if strings.HasPrefix(last, want) {
			return time.Since(since)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s through Traefik never answered %q (last answer: %s)", host, want, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// flip sets the state's fixed status with kubectl and returns when the
// edit was stored (kubectl returned).
func (s *servedStorefront) flip(t *testing.T, code string) time.Time {
	t.Helper()
	kubectl(t, "", "patch", "-n", s.ns, "dis", "killswitch", "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"`+code+`"}}}`)
	return time.Now()
}

// waitServed waits with kubectl dynamic wait --for=served until the
// storefront is seen served in the mode the state selects.
func (s *servedStorefront) waitServed(t *testing.T, want string) {
	t.Helper()
	out := plugin(t, "wait", "killswitch", "-n", s.ns, "--for=served", "--timeout=90s")
	if !strings.Contains(out, want) {
		t.Fatalf("kubectl dynamic wait killswitch --for=served printed %q, want %q", out, want)
	}
}

// served is the storefront's Served condition and status.served as
// "status/reason mode after".
func (s *servedStorefront) served(t *testing.T) string {
	t.Helper()
	return kubectl(t, "", "get", "-n", s.ns, "di", "storefront", "-o",
		`jsonpath={.status.conditions[?(@.type=="Served")].status}/{.status.conditions[?(@.type=="Served")].reason} {.status.served.mode} {.status.served.after}`)
}

// TestServedFlipThroughTraefik: with Traefik serving the switch's Ingress,
// an outside client gets the storefront, then the sorry page once the
// state flips, then the storefront again once it flips back; each time
// kubectl dynamic wait --for=served returns with the switch served in the
// state's mode.
func TestServedFlipThroughTraefik(t *testing.T) {
	s := newServedStorefront(t, "served-traefik", 250*time.Millisecond, 0)
	apply(t, s.storefront(time.Minute))
	kubectl(t, "", "wait", "-n", s.ns, "--for=condition=Served", "di/storefront", "--timeout=90s")
	if got := s.answer(); got != "200 "+shopAnswer {
		t.Fatalf("before the flip, through Traefik: %s, want 200 %s", got, shopAnswer)
	}

	edited := s.flip(t, "503")
	seen := s.firstSeen(t, s.host, "503 "+sorryAnswer, edited)
	s.waitServed(t, "all 1 switch in shape and served (1 active, 0 passive)")
	if got := s.answer(); got != "503 "+sorryAnswer {
		t.Errorf("after the flip and served, through Traefik: %s, want 503 %s", got, sorryAnswer)
	}
	if got := s.served(t); !strings.HasPrefix(got, "True/Served Active ") {
		t.Errorf("after the flip the storefront's Served is %q, want True/Served in Active mode", got)
	}
	t.Logf("the sorry page was served %s after the state's edit; Served: %s", seen.Round(time.Millisecond), s.served(t))

	edited = s.flip(t, "200")
	seen = s.firstSeen(t, s.host, "200 "+shopAnswer, edited)
	s.waitServed(t, "all 1 switch in shape and served (0 active, 1 passive)")
	if got := s.answer(); got != "200 "+shopAnswer {
		t.Errorf("after the flip back and served, through Traefik: %s, want 200 %s", got, shopAnswer)
	}
	if got := s.served(t); !strings.HasPrefix(got, "True/Served Passive ") {
		t.Errorf("after the flip back the storefront's Served is %q, want True/Served in Passive mode", got)
	}
	t.Logf("the storefront was served %s after the state's edit; Served: %s", seen.Round(time.Millisecond), s.served(t))
}

// TestServedAfterIsWhatClientsSee: status.served.after, how long after the
// target's write the operator saw the new shape served, is within one
// period and one second of how long after the state's edit an outside
// client polling Traefik every 20ms first got it. The operator's check
// sees the shape at most one period (and one request) after the client
// does, and the target is written a little after the state's edit (a
// state and a switch reconcile, well under a second on a loaded machine),
// hence the tolerance. Traefik runs with a 5 s throttle, and right before
// each edit it is made to apply another Ingress, so that it holds the flip
// for most of those 5 s: the flip is served seconds after the edit, which a
// check that did not wait for the data plane (after about 0) cannot match.
func TestServedAfterIsWhatClientsSee(t *testing.T) {
	s := newServedStorefront(t, "served-after", 250*time.Millisecond, pokedThrottle)
	apply(t, s.storefront(time.Minute))
	kubectl(t, "", "wait", "-n", s.ns, "--for=condition=Served", "di/storefront", "--timeout=90s")
	tolerance := s.period + time.Second

	for i, flip := range []struct{ code, answer, wait string }{
		{"503", "503 " + sorryAnswer, "all 1 switch in shape and served (1 active, 0 passive)"},
		{"200", "200 " + shopAnswer, "all 1 switch in shape and served (0 active, 1 passive)"},
	} {
		// Traefik applies a change at once when it applied none for its
		// throttle, then holds the next for the rest of it.
		poke := fmt.Sprintf("poke-%d.%s", i, s.host)
		apply(t, pokeIngress(s.ns, fmt.Sprintf("poke-%d", i), poke, s.shop.port))
		s.firstSeen(t, poke, "200 "+shopAnswer, time.Now())

		edited := s.flip(t, flip.code)
		seen := s.firstSeen(t, s.host, flip.answer, edited)
		s.waitServed(t, flip.wait)
		raw := kubectl(t, "", "get", "-n", s.ns, "di", "storefront", "-o", "jsonpath={.status.served.after}")
		after, err := time.ParseDuration(raw)
		if err != nil {
			t.Fatalf("status.served.after %q: %v", raw, err)
		}
		if seen < 2*tolerance {
			t.Errorf("state %s: Traefik served the flip %s after the state's edit: its throttle did not hold it, and this test cannot tell a check that waits for the data plane from one that does not",
				flip.code, seen.Round(time.Millisecond))
		}
		diff := after - seen
		t.Logf("state %s: the outside client got %q %s after the state's edit; status.served.after %s (difference %s, tolerance ±%s); Served: %s",
			flip.code, flip.answer, seen.Round(time.Millisecond), raw, diff.Round(time.Millisecond), tolerance, s.served(t))
		if diff > tolerance || diff < -tolerance {
			t.Errorf("state %s: status.served.after is %s, the outside client first got the new shape %s after the state's edit: more than %s apart",
				flip.code, raw, seen.Round(time.Millisecond), tolerance)
		}
	}
}

// pokedThrottle is Traefik's throttle in TestServedAfterIsWhatClientsSee.
const pokedThrottle = 5 * time.Second

// pokeIngress is an Ingress for host to the storefront's backend, which
// Traefik serves: creating it makes Traefik apply a new configuration.
func pokeIngress(ns, name, host string, port int32) string {
	return fmt.Sprintf(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {namespace: %s, name: %s}
spec:
  rules:
  - host: %s
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: shop, port: {number: %d}}}}]}
`, ns, name, host, port)
}

// TestNotServedUnderAnUnservedClass: a switch whose active template names
// an IngressClass that no controller serves is written, but Traefik drops
// the host (404): past spec.served.timeout the switch is
// Served=False/NotServed with the last answer in the message, and exactly
// one NotServed Warning is recorded, not one per request.
func TestNotServedUnderAnUnservedClass(t *testing.T) {
	s := newServedStorefront(t, "not-served", 250*time.Millisecond, 0)
	class := s.ns + "-nobody"
	apply(t, fmt.Sprintf(`apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: %s}
spec: {controller: example.com/no-such-controller}
`, class))
	t.Cleanup(func() { _, _, _ = runKubectl("", "delete", "ingressclass", class, "--wait=false") })
	s.activeShape.ClassName(class)
	timeout := 5 * time.Second
	apply(t, s.storefront(timeout))
	kubectl(t, "", "wait", "-n", s.ns, "--for=condition=Served", "di/storefront", "--timeout=90s")

	edited := s.flip(t, "503")
	s.firstSeen(t, s.host, "404 ", edited)
	kubectl(t, "", "wait", "-n", s.ns, "--for=condition=Served=False", "di/storefront", "--timeout=90s")
	if took := time.Since(edited); took < timeout {
		t.Errorf("NotServed %s after the state's edit, before the timeout %s", took.Round(time.Millisecond), timeout)
	}
	want := fmt.Sprintf("False/NotServed active mode not served within 5s after the target was written: %s answered HTTP 404", s.servedURL)
	cond := kubectl(t, "", "get", "-n", s.ns, "di", "storefront", "-o",
		`jsonpath={.status.conditions[?(@.type=="Served")].status}/{.status.conditions[?(@.type=="Served")].reason} {.status.conditions[?(@.type=="Served")].message}`)
	if cond != want {
		t.Errorf("Served of the storefront:\n%s\nwant:\n%s", cond, want)
	}
	if got := kubectl(t, "", "get", "-n", s.ns, "di", "storefront", "-o", `jsonpath={.status.conditions[?(@.type=="Active")].status}`); got != "True" {
		t.Errorf("Active of the storefront is %q: NotServed must not change it", got)
	}

	// Several periods later: still one event, not repeated (a repeated
	// event shows as a series with a count).
	time.Sleep(10 * s.period)
	out := kubectl(t, "", "get", "events.events.k8s.io", "-n", s.ns, "--field-selector", "regarding.name=storefront,reason=NotServed",
		"-o", `jsonpath={range .items[*]}{.type} {.reason} {.series.count}{"\n"}{end}`)
	if got := strings.TrimSpace(out); got != "Warning NotServed" {
		t.Errorf("NotServed events of the storefront (type, reason, series count):\n%s\nwant exactly one Warning NotServed, not repeated", out)
	}
	describe := kubectl(t, "", "describe", "-n", s.ns, "di", "storefront")
	if n := strings.Count(describe, "NotServed"); n < 2 || !strings.Contains(describe, "Warning  NotServed") {
		t.Errorf("kubectl describe di storefront does not show the NotServed condition and event (%d mentions):\n%s", n, describe)
	}
	t.Logf("Served: %s", cond)
}

// TestServedNoRequestsOnceDecided: the operator requests the served URL
// while the shape it wrote is not yet served, and not once after: over
// several periods after Served turned True, the backends behind Traefik
// count no request but the outside client's.
func TestServedNoRequestsOnceDecided(t *testing.T) {
	s := newServedStorefront(t, "served-quiet", 250*time.Millisecond, 0)
	apply(t, s.storefront(time.Minute))
	kubectl(t, "", "wait", "-n", s.ns, "--for=condition=Served", "di/storefront", "--timeout=90s")
	quiet := func(phase string) {
		t.Helper()
		shop, sorry := s.shop.checks.Load(), s.sorry.checks.Load()
		time.Sleep(12 * s.period)
		if got := s.shop.checks.Load() - shop; got != 0 {
			t.Errorf("%s: the storefront's backend got %d requests from the operator in %s (12 periods) after Served", phase, got, 12*s.period)
		}
		if got := s.sorry.checks.Load() - sorry; got != 0 {
			t.Errorf("%s: the sorry page's backend got %d requests from the operator in %s (12 periods) after Served", phase, got, 12*s.period)
		}
	}
	if s.shop.checks.Load() == 0 {
		t.Fatal("the storefront is Served, but its backend got no request from the operator's check")
	}
	quiet("passive")

	s.flip(t, "503")
	s.waitServed(t, "all 1 switch in shape and served (1 active, 0 passive)")
	if s.sorry.checks.Load() == 0 {
		t.Fatal("the sorry page is Served, but its backend got no request from the operator's check")
	}
	quiet("active")
	t.Logf("requests from the operator's checks: storefront %d, sorry page %d; Served: %s", s.shop.checks.Load(), s.sorry.checks.Load(), s.served(t))
}

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// A `service` state under a real data plane (docs/behaviour.md, "A state
// that follows a Service"): Traefik on loopback serves a switch's Ingress,
// the storefront and its sorry page are local servers behind ExternalName
// Services, and the state follows another Service, the storefront's pods,
// whose EndpointSlice the test writes as the EndpointSlice controller
// would. Its addresses (10.x) are never sent a request: no Ingress names
// that Service, and a `service` state sends none.

// page is what a user sees of an answer: the status code, the first line of
// the body and the Retry-After header.
type page struct {
	code       int
	firstLine  string
	retryAfter string
}

func (p page) String() string {
	return fmt.Sprintf("%d %q Retry-After %q", p.code, p.firstLine, p.retryAfter)
}

// The two pages of the storefront's host, and the sorry page's body.
var (
	storefrontPage = page{code: http.StatusOK, firstLine: "storefront"}
	sorryPage      = page{code: http.StatusServiceUnavailable, firstLine: "sorry, back soon", retryAfter: "30"}
)

const sorryBody = "sorry, back soon\n<p>The shop is having trouble; try again in a minute.</p>\n"

// startSite starts a local server on 127.0.0.1 answering every request
// with code, body and headers, and returns its port.
func startSite(t *testing.T, code int, body string, headers map[string]string) int32 {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(s.Close)
	return suite.ServerPort(s)
}

// visitor requests a host through Traefik as a user does.
type visitor struct {
	url, host string
	client    *http.Client
}

// visit is one request: the page seen, or an error.
func (v visitor) visit() (page, error) {
	req, err := http.NewRequest(http.MethodGet, v.url, nil)
	if err != nil {
		return page{}, err
	}
	req.Host = v.host
	req.Header.Set("User-Agent", outsideAgent)
	resp, err := v.client.Do(req)
	if err != nil {
		return page{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	line, err := bufio.NewReader(io.LimitReader(resp.Body, 4096)).ReadString('\n')
	if err != nil && err != io.EOF {
		return page{}, err
	}
	return page{code: resp.StatusCode, firstLine: strings.TrimSuffix(line, "\n"), retryAfter: resp.Header.Get("Retry-After")}, nil
}

// waitFor visits every 50ms until the user sees want, and returns how long
// after since that was; it fails the test after limit. The other answers
// seen meanwhile are logged, counted.
func (v visitor) waitFor(t *testing.T, want page, since time.Time, limit time.Duration) time.Duration {
	t.Helper()
	others := map[string]int{}
	for {
		got, err := v.visit()
		if err == nil && got == want {
			if len(others) > 0 {
				t.Logf("before %s, users saw: %v", want, others)
			}
			return time.Since(since)
		}
		seen := got.String()
		if err != nil {
			seen = err.Error()
		}
		others[seen]++
		if time.Since(since) > limit {
			t.Fatalf("%s through Traefik: no %s within %s (answers seen: %v)", v.host, want, limit, others)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServiceStateThroughTraefik: a DynamicIngress follows a state that
// follows the storefront's pods' Service. Users asking Traefik for the
// storefront's host get the storefront; once the pods' endpoints are all
// not ready, the sorry page (503 with Retry-After), no sooner than
// unavailableAfter and with no one touching a state; once they are ready
// again, the storefront, no sooner than availableAfter; once the slice is
// deleted (the app scaled to 0), the sorry page again.
func TestServiceStateThroughTraefik(t *testing.T) {
	if _, err := os.Stat(controlplane.TraefikBinary()); err != nil {
		t.Skipf("Traefik is not built (%s): run `make traefik`", controlplane.TraefikBinary())
	}
	const unavailableAfter, availableAfter = 2 * time.Second, 3 * time.Second
	// Traefik applies a new configuration within its throttle (2 s); the
	// rest is for a loaded machine.
	const bound = time.Minute
	ns := newNamespace(t, "service-traefik")
	host := ns + ".example.com"
	traefik := startTraefik(t, controlplane.TraefikOptions{})
	storefrontPort := startSite(t, http.StatusOK, "storefront\n<p>Today's offers.</p>\n", nil)
	sorryPort := startSite(t, http.StatusServiceUnavailable, sorryBody, map[string]string{"Retry-After": "30", "Cache-Control": "no-store"})
	user := visitor{url: "http://" + traefik.Address + "/", host: host,
		client: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}}

	// The pods' Service and its one slice: nothing routes to them.
	pods := []string{"10.244.9.21", "10.244.9.22", "10.244.9.23"}
	slice := func(ready bool) string {
		s := builders.EndpointSlice(ns, "storefront-pods-1", "storefront-pods")
		if ready {
			s.Ready(pods...)
		} else {
			s.NotReady(pods...)
		}
		return objectYAML(t, s.Obj())
	}
	t.Cleanup(func() {
		_, _, _ = runKubectl("", "delete", "-n", ns, "endpointslice", "storefront-pods-1", "--ignore-not-found")
	})
	apply(t, slice(true), objectYAML(t, builders.Service(ns, "storefront-pods")),
		serviceYAML(t, ns, "storefront", storefrontPort), serviceYAML(t, ns, "sorry", sorryPort),
		builders.ServiceState(ns, "storefront-up", "storefront-pods").UnavailableAfter(unavailableAfter).AvailableAfter(availableAfter).YAML(),
		builders.DynamicIngress(ns, "storefront").State("storefront-up").ExpectCode("503").
			Passive(builders.IngressTo(host, "storefront").Port(storefrontPort)).
			Active(builders.IngressTo(host, "sorry").Port(sorryPort)).YAML())

	// readyMessage is the state's code and Ready message.
	readyMessage := func() string {
		return kubectl(t, "", "get", "-n", ns, "dis", "storefront-up", "-o",
			`jsonpath={.status.statusCode} {.status.conditions[?(@.type=="Ready")].message}`)
	}
	kubectl(t, "", "wait", "-n", ns, "--for=jsonpath={.status.statusCode}=200", "dis/storefront-up", "--timeout=60s")
	// The switch has seen the 200 (a Service seen before its slice
	// answers 503 at first).
	kubectl(t, "", "wait", "-n", ns, `--for=jsonpath={.status.conditions[?(@.type=="Active")].reason}=NotMatched`, "di/storefront", "--timeout=60s")
	waitSwitches(t, ns, false, "di/storefront")
	user.waitFor(t, storefrontPage, time.Now(), bound)
	if got, want := readyMessage(), fmt.Sprintf("200 Service %s/storefront-pods had 3 ready endpoints (minReady 1) when the answer turned 200", ns); got != want {
		t.Errorf("storefront-up with its pods ready: %q, want %q", got, want)
	}
	generation := kubectl(t, "", "get", "-n", ns, "dis", "storefront-up", "-o", "jsonpath={.metadata.generation}")

	// The pods all fail their readiness probes.
	edited := time.Now()
	apply(t, slice(false))
	down := user.waitFor(t, sorryPage, edited, unavailableAfter+bound)
	if down < unavailableAfter {
		t.Errorf("users got the sorry page %s after the pods went not ready, before unavailableAfter (%s)", down.Round(time.Millisecond), unavailableAfter)
	}
	if got, want := readyMessage(), fmt.Sprintf("503 Service %s/storefront-pods had 0 ready endpoints (minReady 1) when the answer turned 503", ns); got != want {
		t.Errorf("storefront-up with its pods not ready: %q, want %q", got, want)
	}

	// They are ready again.
	edited = time.Now()
	apply(t, slice(true))
	up := user.waitFor(t, storefrontPage, edited, availableAfter+bound)
	if up < availableAfter {
		t.Errorf("users got the storefront %s after the pods were ready again, before availableAfter (%s)", up.Round(time.Millisecond), availableAfter)
	}

	// The app is scaled to 0: its slice goes.
	edited = time.Now()
	kubectl(t, "", "delete", "-n", ns, "endpointslice", "storefront-pods-1")
	gone := user.waitFor(t, sorryPage, edited, unavailableAfter+bound)
	if gone < unavailableAfter {
		t.Errorf("users got the sorry page %s after the pods' slice was deleted, before unavailableAfter (%s)", gone.Round(time.Millisecond), unavailableAfter)
	}
	if got := kubectl(t, "", "get", "-n", ns, "dis", "storefront-up", "-o", "jsonpath={.metadata.generation}"); got != generation {
		t.Errorf("storefront-up's generation went from %s to %s: someone edited the state", generation, got)
	}
	t.Logf("through Traefik, users got the sorry page %s after the pods went not ready (unavailableAfter %s), the storefront %s after they were ready again (availableAfter %s), the sorry page %s after their slice was deleted",
		down.Round(time.Millisecond), unavailableAfter, up.Round(time.Millisecond), availableAfter, gone.Round(time.Millisecond))
}

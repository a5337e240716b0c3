package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
)

// storefrontHost is the storefront's host in config/samples.
const storefrontHost = "shop.example.com"

// The first lines of what the two local servers answer.
const (
	storefrontPage = "Storefront: welcome to the shop"
	sorryPage      = "Sorry: the shop is closed for a moment, back soon"
)

// dataPlane is what users reach in the demo: Traefik on loopback serving
// the cluster's Ingresses of class traefik and the HTTPRoutes of its
// Gateway, the storefront and the sorry page as two small servers on
// 127.0.0.1, and the storefront again on routeStorefrontIP for the route.
type dataPlane struct {
	traefik                            *controlplane.Traefik
	storefront, sorry, routeStorefront *site
	client                             *http.Client
}

// site is a local HTTP server answering every request with one status and
// body.
type site struct {
	server *http.Server
	port   int
}

// startSite serves code and body on a free port of ip, a loopback address.
func startSite(ip string, code int, body string) (*site, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return nil, err
	}
	s := &site{port: l.Addr().(*net.TCPAddr).Port, server: &http.Server{
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(code)
			_, _ = io.WriteString(w, body+"\n")
		}),
	}}
	go func() { _ = s.server.Serve(l) }()
	return s, nil
}

func (s *site) Close() error { return s.server.Close() }

// startDataPlane starts Traefik, with its Ingress and Gateway API
// providers, against the cluster of kubeconfig (logs in dir), and the
// sites.
func startDataPlane(dir, kubeconfig string) (*dataPlane, error) {
	d := &dataPlane{client: &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil},
		// A user's browser would follow the route's redirect; the demo
		// shows it.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	var err error
	shop := storefrontPage + "\nToday's offers: ..."
	if d.storefront, err = startSite("127.0.0.1", http.StatusOK, shop); err == nil {
		if d.sorry, err = startSite("127.0.0.1", http.StatusServiceUnavailable, sorryPage+"\nThe status page has the details."); err == nil {
			if d.routeStorefront, err = startSite(routeStorefrontIP, http.StatusOK, shop); err == nil {
				d.traefik, err = controlplane.StartTraefik(controlplane.TraefikOptions{Dir: dir, Kubeconfig: kubeconfig, Gateway: true})
			}
		}
	}
	if err != nil {
		d.Stop()
		return nil, err
	}
	return d, nil
}

// Stop stops Traefik and the sites that started.
func (d *dataPlane) Stop() {
	if d.traefik != nil {
		d.traefik.Stop()
	}
	for _, s := range []*site{d.storefront, d.sorry, d.routeStorefront} {
		if s != nil {
			_ = s.Close()
		}
	}
}

// url is what users request: Traefik, for the storefront's host and the
// route's.
func (d *dataPlane) url() string { return "http://" + d.traefik.Address + "/" }

// answer is what a request through Traefik got: the status code and the
// first line of the body (or where it redirects), or the error.
type answer struct {
	code  int
	first string
	err   error
}

func (a answer) String() string {
	if a.err != nil {
		return "error: " + a.err.Error()
	}
	return fmt.Sprintf("%d %s", a.code, a.first)
}

// get requests the storefront's host through Traefik, as a user would.
func (d *dataPlane) get(ctx context.Context) answer {
	return d.getHost(ctx, storefrontHost)
}

// getHost requests host through Traefik, as a user would; a redirect's
// answer is "-> its Location".
func (d *dataPlane) getHost(ctx context.Context, host string) answer {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.url(), nil)
	if err != nil {
		return answer{err: err}
	}
	req.Host = host
	resp, err := d.client.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return answer{err: err}
	}
	if loc := resp.Header.Get("Location"); loc != "" {
		return answer{code: resp.StatusCode, first: "-> " + loc}
	}
	first, _, _ := strings.Cut(string(body), "\n")
	return answer{code: resp.StatusCode, first: first}
}

// sighting is when traffic through Traefik was first seen in a new shape.
type sighting struct {
	// before is the answer just before the edit, seen the first answer
	// in the new shape.
	before, seen answer
	// after is how long after the edit it was first seen.
	after time.Duration
	err   error
}

// watchFor requests the storefront through Traefik every 20ms from now
// until it answers want (its first line), and reports when that was first
// seen relative to edited. It gives up after a minute.
func (d *dataPlane) watchFor(want string, edited time.Time) <-chan sighting {
	out := make(chan sighting, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var s sighting
		for {
			a := d.get(ctx)
			if a.err == nil && a.first == want {
				s.seen, s.after = a, time.Since(edited)
				out <- s
				return
			}
			select {
			case <-ctx.Done():
				s.err = fmt.Errorf("traffic through Traefik did not change to %q within a minute (last answer: %s)", want, a)
				out <- s
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return out
}

// manifest is the IngressClass Traefik serves and the storefront's two
// backends: Services of type ExternalName naming 127.0.0.1, so that
// Traefik sends their requests to the local servers (the local control
// plane runs no EndpointSlice controller, and the API server refuses
// loopback addresses in EndpointSlices). Traefik takes the port of an
// ExternalName Service as the server's port.
func (d *dataPlane) manifest() string {
	return fmt.Sprintf(`apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: traefik
spec:
  controller: traefik.io/ingress-controller
---
apiVersion: v1
kind: Service
metadata:
  name: storefront
spec:
  type: ExternalName
  externalName: 127.0.0.1
  ports:
  - {name: http, port: %d}
---
apiVersion: v1
kind: Service
metadata:
  name: sorry-page
spec:
  type: ExternalName
  externalName: 127.0.0.1
  ports:
  - {name: http, port: %d}
`, d.storefront.port, d.sorry.port)
}

// servedPatch moves the sample storefront's two shapes to Traefik's class
// and the local servers' ports, and sets spec.served: the storefront's URL
// through Traefik with its Host header, the sorry page's 503 and text
// while active, 200 while passive.
func (d *dataPlane) servedPatch() string {
	return fmt.Sprintf(`[
 {"op":"replace","path":"/spec/passiveIngress/template/spec/ingressClassName","value":"traefik"},
 {"op":"replace","path":"/spec/passiveIngress/template/spec/rules/0/http/paths/0/backend/service/port/number","value":%d},
 {"op":"replace","path":"/spec/activeIngress/template/spec/ingressClassName","value":"traefik"},
 {"op":"replace","path":"/spec/activeIngress/template/spec/rules/0/http/paths/0/backend/service/port/number","value":%d},
 {"op":"add","path":"/spec/served","value":{"url":%q,"headers":[{"name":"Host","value":%q}],
  "active":{"statusCode":"503","body":"Sorry","bodyMatch":"Contains"},"passive":{"statusCode":"200","body":"Storefront","bodyMatch":"Contains"},
  "period":"250ms","timeout":"1m"}}
]`, d.storefront.port, d.sorry.port, d.url(), storefrontHost)
}

// servedColumns shows the Served condition and status.served of objects
// ("di/storefront").
func servedColumns(objects ...string) []string {
	return append(append([]string{"get", "-n", namespace}, objects...), "-o", servedColumnsFormat)
}

// servedColumnsFormat is servedColumns' -o.
const servedColumnsFormat = `custom-columns=NAME:.metadata.name,ACTIVE:.status.conditions[?(@.type=="Active")].status,SERVED:.status.conditions[?(@.type=="Served")].status,REASON:.status.conditions[?(@.type=="Served")].reason,MODE:.status.served.mode,AFTER:.status.served.after,MESSAGE:.status.conditions[?(@.type=="Served")].message`

// serveStorefront puts the storefront behind Traefik and has the operator
// check its flips there (spec.served), and shows what users get.
func serveStorefront(k *kubectl, d *dataPlane) error {
	fmt.Println()
	say("A real data plane: Traefik %s on %s serves the Ingresses of class traefik. The storefront and", controlplane.TraefikVersion, d.traefik.Address)
	say("the sorry page are two small servers on 127.0.0.1 (ports %d and %d), behind ExternalName Services:", d.storefront.port, d.sorry.port)
	if err := k.showApply(d.manifest(), ""); err != nil {
		return err
	}
	say("The sample storefront is of class nginx and sends port 80. Here Traefik serves it: its two shapes")
	say("get the class traefik and the local servers' ports, and spec.served has the operator request the")
	say("storefront through Traefik, with its Host header, after each write until it answers as the shape:")
	if err := k.show("patch", "-n", namespace, "di", "storefront", "--type", "json", "-p", d.servedPatch()); err != nil {
		return err
	}
	if err := k.waitQuiet("--for=condition=Served", "di/storefront"); err != nil {
		return err
	}
	if err := k.show(servedColumns("di/storefront")...); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a := d.get(ctx)
	fmt.Println()
	say("curl -H 'Host: %s' %s   ->  %s", storefrontHost, d.url(), a)
	if a.err != nil || a.first != storefrontPage {
		return fmt.Errorf("through Traefik the storefront answered %s, want 200 %q", a, storefrontPage)
	}
	return serveRoute(k, d)
}

// reportFlip waits for the sighting of a flip, and prints what users got
// before and after it, what the route answers (it must be routeWant: the
// flip is served) and what the statuses say.
func reportFlip(k *kubectl, d *dataPlane, what string, seen <-chan sighting, routeWant string) error {
	s := <-seen
	if s.err != nil {
		return s.err
	}
	fmt.Println()
	say("Through Traefik (curl -H 'Host: %s' %s), polled every 20ms from the edit:", storefrontHost, d.url())
	say("  before %s: %s", what, s.before)
	say("  after %s:  %s", what, s.seen)
	say("  first served %.2fs after the state's edit (kubectl patch returned).", s.after.Seconds())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	route := d.getHost(ctx, routeHost)
	say("  the route through Traefik's Gateway (Host: %s), once served: %s", routeHost, route)
	if route.err != nil || route.first != routeWant {
		return fmt.Errorf("once served, the route answered %s through Traefik's Gateway, want %q", route, routeWant)
	}
	say("The Served conditions: status.served.after counts from the target's write, and the operator")
	say("requested each URL every 250ms until it answered as the new shape (for the route, also until")
	say("its Gateway accepted the route's new generation):")
	if err := k.show(servedColumns("di/storefront", "dhr/storefront-route")...); err != nil {
		return err
	}
	return k.show(routeAccepted...)
}

// flipKillSwitch requests the storefront through Traefik (before the
// flip), sets the killswitch state's status to code with kubectl patch, and
// watches Traefik for want from the moment the edit was stored.
func (k *kubectl) flipKillSwitch(d *dataPlane, code, want string) (<-chan sighting, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	before := d.get(ctx)
	if err := k.show("patch", "-n", namespace, "dis", "killswitch", "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"`+code+`"}}}`); err != nil {
		return nil, err
	}
	seen := make(chan sighting, 1)
	go func() {
		s := <-d.watchFor(want, time.Now())
		s.before = before
		seen <- s
	}()
	return seen, nil
}

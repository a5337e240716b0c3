package controlplane

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestTraefikServesIngresses starts a local cluster and Traefik beside it,
// and checks what the demo and the end-to-end tests rely on: an Ingress to
// a LoopbackService is served through Traefik, and an edit of the Ingress
// changes what Traefik serves.
func TestTraefikServesIngresses(t *testing.T) {
	traefik, k := startWithTraefik(t, TraefikOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := "traefik"
	if err := k.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	shopPort := answering(t, "shop")
	sorryPort := answering(t, "sorry")
	for name, port := range map[string]int32{"shop": shopPort, "sorry": sorryPort} {
		if err := k.Create(ctx, builders.LoopbackService(ns, name, port)); err != nil {
			t.Fatal(err)
		}
	}
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		Spec:       builders.IngressTo("shop.example.com", "shop").Port(shopPort).Obj().Template.Spec,
	}
	created := time.Now()
	if err := k.Create(ctx, ing); err != nil {
		t.Fatal(err)
	}
	if err := servedBy(ctx, traefik.Address, "shop.example.com", "shop"); err != nil {
		t.Fatal(err)
	}
	t.Logf("Served %q %s after the Ingress was created", "shop", time.Since(created).Round(time.Millisecond))

	ing.Spec = builders.IngressTo("shop.example.com", "sorry").Port(sorryPort).Obj().Template.Spec
	edited := time.Now()
	if err := k.Update(ctx, ing); err != nil {
		t.Fatal(err)
	}
	if err := servedBy(ctx, traefik.Address, "shop.example.com", "sorry"); err != nil {
		t.Fatal(err)
	}
	t.Logf("Served %q %s after the Ingress was edited", "sorry", time.Since(edited).Round(time.Millisecond))
}

// startWithTraefik starts a local cluster and Traefik beside it (opts, with
// the cluster's user "traefik"), both stopped when the test ends, and
// returns Traefik and an admin client knowing the core and Gateway API
// kinds. It skips the test when Traefik is not built.
func startWithTraefik(t *testing.T, opts TraefikOptions) (*Traefik, client.Client) {
	t.Helper()
	if _, err := os.Stat(TraefikBinary()); err != nil {
		t.Skipf("Traefik is not built (%s): run `make traefik`", TraefikBinary())
	}
	dir := t.TempDir()
	c, err := Start(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	if opts.Kubeconfig, err = c.AddUser("traefik"); err != nil {
		t.Fatal(err)
	}
	opts.Dir = dir
	traefik, err := StartTraefik(opts)
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last first: Traefik stops before the cluster, and its
	// log is shown while dir is still there.
	t.Cleanup(func() {
		traefik.Stop()
		if t.Failed() {
			log, _ := os.ReadFile(traefik.Log)
			t.Logf("Traefik's log:\n%s", log)
		}
	})
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatalf("loading %s: %v", c.Kubeconfig, err)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, gatewayv1.Install} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	k, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return traefik, k
}

// answering serves body on 127.0.0.1 for the test's duration and returns
// its port.
func answering(t *testing.T, body string) int32 {
	t.Helper()
	return answeringOn(t, "127.0.0.1", body)
}

// answeringOn serves body on ip, a loopback address, for the test's
// duration and returns its port.
func answeringOn(t *testing.T, ip, body string) int32 {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, body)
	}))
	_ = s.Listener.Close()
	s.Listener = l
	s.Start()
	t.Cleanup(s.Close)
	_, port, err := net.SplitHostPort(s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	return int32(n)
}

// servedBy requests host from the proxy at address every 20 ms until it
// answers 200 with body, or ctx ends.
func servedBy(ctx context.Context, address, host, body string) error {
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{Proxy: nil}}
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+address+"/", nil)
		if err != nil {
			return err
		}
		req.Host = host
		resp, err := c.Do(req)
		if err == nil {
			got, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK && string(got) == body {
				return nil
			}
			last = fmt.Sprintf("%d %q", resp.StatusCode, got)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s through Traefik at %s never answered 200 %q (last answer: %s)", host, address, body, last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestTraefikServesHTTPRoutes checks what the end-to-end tests of
// DynamicHTTPRoutes rely on: with its Gateway API provider, Traefik
// accepts a Gateway listening on its port and an HTTPRoute attached to it
// (writing the route's parent status), and serves the route to a
// LoopbackClusterIP Service.
func TestTraefikServesHTTPRoutes(t *testing.T) {
	traefik, k := startWithTraefik(t, TraefikOptions{Gateway: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := "gateway"
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}}
	objs = append(objs, builders.TraefikGateway(ns, "public", TraefikGatewayController, traefik.Port())...)
	shopIP := "127.0.1.10"
	shopPort := answeringOn(t, shopIP, "shop")
	objs = append(objs, builders.LoopbackClusterIP(ns, "shop", shopIP, shopPort))
	for _, o := range objs {
		if err := k.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		Spec: builders.RouteTo("shop.example.com", "shop").Port(shopPort).Obj().Template.Spec}
	created := time.Now()
	if err := k.Create(ctx, route); err != nil {
		t.Fatal(err)
	}
	if err := servedBy(ctx, traefik.Address, "shop.example.com", "shop"); err != nil {
		t.Fatal(err)
	}
	t.Logf("Served %q %s after the HTTPRoute was created", "shop", time.Since(created).Round(time.Millisecond))
	for {
		if err := k.Get(ctx, client.ObjectKeyFromObject(route), route); err != nil {
			t.Fatal(err)
		}
		if len(route.Status.Parents) == 1 {
			if c := apimeta.FindStatusCondition(route.Status.Parents[0].Conditions, "Accepted"); c != nil &&
				c.Status == metav1.ConditionTrue && c.ObservedGeneration == route.Generation {
				break
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("Traefik served the route but never accepted its generation %d: status %+v", route.Generation, route.Status)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

package controller_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controller"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// laggingNamespace belongs to a manager whose cache lags behind the API
// server; the suite's manager does not watch it.
const laggingNamespace = "lagging-cache"

// veryLaggingNamespace belongs to a manager whose cache lags behind the API
// server longer than it waits for its own writes; the suite's manager does
// not watch it.
const veryLaggingNamespace = "very-lagging-cache"

// watchLag is how late the lagging manager sees state changes.
const watchLag = 3 * time.Second

// TestStaleCacheNeverHidesAChange: a probed state's observation goes X, A,
// X faster than the manager's cache follows. The status must end at X: the
// reconcile that sees X must not compare it with the cached X it already
// replaced by A.
func TestStaleCacheNeverHidesAChange(t *testing.T) {
	startLaggingManager(t)
	flags := startFlagService(t, 200, "X")
	state := builders.ProbedState(laggingNamespace, "flag", flags.url()).Interval(time.Second).Timeout(time.Second / 2).FailureThreshold(3).Obj()
	create(t, state)
	eventually(t, stateStatus(state)).Should(Equal(`200 "X"`))
	time.Sleep(watchLag + 500*time.Millisecond) // the cache now holds X

	flags.body.Store("A")
	eventually(t, stateStatus(state)).Should(Equal(`200 "A"`))
	// Back to X before the cache shows A.
	flags.body.Store("X")
	eventually(t, stateStatus(state)).Should(Equal(`200 "X"`))
}

// TestSequenceNeverRepeatsPastTheCacheLagFallback: a state's cache lags
// behind the manager's own status write for longer than the manager waits
// for it (ownWrites' maxCacheLag, 10 s) while the probe sees a new answer.
// The status write that follows must not be computed from the older
// status and so reuse its history sequence, replacing the change before
// it: every change keeps its entry, with a sequence of its own.
func TestSequenceNeverRepeatsPastTheCacheLagFallback(t *testing.T) {
	const namespace, lag = veryLaggingNamespace, 12 * time.Second
	cfg := rest.CopyConfig(testConfig)
	cfg.Wrap(delayWatches("dynamicingressstates", lag))
	startManagerFor(t, namespace, cfg, nil)
	flags := startFlagService(t, 200, "X")
	state := builders.ProbedState(namespace, "flag", flags.url()).Interval(time.Second).Timeout(time.Second / 2).FailureThreshold(3).Obj()
	create(t, state)
	eventually(t, stateStatus(state)).WithTimeout(4 * lag).Should(Equal(`200 "X"`))
	time.Sleep(lag + 500*time.Millisecond) // the cache now holds X

	flags.body.Store("A")
	eventually(t, stateStatus(state)).Should(Equal(`200 "A"`))
	// B while the cache still shows X, for longer than the manager waits.
	flags.body.Store("B")
	eventually(t, stateStatus(state)).WithTimeout(4 * lag).Should(Equal(`200 "B"`))

	var got []string
	for _, h := range state.Status.History {
		got = append(got, fmt.Sprintf("%d %s", h.Sequence, h.BodyDigest))
	}
	if len(state.Status.History) < 3 {
		t.Fatalf("history %v: want B, A and X, each with its own entry", got)
	}
	for i, h := range state.Status.History[:3] {
		if i > 0 && h.Sequence >= state.Status.History[i-1].Sequence {
			t.Errorf("history %v: sequences not strictly decreasing at %d", got, i)
		}
	}
	if h := state.Status.History; h[0].Sequence != h[1].Sequence+1 || h[1].Sequence != h[2].Sequence+1 {
		t.Errorf("history %v: want three consecutive sequences (B, A, X)", got)
	}
}

// startLaggingManager runs the controllers on laggingNamespace with a
// manager whose watches of DynamicIngressStates deliver every event
// watchLag late.
func startLaggingManager(t *testing.T) {
	t.Helper()
	cfg := rest.CopyConfig(testConfig)
	cfg.Wrap(delayWatches("dynamicingressstates", watchLag))
	startManagerFor(t, laggingNamespace, cfg, nil)
}

// startManagerFor runs both controllers in a manager of their own that
// watches only namespace (which it creates), with clk as its clock (the
// real one when nil). The suite's manager does not watch that namespace.
func startManagerFor(t *testing.T, namespace string, cfg *rest.Config, clk controller.Clock) {
	t.Helper()
	startOwnManager(t, namespace, cfg, controller.CacheOptions(true, true), controller.Options{
		MaxConcurrentReconciles: 2, StateMaxConcurrentReconciles: 2, Clock: clk})
}

// startOwnManager runs the controllers with opts (a probe guard that lets
// them reach loopback, HTTPRoutes on, 1 KiB bodies) in a manager of their
// own whose cache, cacheOpts, watches only namespace, which it creates or
// empties. stop ends the manager and waits until it has; the test's end
// calls it too.
func startOwnManager(t *testing.T, namespace string, cfg *rest.Config, cacheOpts cache.Options, opts controller.Options) (stop func()) {
	t.Helper()
	err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})
	switch {
	case apierrors.IsAlreadyExists(err):
		// The test ran before in this process (go test -count=N), and
		// envtest never deletes a namespace: start from an empty one.
		emptyNamespace(t, namespace)
	case err != nil:
		t.Fatal(err)
	}
	return restartOwnManager(t, namespace, cfg, cacheOpts, opts)
}

// restartOwnManager is startOwnManager for a namespace that a manager of the
// test served before: what is in it stays.
func restartOwnManager(t *testing.T, namespace string, cfg *rest.Config, cacheOpts cache.Options, opts controller.Options) (stop func()) {
	t.Helper()
	cacheOpts.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:     scheme,
		Cache:      cacheOpts,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	opts.Guard, _ = probe.ParseGuard("192.0.2.0/24", "")
	opts.MaxBodyBytes, opts.HTTPRoutes = 1024, true
	mgrCtx, cancel := context.WithCancel(ctx)
	if err := controller.SetupWithManager(mgrCtx, mgr, opts); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(mgrCtx); err != nil {
			t.Errorf("manager of %s: %v", namespace, err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// emptyNamespace deletes what a test's earlier run left in namespace (the
// project's objects, their targets and the events about them) and waits
// until the API server lists none of them.
func emptyNamespace(t *testing.T, namespace string) {
	t.Helper()
	kinds := []struct {
		obj  client.Object
		list client.ObjectList
	}{
		{&v1beta1.DynamicIngress{}, &v1beta1.DynamicIngressList{}},
		{&v1beta1.DynamicHTTPRoute{}, &v1beta1.DynamicHTTPRouteList{}},
		{&v1beta1.DynamicIngressState{}, &v1beta1.DynamicIngressStateList{}},
		{&networkingv1.Ingress{}, &networkingv1.IngressList{}},
		{&gatewayv1.HTTPRoute{}, &gatewayv1.HTTPRouteList{}},
		{&corev1.Event{}, &corev1.EventList{}},
	}
	for _, k := range kinds {
		if err := k8s.DeleteAllOf(ctx, k.obj, client.InNamespace(namespace)); err != nil {
			t.Fatalf("emptying namespace %s of %T: %v", namespace, k.obj, err)
		}
	}
	eventually(t, func() (int, error) {
		left := 0
		for _, k := range kinds {
			if err := k8s.List(ctx, k.list, client.InNamespace(namespace)); err != nil {
				return 0, err
			}
			left += meta.LenList(k.list)
		}
		return left, nil
	}).Should(BeZero())
}

// delayWatches makes every watch of resource deliver its data lag late.
func delayWatches(resource string, lag time.Duration) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err != nil || req.URL.Query().Get("watch") != "true" || !strings.Contains(req.URL.Path, "/"+resource) {
				return resp, err
			}
			resp.Body = newDelayedReader(resp.Body, lag)
			return resp, nil
		})
	}
}

// delayedReader hands out what its source read, each chunk lag after it
// arrived.
type delayedReader struct {
	src    io.ReadCloser
	chunks chan delayedChunk
	rest   []byte
	err    error
}

type delayedChunk struct {
	data []byte
	at   time.Time
	err  error
}

func newDelayedReader(src io.ReadCloser, lag time.Duration) *delayedReader {
	d := &delayedReader{src: src, chunks: make(chan delayedChunk, 1024)}
	go func() {
		defer close(d.chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			d.chunks <- delayedChunk{data: buf[:n], at: time.Now().Add(lag), err: err}
			if err != nil {
				return
			}
		}
	}()
	return d
}

func (d *delayedReader) Read(p []byte) (int, error) {
	for len(d.rest) == 0 {
		if d.err != nil {
			return 0, d.err
		}
		c, ok := <-d.chunks
		if !ok {
			return 0, io.EOF
		}
		time.Sleep(time.Until(c.at))
		d.rest, d.err = c.data, c.err
	}
	n := copy(p, d.rest)
	d.rest = d.rest[n:]
	return n, nil
}

func (d *delayedReader) Close() error { return d.src.Close() }

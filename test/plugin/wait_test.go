// Package plugin_test holds the envtest suite of kubectl dynamic's
// watching: what `wait` asks of the API server, and how soon it returns.
package plugin_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controller"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/plugin"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

var (
	k8s client.Client
	cfg *rest.Config
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	suite.SetTestLogger()
	env := controlplane.Environment(false)
	var err error
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	if k8s, err = client.New(cfg, client.Options{Scheme: controller.NewScheme()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// countingClient is a plugin client whose requests are counted.
func countingClient(t *testing.T) (client.WithWatch, *atomic.Int64) {
	t.Helper()
	var requests atomic.Int64
	counted := plugin.RESTConfig(cfg)
	counted.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			requests.Add(1)
			return rt.RoundTrip(r)
		})
	})
	c, err := client.NewWithWatch(counted, client.Options{Scheme: controller.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c, &requests
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func kinds(t *testing.T) []target.Kind {
	t.Helper()
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return plugin.Kinds(disco)
}

// passiveFollowers creates a fixed state answering 200 and n
// DynamicIngresses expecting 503, with no Ingress while passive: in shape
// without a target, once their status says so.
func passiveFollowers(t *testing.T, ns string, n int) (*v1beta1.DynamicIngressState, []*v1beta1.DynamicIngress) {
	t.Helper()
	state := builders.FixedState(ns, "flag", "200", "").Obj()
	if err := k8s.Create(context.Background(), state); err != nil {
		t.Fatal(err)
	}
	var switches []*v1beta1.DynamicIngress
	for i := range n {
		di := builders.DynamicIngress(ns, fmt.Sprintf("web-%03d", i)).State("flag").ExpectCode("503").
			Active(builders.IngressTo("www.example.com", "sorry")).Obj()
		if err := k8s.Create(context.Background(), di); err != nil {
			t.Fatal(err)
		}
		switches = append(switches, di)
	}
	return state, switches
}

// TestWaitRequestsDoNotGrowWithTime: a wait on 300 switches that never
// converge (no manager runs) makes the same handful of requests whether it
// waits 5 s or 20 s: it watches, it does not poll.
func TestWaitRequestsDoNotGrowWithTime(t *testing.T) {
	ns := suite.NewNamespace(t, k8s)
	passiveFollowers(t, ns, 300)
	ks := kinds(t)
	requestsOf := func(timeout time.Duration) int64 {
		c, requests := countingClient(t)
		_, _, err := plugin.Wait(context.Background(), c, ks, plugin.WaitOptions{Namespace: ns, State: "flag", Timeout: timeout})
		var timedOut *plugin.TimeoutError
		if !errors.As(err, &timedOut) {
			t.Fatalf("wait %s: want a timeout, got %v", timeout, err)
		}
		if len(timedOut.Pending) != 301 {
			t.Errorf("wait %s: %d pending, want the state and its 300 switches", timeout, len(timedOut.Pending))
		}
		return requests.Load()
	}
	short, long := requestsOf(5*time.Second), requestsOf(20*time.Second)
	t.Logf("requests: %d in a 5 s wait, %d in a 20 s wait", short, long)
	if long-short > 3 {
		t.Errorf("a 20 s wait made %d requests, a 5 s wait %d: the longer wait should add at most a handful", long, short)
	}
	if short > 20 {
		t.Errorf("a 5 s wait made %d requests, want one list and one watch per source and little else", short)
	}
}

// TestWaitReturnsSoonAfterTheLastStatus: a wait whose switches converge
// while it waits returns within a second of the last status write (it
// looks at every change the watch brings; half a second is the aim).
func TestWaitReturnsSoonAfterTheLastStatus(t *testing.T) {
	ns := suite.NewNamespace(t, k8s)
	state, switches := passiveFollowers(t, ns, 20)
	c, _ := countingClient(t)
	type result struct {
		at  time.Time
		err error
	}
	done := make(chan result, 1)
	go func() {
		_, _, err := plugin.Wait(context.Background(), c, kinds(t), plugin.WaitOptions{Namespace: ns, State: "flag", Timeout: time.Minute})
		done <- result{time.Now(), err}
	}()
	time.Sleep(2 * time.Second)

	ctx := context.Background()
	now := metav1.Now()
	state.Status = v1beta1.DynamicIngressStateStatus{ObservedGeneration: state.Generation, Mode: v1beta1.StateModeFixed, StatusCode: "200",
		Conditions: []metav1.Condition{{Type: v1beta1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1beta1.ReasonFixed, Message: "Fixed", LastTransitionTime: now, ObservedGeneration: state.Generation}}}
	if err := k8s.Status().Update(ctx, state); err != nil {
		t.Fatal(err)
	}
	var last time.Time
	for _, di := range switches {
		di.Status.Conditions = []metav1.Condition{
			{Type: v1beta1.ConditionActive, Status: metav1.ConditionFalse, Reason: v1beta1.ReasonNotMatched, Message: "m", LastTransitionTime: now, ObservedGeneration: di.Generation},
			{Type: v1beta1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1beta1.ReasonSynced, Message: "m", LastTransitionTime: now, ObservedGeneration: di.Generation},
		}
		select {
		case r := <-done:
			t.Fatalf("wait returned before every status was written: %v", r.err)
		default:
		}
		if err := k8s.Status().Update(ctx, di); err != nil {
			t.Fatal(err)
		}
		last = time.Now()
	}
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		delay := r.at.Sub(last)
		t.Logf("wait returned %s after the last status write", delay)
		if delay > time.Second {
			t.Errorf("wait returned %s after the last status write, want within a second", delay)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("wait did not return 30 s after every status was written")
	}
}

// TestKindsReadHTTPRouteDefaultsFromOpenAPI: the plugin finds the
// HTTPRoute kind through discovery and its schema's defaults in the
// OpenAPI v3 document, which every authenticated user may read, instead
// of the CustomResourceDefinition, which view does not grant.
func TestKindsReadHTTPRouteDefaultsFromOpenAPI(t *testing.T) {
	ks := kinds(t)
	if len(ks) != 2 {
		t.Fatalf("kinds %v, want Ingress and HTTPRoute", ks)
	}
	route, ok := ks[1].(target.HTTPRoute)
	if !ok || route == (target.HTTPRoute{}) {
		t.Errorf("kinds[1] = %#v, want an HTTPRoute adapter with the schema's defaults", ks[1])
	}
}

package controller_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"testing"

	"github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controller"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/test/controlplane"
)

var (
	// k8s is a direct client: assertions read the API server, not a cache.
	k8s    client.Client
	scheme = controller.NewScheme()
	// writes counts the write requests the manager sends.
	writes atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	controlplane.SetTestLogger()

	env := controlplane.Environment(false)
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()

	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	mgrCfg := rest.CopyConfig(cfg)
	mgrCfg.QPS, mgrCfg.Burst = 500, 1000
	mgrCfg.Wrap(countWrites)
	mgr, err := ctrl.NewManager(mgrCfg, ctrl.Options{
		Scheme:  scheme,
		Cache:   controller.CacheOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Probes in these tests reach HTTP servers on loopback, which the
	// default guard denies: deny only a range no test uses.
	guard, _ := probe.ParseGuard("192.0.2.0/24")
	if err := controller.SetupWithManager(ctx, mgr, controller.Options{
		Guard: guard, MaxBodyBytes: 10240, MaxConcurrentReconciles: 16,
	}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return m.Run()
}

// countWrites wraps the manager's transport to count write requests.
func countWrites(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		switch req.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			writes.Add(1)
		}
		return rt.RoundTrip(req)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func newNamespace(t *testing.T) string { return controlplane.NewNamespace(t, k8s) }

func eventually(t *testing.T, f any) gomega.AsyncAssertion { return controlplane.Eventually(t, f) }

package controller_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"

	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controller"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

var (
	// k8s is a direct client: assertions read the API server, not a cache.
	k8s    client.Client
	scheme = controller.NewScheme()
	// testConfig reaches the control plane as its administrator.
	testConfig *rest.Config
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	suite.SetTestLogger()

	env := controlplane.Environment(false)
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	testConfig = cfg

	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	mgrCfg := rest.CopyConfig(cfg)
	mgrCfg.QPS, mgrCfg.Burst = 500, 1000
	mgrCfg.Wrap(countWrites)
	mgr, err := ctrl.NewManager(mgrCfg, ctrl.Options{
		Scheme: scheme,
		Cache: cacheOptionsExcept(laggingNamespace, veryLaggingNamespace, notifierTurnsNamespace, fakeClockNamespace, horizonClockNamespace, clusterStatesOffNamespace, clusterStatesOnNamespace,
			unknownNamespace, serviceRestartNamespace, pinStartNamespace),
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
	guard, _ := probe.ParseGuard("192.0.2.0/24", "")
	if err := controller.SetupWithManager(ctx, mgr, controller.Options{
		Guard: guard, MaxBodyBytes: 10240, MaxConcurrentReconciles: 16, StateMaxConcurrentReconciles: 8, HTTPRoutes: true,
		SecretRotationWindow: secretRotationWindow, ClusterStates: true, ClusterResourceNamespace: clusterResourceNamespace,
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

// countWrites wraps the manager's transport to count write requests per
// namespace and resource (see writesTo and writeCounts).
func countWrites(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		switch req.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			if ns, resource := writeTarget(req.URL.Path); ns != "" {
				n, _ := writesByTarget.LoadOrStore(ns+" "+resource, &atomic.Int64{})
				n.(*atomic.Int64).Add(1)
			}
		}
		return rt.RoundTrip(req)
	})
}

// writesByTarget counts writes by "<namespace> <resource>[/status]".
var writesByTarget sync.Map

// writeTarget is the namespace and the resource (with "/status" for the
// status subresource) of an API path such as
// /apis/g/v/namespaces/NS/RESOURCE/NAME/status.
func writeTarget(path string) (namespace, resource string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i, p := range parts {
		if p != "namespaces" || i+2 >= len(parts) {
			continue
		}
		namespace, resource = parts[i+1], parts[i+2]
		if i+4 < len(parts) {
			resource += "/" + parts[i+4]
		}
		return namespace, resource
	}
	return "", ""
}

// writeCounts is a snapshot of writesByTarget.
func writeCounts() map[string]int64 {
	out := map[string]int64{}
	writesByTarget.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// writesSince returns the writes sent since the snapshot before, by
// "<namespace> <resource>", leaving out targets that saw none.
func writesSince(before map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, n := range writeCounts() {
		if d := n - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// inNamespace keeps the counts of one namespace's targets: the manager
// serves every test's namespace at once, and earlier tests' objects (a
// probe against a closed server, say) may still write in theirs.
func inNamespace(counts map[string]int64, namespace string) map[string]int64 {
	out := map[string]int64{}
	for k, n := range counts {
		if strings.HasPrefix(k, namespace+" ") {
			out[k] = n
		}
	}
	return out
}

// writesTo returns the number of write requests the manager has sent to a
// resource (e.g. "dynamicingresses/status", "ingresses", "events") of a
// namespace.
func writesTo(namespace, resource string) int64 {
	n, ok := writesByTarget.Load(namespace + " " + resource)
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// secretRotationWindow is how soon the suite manager's probes use a
// rotated Secret: short, so that a rotation shows in seconds.
const secretRotationWindow = 3 * time.Second

// clusterResourceNamespace is where the suite's cluster states' Secrets are.
const clusterResourceNamespace = "platform"

func newNamespace(t *testing.T) string { return suite.NewNamespace(t, k8s) }

func eventually(t *testing.T, f any) gomega.AsyncAssertion { return suite.Eventually(t, f) }

// cacheOptionsExcept is the manager's cache configuration without the
// objects of some namespaces, which tests hand to managers of their own.
func cacheOptionsExcept(namespaces ...string) cache.Options {
	opts := controller.CacheOptions(true, true)
	var selectors []fields.Selector
	for _, ns := range namespaces {
		selectors = append(selectors, fields.OneTermNotEqualSelector("metadata.namespace", ns))
	}
	notThere := fields.AndSelectors(selectors...)
	opts.DefaultFieldSelector = notThere
	// Cluster-scoped objects have no metadata.namespace to select on, and
	// an empty selector would be replaced by the default: select them all
	// by a field they have.
	every := fields.OneTermNotEqualSelector("metadata.name", "")
	for obj, byObject := range opts.ByObject {
		byObject.Field = notThere
		if _, cluster := obj.(*v1beta1.ClusterDynamicIngressState); cluster {
			byObject.Field = every
		}
		opts.ByObject[obj] = byObject
	}
	opts.ByObject[&corev1.Namespace{}] = cache.ByObject{Field: every}
	return opts
}

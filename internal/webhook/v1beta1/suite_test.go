package v1beta1_test

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controller"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	webhookv1beta1 "github.com/dynamicingress/dynamic-ingress-operator/internal/webhook/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

var (
	// k8s is a direct client: every request goes through the API server and
	// so through the webhooks.
	k8s    client.Client
	scheme = controller.NewScheme()
	ctx    = context.Background()

	// restConfig reaches the control plane, for clients of a test's own.
	restConfig *rest.Config
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	flag.Parse()
	if fuzzing() {
		// Fuzz workers run only the pure fuzz targets: no control plane.
		return m.Run()
	}
	suite.SetTestLogger()

	env := controlplane.Environment(true)
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	restConfig = cfg
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	stop, err := startManager(env, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	return m.Run()
}

// startManager runs the controllers and the webhooks against env's control
// plane, and waits until the webhook server answers.
func startManager(env *envtest.Environment, cfg *rest.Config) (stop func(), err error) {
	wh := env.WebhookInstallOptions
	httpRoutes, err := controller.ServesHTTPRoutes(cfg)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Cache:   controller.CacheOptions(httpRoutes, true),
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wh.LocalServingHost, Port: wh.LocalServingPort, CertDir: wh.LocalServingCertDir,
		}),
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	guard, _ := probe.ParseGuard(probe.DefaultDenyCIDRs, "")
	if err := controller.SetupWithManager(runCtx, mgr, controller.Options{Guard: guard, MaxBodyBytes: 10240, MaxConcurrentReconciles: 4, HTTPRoutes: httpRoutes}); err != nil {
		cancel()
		return nil, err
	}
	if err := webhookv1beta1.SetupWebhooksWithManager(mgr, guard); err != nil {
		cancel()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(runCtx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	stop = func() { cancel(); <-done }
	if err := waitForWebhookServer(wh.LocalServingHost, wh.LocalServingPort); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// fuzzing reports whether this binary runs a fuzz target (go test -fuzz).
func fuzzing() bool {
	for _, name := range []string{"test.fuzz", "test.fuzzworker"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" && f.Value.String() != "false" {
			return true
		}
	}
	return false
}

func waitForWebhookServer(host string, port int) error {
	addr := net.JoinHostPort(host, fmt.Sprint(port))
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only a readiness check
		if err == nil {
			_ = conn.Close()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the webhook server did not listen on %s within 20s", addr)
}

func newNamespace(t *testing.T) string { return suite.NewNamespace(t, k8s) }

func eventually(t *testing.T, f any) gomega.AsyncAssertion { return suite.Eventually(t, f) }

// Command manager runs the dynamic-ingress-operator controllers (and, when
// enabled, its admission webhooks) against a Kubernetes cluster.
package main

import (
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controller"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	webhookv1beta1 "github.com/dynamicingress/dynamic-ingress-operator/internal/webhook/v1beta1"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		metricsAddr, probeAddr string
		leaderElect            bool
		denyCIDRs, allowHosts  string
		maxBodyBytes           int64
		concurrency            int
		stateConcurrency       int
		apiQPS                 float64
		apiBurst               int
		webhookCertPath        string
		webhookPort            int
		enableWebhooks         bool
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", "Address of the metrics endpoint, for example :8080; 0 turns it off.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader so that only one manager replica is active.")
	flag.StringVar(&denyCIDRs, "probe-deny-cidrs", probe.DefaultDenyCIDRs, "Comma-separated CIDRs that probes may not connect to; empty allows every address.")
	flag.StringVar(&allowHosts, "probe-allow-hosts", "", "Comma-separated host names (flags.example.com) or patterns (*.internal.example.com) that probe URLs may name; empty allows any host.")
	flag.Int64Var(&maxBodyBytes, "probe-max-body-bytes", 10240, "Longest probed body stored in a state's status; longer ones are truncated.")
	flag.IntVar(&concurrency, "max-concurrent-reconciles", 32, "DynamicIngresses synced at once after a state changes.")
	flag.IntVar(&stateConcurrency, "state-max-concurrent-reconciles", 8, "DynamicIngressStates whose status is written at once.")
	flag.Float64Var(&apiQPS, "kube-api-qps", 200, "Sustained requests per second to the API server.")
	flag.IntVar(&apiBurst, "kube-api-burst", 400, "Burst of requests to the API server.")
	flag.StringVar(&webhookCertPath, "webhook-cert-path", "/tmp/k8s-webhook-server/serving-certs", "Directory holding the webhook server's tls.crt and tls.key.")
	flag.IntVar(&webhookPort, "webhook-port", 9443, "Port of the webhook server.")
	flag.BoolVar(&enableWebhooks, "enable-webhooks", true, "Serve the admission webhooks; turn off to run without certificates (make run).")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	guard, err := probe.ParseGuard(denyCIDRs, allowHosts)
	if err != nil {
		return fmt.Errorf("--probe-deny-cidrs or --probe-allow-hosts: %w", err)
	}
	if maxBodyBytes < 0 {
		return fmt.Errorf("--probe-max-body-bytes: must not be negative, got %d", maxBodyBytes)
	}

	scheme := controller.NewScheme()

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(apiQPS), apiBurst

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  controller.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
		WebhookServer:          webhook.NewServer(webhook.Options{Port: webhookPort, CertDir: webhookCertPath}),
		LeaderElection:         leaderElect,
		LeaderElectionID:       "dynamic-ingress-operator.ingress.dynamicingress.io",
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	ctx := ctrl.SetupSignalHandler()
	if err := controller.SetupWithManager(ctx, mgr, controller.Options{
		Guard:                        guard,
		MaxBodyBytes:                 maxBodyBytes,
		MaxConcurrentReconciles:      concurrency,
		StateMaxConcurrentReconciles: stateConcurrency,
	}); err != nil {
		return err
	}
	readyCheck := healthz.Ping
	if enableWebhooks {
		if err := webhookv1beta1.SetupWebhooksWithManager(mgr, guard); err != nil {
			return fmt.Errorf("setting up the webhooks: %w", err)
		}
		// Ready once the webhook server serves, so that a Service does not
		// send admission requests to a manager that cannot answer them.
		readyCheck = mgr.GetWebhookServer().StartedChecker()
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", readyCheck); err != nil {
		return err
	}
	log.Info("Starting manager", "probeDenyCIDRs", denyCIDRs, "probeAllowHosts", allowHosts, "probeMaxBodyBytes", maxBodyBytes, "webhooks", enableWebhooks)
	return mgr.Start(ctx)
}

// Command manager runs the dynamic-ingress-operator controllers (and, when
// enabled, its admission webhooks) against a Kubernetes cluster.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controller"
	// The operator's own metrics register on controller-runtime's registry
	// when the package loads, so that /metrics lists them from the start.
	"github.com/dynamicingress/dynamic-ingress-operator/internal/memory"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/metrics"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/version"
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
		metricsSecure          bool
		metricsCertPath        string
		leaderElect            bool
		leaderElectNamespace   string
		denyCIDRs, allowHosts  string
		maxBodyBytes           int64
		concurrency            int
		stateConcurrency       int
		apiQPS                 float64
		apiBurst               int
		webhookCertPath        string
		webhookPort            int
		enableWebhooks         bool
		enableHTTP2            bool
		pprofAddr              string
		namespaces             string
		clusterStates          bool
		clusterResourceNS      string
		flipStalledAfter       time.Duration
		gcPercentAtRest        int
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", "Address of the metrics endpoint, for example :8443; 0 turns it off.")
	flag.BoolVar(&metricsSecure, "metrics-secure", true, "Serve metrics over HTTPS to authenticated clients allowed to get /metrics (a TokenReview and a SubjectAccessReview per client); false serves plain HTTP to anyone.")
	flag.StringVar(&metricsCertPath, "metrics-cert-path", "", "Directory holding the metrics server's tls.crt and tls.key; empty generates a self-signed certificate at start.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader so that only one manager replica runs the controllers and probes; every replica serves the webhooks.")
	flag.StringVar(&leaderElectNamespace, "leader-election-namespace", "", "Namespace of the leader election Lease; empty means the pod's own namespace (required with --leader-elect outside a cluster).")
	flag.StringVar(&denyCIDRs, "probe-deny-cidrs", probe.DefaultDenyCIDRs, "Comma-separated CIDRs that probes may not connect to; empty allows every address.")
	flag.StringVar(&allowHosts, "probe-allow-hosts", "", "Comma-separated host names (flags.example.com) or patterns (*.internal.example.com) that probe URLs may name; empty allows any host.")
	flag.Int64Var(&maxBodyBytes, "probe-max-body-bytes", 10240, "Longest probed body stored in a state's status; longer ones are truncated.")
	flag.IntVar(&concurrency, "max-concurrent-reconciles", 32, "DynamicIngresses synced at once after a state changes.")
	flag.IntVar(&stateConcurrency, "state-max-concurrent-reconciles", 8, "DynamicIngressStates whose status is written at once.")
	flag.Float64Var(&apiQPS, "kube-api-qps", -1, "Requests per second to the API server, per API group and version (and as much again for the metadata-only writes of targets and statuses); negative turns the client-side limit off: the API server's Priority and Fairness protects it, and the reconcile workers bound how many requests are in flight.")
	flag.IntVar(&apiBurst, "kube-api-burst", 400, "Burst of requests to the API server, with a positive --kube-api-qps.")
	flag.StringVar(&webhookCertPath, "webhook-cert-path", "/tmp/k8s-webhook-server/serving-certs", "Directory holding the webhook server's tls.crt and tls.key.")
	flag.IntVar(&webhookPort, "webhook-port", 9443, "Port of the webhook server.")
	flag.BoolVar(&enableWebhooks, "enable-webhooks", true, "Serve the admission webhooks; turn off to run without certificates (make run).")
	flag.BoolVar(&enableHTTP2, "enable-http2", false, "Serve the webhook and metrics endpoints over HTTP/2 as well as HTTP/1.1; off by default (HTTP/2 rapid reset and stream exhaustion, CVE-2023-44487 and CVE-2023-39325).")
	flag.StringVar(&pprofAddr, "pprof-bind-address", "0", "Address of Go's /debug/pprof profiling endpoints (plain HTTP, no authentication), for example 127.0.0.1:6060; 0 turns them off.")
	flag.StringVar(&namespaces, "namespaces", "", "Comma-separated namespaces to watch and write (the manager then needs only Roles in them); empty means every namespace.")
	flag.BoolVar(&clusterStates, "cluster-states", true, "Follow ClusterDynamicIngressStates: reconcile them and let switches in admitted namespaces follow them. Needs read and status access to them and read access to Namespaces; turn off in namespaced mode when the install does not grant it.")
	flag.StringVar(&clusterResourceNS, "cluster-resource-namespace", "", "Namespace of the Secrets that ClusterDynamicIngressStates' probe headers read; empty means the pod's own namespace (outside a cluster there is none, and such headers fail).")
	flag.DurationVar(&flipStalledAfter, "flip-stalled-after", controller.DefaultFlipStalledAfter, "How long after a change of a state its DynamicIngressNotifiers send FlipStalled when some followers do not show it yet (5s to 1h).")
	flag.IntVar(&gcPercentAtRest, "gc-percent-at-rest", memory.DefaultPercent, "The garbage collector's target (GOGC) while the manager is at rest, after 30s of few allocations: the heap's headroom is then only memory; any work puts GOGC back. 0 leaves GOGC alone.")
	printVersion := flag.Bool("version", false, "Print the version, the git commit and the Go version, and exit.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	if *printVersion {
		fmt.Println(version.String())
		return nil
	}
	// Each controller's logger carries plain strings (reconcileLogger in
	// internal/controller), not klog object references.
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	if err := checkFlags(boundedFlags{
		probeDenyCIDRs: denyCIDRs, probeAllowHosts: allowHosts, probeMaxBodyBytes: maxBodyBytes,
		maxConcurrentReconciles: concurrency, stateMaxConcurrentReconciles: stateConcurrency,
		kubeAPIQPS: apiQPS, kubeAPIBurst: apiBurst, webhookPort: webhookPort,
		namespaces: namespaces, flipStalledAfter: flipStalledAfter,
	}); err != nil {
		return err
	}
	watched, err := parseNamespaces(namespaces)
	if err != nil {
		return err
	}
	guard, err := probe.ParseGuard(denyCIDRs, allowHosts)
	if err != nil {
		return err
	}
	tlsOpts := serverTLSOptions(enableHTTP2)

	leaderElectNamespace, err = leaderElectionNamespace(leaderElectNamespace, leaderElect, inClusterNamespaceFile)
	if err != nil {
		return err
	}
	if clusterResourceNS == "" {
		// Outside a cluster there is no pod namespace: cluster states'
		// Secret headers then fail with a message naming the flag.
		clusterResourceNS, _ = podNamespace(inClusterNamespaceFile)
	}

	scheme := controller.NewScheme()

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(apiQPS), apiBurst
	httpRoutes, err := controller.ServesHTTPRoutes(cfg)
	if err != nil {
		return err
	}

	metricsOpts := metricsserver.Options{BindAddress: metricsAddr, SecureServing: metricsSecure, CertDir: metricsCertPath, TLSOpts: tlsOpts}
	if metricsSecure {
		// Each scraper's bearer token is checked with the API server
		// (TokenReview) and so is its permission to get /metrics
		// (SubjectAccessReview): the metrics name every object and state,
		// which is more than every pod in the cluster should read.
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}

	cacheOpts := controller.CacheOptions(httpRoutes, clusterStates)
	if len(watched) > 0 {
		// Every object the manager reconciles comes from its cache, and
		// it writes only those and their targets beside them: caching
		// these namespaces alone keeps it out of every other.
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range watched {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Cache:                   cacheOpts,
		Metrics:                 metricsOpts,
		HealthProbeBindAddress:  probeAddr,
		PprofBindAddress:        pprofAddr,
		WebhookServer:           webhook.NewServer(webhook.Options{Port: webhookPort, CertDir: webhookCertPath, TLSOpts: tlsOpts}),
		LeaderElection:          leaderElect,
		LeaderElectionID:        "dynamic-ingress-operator.ingress.dynamicingress.io",
		LeaderElectionNamespace: leaderElectNamespace,
		// A leader that stops cleanly (a rolling update, a drained node)
		// gives the Lease up, so a standby takes over within its retry
		// period (2s, jittered up to 4.4s) instead of waiting for the Lease to expire (15s),
		// during which no state would be probed and nothing would switch.
		// This is safe only because the process exits as soon as
		// mgr.Start returns (run returns, main exits): nothing acts as
		// leader after the Lease is released.
		LeaderElectionReleaseOnCancel: true,
		// The Lease is released after every runnable stopped, so stopping
		// must end before the kubelet's SIGKILL: this is shorter than
		// terminationGracePeriodSeconds (30) in config/manager/manager.yaml.
		GracefulShutdownTimeout: ptr(gracefulShutdownTimeout),
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	ctx := ctrl.SetupSignalHandler()
	rest := &memory.Rest{Percent: gcPercentAtRest, Log: log.WithName("memory")}
	if err := mgr.Add(rest); err != nil {
		return err
	}
	metrics.RegisterRest(rest.AtRest)
	if err := controller.SetupWithManager(ctx, mgr, controller.Options{
		Guard:                        guard,
		MaxBodyBytes:                 maxBodyBytes,
		MaxConcurrentReconciles:      concurrency,
		StateMaxConcurrentReconciles: stateConcurrency,
		HTTPRoutes:                   httpRoutes,
		ClusterStates:                clusterStates,
		ClusterResourceNamespace:     clusterResourceNS,
		FlipStalledAfter:             flipStalledAfter,
		Namespaces:                   watched,
		Working:                      rest.Wake,
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
	log.Info("Starting manager", "probeDenyCIDRs", denyCIDRs, "probeAllowHosts", allowHosts, "probeMaxBodyBytes", maxBodyBytes, "webhooks", enableWebhooks,
		"leaderElection", leaderElect, "leaderElectionNamespace", leaderElectNamespace, "metricsAddress", metricsAddr, "metricsSecure", metricsSecure, "http2", enableHTTP2, "namespaces", watched,
		"clusterStates", clusterStates, "clusterResourceNamespace", clusterResourceNS)
	// Nothing may run after Start returns: with
	// LeaderElectionReleaseOnCancel the Lease is already released then.
	return mgr.Start(ctx)
}

// gracefulShutdownTimeout bounds how long the manager waits for its
// controllers, probes and webhook requests to stop before it releases the
// leader election Lease and exits.
const gracefulShutdownTimeout = 20 * time.Second

// inClusterNamespaceFile holds the namespace of the pod's ServiceAccount.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// leaderElectionNamespace returns the namespace of the leader election
// Lease: the flag's value, else the pod's namespace read from
// namespaceFile. Outside a cluster there is no such file, and guessing a
// namespace would let two managers pointed at one cluster elect a leader
// each in different namespaces, so the flag is then required.
func leaderElectionNamespace(flagValue string, leaderElect bool, namespaceFile string) (string, error) {
	if !leaderElect || flagValue != "" {
		return flagValue, nil
	}
	ns, err := podNamespace(namespaceFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("--leader-election-namespace is required with --leader-elect when the manager runs outside a cluster (%s does not exist)", namespaceFile)
	}
	if err != nil {
		return "", fmt.Errorf("reading the pod's namespace for --leader-elect: %w", err)
	}
	if ns == "" {
		return "", fmt.Errorf("--leader-elect: %s is empty; set --leader-election-namespace", namespaceFile)
	}
	return ns, nil
}

// podNamespace is the pod's namespace, read from namespaceFile.
func podNamespace(namespaceFile string) (string, error) {
	raw, err := os.ReadFile(namespaceFile)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(raw)), nil
}

func ptr[T any](v T) *T { return &v }

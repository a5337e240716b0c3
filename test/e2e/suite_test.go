// Package e2e tests the operator the way its users meet it: the built
// manager binary as a process of its own, webhooks over TLS, the garbage
// collector, and the real kubectl, with assertions on what kubectl prints
// and returns.
package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

var (
	cluster   *controlplane.Cluster
	statusAPI *controlplane.StatusAPI
	workDir   string
	managerMu sync.Mutex
	manager   *controlplane.Process
	// managerBinary is the manager, built from ./cmd for this run.
	managerBinary string
	// pluginDir holds kubectl-dynamic, built from ./cmd/kubectl-dynamic
	// for this run; runPlugin puts it first on kubectl's PATH.
	pluginDir  string
	namespaces atomic.Int64
)

// metricsAddr is where the manager serves its metrics in this suite.
const metricsAddr = "127.0.0.1:18443"

// sampleStatusAddr is where config/samples' probed state looks.
const sampleStatusAddr = "127.0.0.1:18080"

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	var err error
	if workDir, err = os.MkdirTemp("", "dynamic-ingress-e2e-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	managerBinary = filepath.Join(workDir, "manager")
	if err := suite.BuildManager(managerBinary); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	pluginDir = filepath.Join(workDir, "plugin")
	if err := suite.BuildPlugin(filepath.Join(pluginDir, "kubectl-dynamic")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cluster, err = controlplane.Start(controlplane.Options{
		Dir: workDir, GarbageCollector: true, Webhooks: true,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = cluster.Stop() }()
	if statusAPI, err = controlplane.StartStatusAPI(sampleStatusAddr, "/api/v1/maintenance", `{"maintenance": false}`); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = statusAPI.Close() }()
	// config/samples' maintenance state sends the demo token from its
	// Secret: a 200 in its status shows the token arrived.
	statusAPI.RequireAuthorization("Bearer demo-token")
	if err := startManager(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stopManager()
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "e2e work directory (manager.log, kubeconfig): %s\n", workDir)
	} else {
		_ = os.RemoveAll(workDir)
	}
	return code
}

// startManager starts the manager binary and waits until its webhooks answer.
func startManager() error {
	managerMu.Lock()
	defer managerMu.Unlock()
	p, err := controlplane.StartProcess(filepath.Join(workDir, "manager.log"), managerBinary,
		"--kubeconfig="+cluster.Kubeconfig,
		"--health-probe-bind-address=0",
		"--webhook-cert-path="+cluster.WebhookCertDir,
		fmt.Sprintf("--webhook-port=%d", cluster.WebhookPort),
		// Probes reach the local status API; keep the rest of the deny list.
		"--probe-deny-cidrs=169.254.0.0/16,fe80::/10,0.0.0.0/8",
		// Plain HTTP on loopback for the metrics test; the bundle's
		// authenticated HTTPS endpoint is tested in test/config.
		"--metrics-bind-address="+metricsAddr, "--metrics-secure=false",
	)
	if err != nil {
		return err
	}
	manager = p
	return suite.WaitForWebhooks(controlplane.Kubectl{Kubeconfig: cluster.Kubeconfig}, p, filepath.Join(workDir, "manager.log"))
}

func stopManager() {
	managerMu.Lock()
	defer managerMu.Unlock()
	manager.Stop(10 * time.Second)
}

// killManager ends the manager with SIGKILL, as a crash would.
func killManager() {
	managerMu.Lock()
	defer managerMu.Unlock()
	manager.Kill()
}

// runKubectl runs the real kubectl against the cluster.
func runKubectl(stdin string, args ...string) (stdout, stderr string, err error) {
	return controlplane.Kubectl{Kubeconfig: cluster.Kubeconfig}.Run(stdin, args...)
}

// kubectl runs kubectl and fails the test when it fails.
func kubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, stderr, err := runKubectl(stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	return out
}

// newNamespace creates a namespace for one test with kubectl, named after
// prefix and unique within the run (go test -count=N reruns tests).
func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", prefix, namespaces.Add(1))
	kubectl(t, "", "create", "namespace", name)
	return name
}

func stateManifest(ns, name, code string) string {
	return fmt.Sprintf(`apiVersion: ingress.dynamicingress.io/v1beta1
kind: DynamicIngressState
metadata: {namespace: %s, name: %s}
spec:
  fixedResponse: {status: "%s"}
`, ns, name, code)
}

func probedStateManifest(ns, name, url string) string {
	return fmt.Sprintf(`apiVersion: ingress.dynamicingress.io/v1beta1
kind: DynamicIngressState
metadata: {namespace: %s, name: %s}
spec:
  probe: {url: "%s", interval: 1s, failureThreshold: 2}
`, ns, name, url)
}

// dynamicIngressManifest routes host to "web" while passive and to "sorry"
// while active; path lets a test make the active template invalid.
func dynamicIngressManifest(ns, name, target, state, path string) string {
	return fmt.Sprintf(`apiVersion: ingress.dynamicingress.io/v1beta1
kind: DynamicIngress
metadata: {namespace: %[1]s, name: %[2]s}
spec:
  target: {name: %[3]s}
  state: %[4]s
  expected: {statusCode: "200"}
  passiveIngress:
    template:
      spec:
        rules:
        - host: %[2]s.example.com
          http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}
  activeIngress:
    template:
      metadata:
        annotations: {example.com/mode: sorry}
      spec:
        rules:
        - host: %[2]s.example.com
          http: {paths: [{path: %[5]s, pathType: Prefix, backend: {service: {name: sorry, port: {number: 80}}}}]}
`, ns, name, target, state, path)
}

// contestedManifest is a DynamicIngress with no passive Ingress: while it
// is passive someone else creates an Ingress at its target name
// (unownedIngressesManifest), which its flips must leave be.
func contestedManifest(ns string) string {
	return fmt.Sprintf(`apiVersion: ingress.dynamicingress.io/v1beta1
kind: DynamicIngress
metadata: {namespace: %s, name: contested}
spec:
  target: {name: contested}
  state: flag
  expected: {statusCode: "200"}
  activeIngress:
    template:
      spec:
        defaultBackend: {service: {name: ours, port: {number: 80}}}
`, ns)
}

// unownedIngressesManifest is two Ingresses the operator does not own:
// contested, at contestedManifest's target name, and lookalike, with the
// operator's managed-by label but no ownerReference.
func unownedIngressesManifest(ns string) string {
	return fmt.Sprintf(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {namespace: %[1]s, name: contested}
spec:
  defaultBackend: {service: {name: theirs, port: {number: 80}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {namespace: %[1]s, name: lookalike, labels: {app.kubernetes.io/managed-by: dynamic-ingress-operator}}
spec:
  defaultBackend: {service: {name: theirs, port: {number: 80}}}
`, ns)
}

// Package uninstall walks the uninstall docs/install.md documents, with
// its commands as the page writes them, on a local control plane of its
// own whose garbage collector runs: deleting the CRDs is for the whole
// cluster, so it cannot share the e2e suite's.
package uninstall

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
)

var (
	cluster *controlplane.Cluster
	workDir string
	// managerBinary is the manager, built from ./cmd for this run.
	managerBinary string
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	var err error
	if workDir, err = os.MkdirTemp("", "dynamic-ingress-uninstall-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	managerBinary = filepath.Join(workDir, "manager")
	build := exec.Command("go", "build", "-o", managerBinary, "./cmd")
	build.Dir = controlplane.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the manager: %v\n%s", err, out)
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
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "uninstall work directory (manager.log, kube-controller-manager.log, kubeconfig): %s\n", workDir)
	} else {
		_ = os.RemoveAll(workDir)
	}
	return code
}

// startManager starts the manager binary and waits until its webhooks
// answer.
func startManager(t *testing.T) *controlplane.Process {
	t.Helper()
	p, err := controlplane.StartProcess(filepath.Join(workDir, "manager.log"), managerBinary,
		"--kubeconfig="+cluster.Kubeconfig,
		"--health-probe-bind-address=0",
		"--metrics-bind-address=0",
		"--webhook-cert-path="+cluster.WebhookCertDir,
		fmt.Sprintf("--webhook-port=%d", cluster.WebhookPort),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(10 * time.Second) })
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if p.Exited() {
			t.Fatalf("the manager exited at start; see %s", filepath.Join(workDir, "manager.log"))
		}
		// A dry-run create goes through the webhooks: it fails with a
		// connection error until they serve.
		_, stderr, err := runKubectl(stateManifest("default", "webhook-check", "200"), "create", "--dry-run=server", "-f", "-")
		if err == nil {
			return p
		}
		if !strings.Contains(stderr, "failed calling webhook") {
			t.Fatalf("checking the webhooks: %v: %s", err, stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("the manager's webhooks did not answer within 30s")
	return nil
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

// runShell runs commands copied from the docs with bash, in dir, with the
// project's kubectl first on the PATH and the cluster's kubeconfig, and
// fails the test when they fail.
func runShell(t *testing.T, dir, commands string) {
	t.Helper()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", commands)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"PATH="+controlplane.AssetsDir()+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+cluster.Kubeconfig)
	out, err := cmd.CombinedOutput()
	t.Logf("$ %s\n%s", commands, out)
	if err != nil {
		t.Fatalf("the documented commands failed: %v", err)
	}
}

func stateManifest(ns, name, code string) string {
	return fmt.Sprintf(`apiVersion: ingress.dynamicingress.io/v1beta1
kind: DynamicIngressState
metadata: {namespace: %s, name: %s}
spec:
  fixedResponse: {status: "%s"}
`, ns, name, code)
}

// dynamicIngressManifest routes name.example.com to "web" while passive
// and to "sorry" while active (the state answering 200).
func dynamicIngressManifest(ns, name, state string) string {
	return fmt.Sprintf(`apiVersion: ingress.dynamicingress.io/v1beta1
kind: DynamicIngress
metadata: {namespace: %[1]s, name: %[2]s}
spec:
  target: {name: %[2]s}
  state: %[3]s
  expected: {statusCode: "200"}
  passiveIngress:
    template:
      metadata:
        labels: {app: %[2]s}
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
          http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: sorry, port: {number: 80}}}}]}
`, ns, name, state)
}

// dynamicHTTPRouteManifest sends name.example.com to "web" while passive
// and redirects it while active (the state answering 503).
func dynamicHTTPRouteManifest(ns, name, state string) string {
	return fmt.Sprintf(`apiVersion: ingress.dynamicingress.io/v1beta1
kind: DynamicHTTPRoute
metadata: {namespace: %[1]s, name: %[2]s}
spec:
  target: {name: %[2]s}
  state: %[3]s
  expected: {statusCode: "503"}
  passiveRoute:
    template:
      spec:
        parentRefs: [{name: public}]
        hostnames: [%[2]s.example.com]
        rules: [{backendRefs: [{name: web, port: 80}]}]
  activeRoute:
    template:
      spec:
        parentRefs: [{name: public}]
        hostnames: [%[2]s.example.com]
        rules: [{filters: [{type: RequestRedirect, requestRedirect: {hostname: status.example.com, statusCode: 302}}]}]
`, ns, name, state)
}

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
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
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
	if err := suite.BuildManager(managerBinary); err != nil {
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
	if err := suite.WaitForWebhooks(controlplane.Kubectl{Kubeconfig: cluster.Kubeconfig}, p, filepath.Join(workDir, "manager.log")); err != nil {
		t.Fatal(err)
	}
	return p
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

// stateManifest is a fixed state answering code.
func stateManifest(ns, name, code string) string {
	return builders.FixedState(ns, name, code, "").YAML()
}

// dynamicIngressManifest routes name.example.com to "web" while passive
// and to "sorry" while active (the state answering 200).
func dynamicIngressManifest(ns, name, state string) string {
	host := name + ".example.com"
	return builders.DynamicIngress(ns, name).State(state).ExpectCode("200").
		Passive(builders.IngressTo(host, "web").Label("app", name)).
		Active(builders.IngressTo(host, "sorry").Annotation("example.com/mode", "sorry")).YAML()
}

// dynamicHTTPRouteManifest sends name.example.com to "web" while passive
// and redirects it while active (the state answering 503).
func dynamicHTTPRouteManifest(ns, name, state string) string {
	host := name + ".example.com"
	return builders.DynamicHTTPRoute(ns, name).State(state).ExpectCode("503").
		Passive(builders.RouteTo(host, "web")).Active(builders.RedirectTo(host, "status.example.com")).YAML()
}

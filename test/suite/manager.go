package suite

import (
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// BuildManager builds the manager from ./cmd into path, for the suites
// that run it as a process of its own.
func BuildManager(path string) error {
	return build(path, "./cmd", "the manager")
}

// BuildPlugin builds the kubectl plugin from ./cmd/kubectl-dynamic into
// path, for the suites that run it through kubectl: path's directory goes
// first on kubectl's PATH (controlplane.Kubectl.PluginDir), and its base
// name must be kubectl-dynamic.
func BuildPlugin(path string) error {
	return build(path, "./cmd/kubectl-dynamic", "the kubectl plugin")
}

// build builds the package pkg of the repository into path.
func build(path, pkg, what string) error {
	build := exec.Command("go", "build", "-o", path, pkg)
	build.Dir = controlplane.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %v\n%s", what, err, out)
	}
	return nil
}

// WaitForWebhooks waits until the manager p serves its webhooks: a
// dry-run create goes through them, and fails with a connection error
// until they answer. logPath is the manager's log, named when it exits.
func WaitForWebhooks(k controlplane.Kubectl, p *controlplane.Process, logPath string) error {
	probe := builders.FixedState("default", "webhook-check", "200", "").YAML()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if p.Exited() {
			return fmt.Errorf("the manager exited at start; see %s", logPath)
		}
		_, stderr, err := k.Run(probe, "create", "--dry-run=server", "-f", "-")
		if err == nil {
			return nil
		}
		if !strings.Contains(stderr, "failed calling webhook") {
			return fmt.Errorf("checking the webhooks: %v: %s", err, stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("the manager's webhooks did not answer within 30s")
}

package e2e

import (
	"strings"
	"testing"
)

// TestDeletionsPassWithTheManagerDown: the webhooks fail closed, but their
// matchConditions keep deletions, the garbage collector's finalizer
// updates and other spec-less updates away from them, so with no manager
// serving the webhooks a foreground deletion and a namespace deletion still
// complete, while a spec change is refused.
func TestDeletionsPassWithTheManagerDown(t *testing.T) {
	ns := newNamespace(t, "down")
	doomed := newNamespace(t, "doomed")
	for _, n := range []string{ns, doomed} {
		kubectl(t, stateManifest(n, "flag", "503"), "apply", "-f", "-")
		kubectl(t, dynamicIngressManifest(n, "site", "site", "flag", "/"), "apply", "-f", "-")
		kubectl(t, "", "wait", "-n", n, "--for=create", "ingress/site", "--timeout=30s")
	}

	stopManager()
	t.Cleanup(func() {
		if err := startManager(); err != nil {
			t.Errorf("restarting the manager: %v", err)
		}
	})

	// With nobody serving the webhooks, a spec change is refused...
	_, stderr, err := runKubectl("", "patch", "-n", ns, "di", "site", "--type", "merge", "-p", `{"spec":{"expected":{"statusCode":"201"}}}`)
	if err == nil || !strings.Contains(stderr, "failed calling webhook") {
		t.Errorf("a spec change with the webhooks down: err %v, stderr %q; want it refused by the unreachable webhook", err, stderr)
	}
	// ...but a label is not a spec change.
	kubectl(t, "", "label", "-n", ns, "di", "site", "team=shop")

	// The garbage collector deletes the Ingress first, then removes its
	// foregroundDeletion finalizer from the DynamicIngress: an update.
	kubectl(t, "", "delete", "-n", ns, "di", "site", "--cascade=foreground", "--timeout=30s")
	if out, _, _ := runKubectl("", "get", "-n", ns, "ingress", "site", "--ignore-not-found"); strings.TrimSpace(out) != "" {
		t.Errorf("the Ingress of the deleted DynamicIngress is still there:\n%s", out)
	}
	kubectl(t, "", "delete", "namespace", doomed, "--timeout=60s")
}

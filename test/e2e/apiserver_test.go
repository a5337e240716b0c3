package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// apiServerOutage is how long kube-apiserver stays down in
// TestAPIServerOutageDuringAFlip.
const apiServerOutage = 10 * time.Second

// TestAPIServerOutageDuringAFlip stops kube-apiserver right after one state
// flips 200 DynamicIngresses, keeps it down for 10s, and starts it again on
// the same address and etcd. The manager, which was not restarted, must
// complete the flip, and leave alone an Ingress in the way of one
// DynamicIngress and a look-alike with our label but no ownerReference.
func TestAPIServerOutageDuringAFlip(t *testing.T) {
	// On a cluster of its own: runs beside the other fault test, after the
	// tests that share the suite's cluster.
	t.Parallel()
	f := startFaultCluster(t, "")
	mgr := f.startManager("manager", f.cluster.Kubeconfig, f.cluster.WebhookPort)
	ns := "outage"
	f.kubectl("", "create", "namespace", ns)
	const n = 200
	// contested has no passive Ingress; while it is passive someone else
	// creates an Ingress at its target name.
	f.createFlipFleet(ns, n, contestedManifest(ns))
	f.kubectl(unownedIngressesManifest(ns), "apply", "-f", "-")
	before := f.kubectl("", "get", "-n", ns, "ingress", "contested", "lookalike", "-o", "yaml")
	f.waitForSites(ns, n, "web", 30*time.Second)
	updatesBefore := mgr.logLines("Updated Ingress")

	address := f.cluster.APIServerAddress()
	f.flip(ns, "200")
	stopped := time.Now()
	if err := f.cluster.StopAPIServer(); err != nil {
		t.Fatalf("stopping kube-apiserver: %v", err)
	}
	t.Logf("kube-apiserver stopped; the manager had switched %d Ingresses by then (its log)", mgr.logLines("Updated Ingress")-updatesBefore)
	time.Sleep(apiServerOutage)
	if _, _, err := f.k.Run("", "get", "namespace", ns); err == nil {
		t.Fatal("kubectl still reaches the API server after it was stopped")
	}
	starting := time.Now()
	if err := f.cluster.StartAPIServer(); err != nil {
		t.Fatalf("starting kube-apiserver again: %v", err)
	}
	restarted := time.Now()
	// The manager and kubectl keep their kubeconfigs: same address, same
	// serving certificate.
	if got := f.cluster.APIServerAddress(); got != address {
		t.Fatalf("kube-apiserver came back on %s, not on %s", got, address)
	}
	if mgr.Exited() {
		t.Fatalf("the manager exited during the outage; see %s", mgr.log)
	}
	t.Logf("kube-apiserver serves again on %s, %v after it was told to stop; it took %v to start",
		f.cluster.APIServerAddress(), restarted.Sub(stopped).Round(100*time.Millisecond), restarted.Sub(starting).Round(100*time.Millisecond))

	// Generous: after a 10s outage the manager's watches and its retries
	// back off for about as long as the outage lasted, far below this.
	done := f.waitForSites(ns, n, "sorry", 2*time.Minute)
	t.Logf("every Ingress switched %v after kube-apiserver was back (%d switched by the manager in all)",
		done.Sub(restarted).Round(100*time.Millisecond), mgr.logLines("Updated Ingress")-updatesBefore)

	if mgr.Exited() {
		t.Fatalf("the manager exited after the outage; see %s", mgr.log)
	}
	if after := f.kubectl("", "get", "-n", ns, "ingress", "contested", "lookalike", "-o", "yaml"); after != before {
		t.Errorf("Ingresses the operator does not own changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// What kubectl get di shows: every site Active and Ready, contested
	// Active but not Ready, naming the conflict.
	deadline := time.Now().Add(30 * time.Second)
	for {
		conds := f.conditions(ns)
		var wrong []string
		for name, got := range conds {
			want := "Active=True/Matched Ready=True/Synced"
			if name == "contested" {
				want = "Active=True/Matched Ready=False/TargetConflict"
			}
			if got != want {
				wrong = append(wrong, fmt.Sprintf("%s: %s, want %s", name, got, want))
			}
		}
		if len(conds) != n+1 {
			wrong = append(wrong, fmt.Sprintf("%d DynamicIngresses, want %d", len(conds), n+1))
		}
		if len(wrong) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("conditions 30s after the flip completed:\n%s", strings.Join(wrong, "\n"))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

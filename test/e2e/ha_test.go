package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
)

// leaseName is the manager's leader election Lease (cmd/main.go).
const leaseName = "dynamic-ingress-operator.ingress.dynamicingress.io"

// holder is the Lease's holderIdentity as kubectl shows it; "" while
// nobody holds it or kubectl fails.
func (f *faultCluster) holder(ns string) string {
	out, _, err := f.k.Run("", "get", "lease", "-n", ns, leaseName, "-o", "jsonpath={.spec.holderIdentity}")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// waitForHolder polls the Lease until it has a holder other than the ones
// given, and returns it with when kubectl first showed it.
func (f *faultCluster) waitForHolder(ns string, timeout time.Duration, not ...string) (string, time.Time) {
	f.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		h := f.holder(ns)
		if h != "" && !strings.Contains(strings.Join(not, "\n"), h) {
			return h, time.Now()
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("the Lease %s/%s has no new holder after %v (holder %q)", ns, leaseName, timeout, h)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// admit dry-runs the creation of manifest through the webhooks. The API
// server keeps its connection to a webhook server; the first request after
// that server died may still go to it and fail, as it would through a
// Service: kubectl is run again then.
func (f *faultCluster) admit(manifest string) {
	f.t.Helper()
	for attempt := 1; ; attempt++ {
		out, stderr, err := f.k.Run(manifest, "create", "--dry-run=server", "-f", "-")
		if err == nil {
			return
		}
		if attempt == 3 || !strings.Contains(stderr, "failed calling webhook") {
			f.t.Fatalf("kubectl create --dry-run=server: %v\n%s%s", err, out, stderr)
		}
		f.t.Logf("kubectl create --dry-run=server, attempt %d: %s", attempt, strings.TrimSpace(stderr))
	}
}

// onlyLeaderWrote checks in the API server's audit log that, between from
// and to, the user standby wrote nothing (dry runs of its webhooks aside)
// and the user leader wrote at least ingresses Ingresses.
func (f *faultCluster) onlyLeaderWrote(phase string, from, to time.Time, leader, standby string, ingresses int) {
	f.t.Helper()
	// The API server logs a request before it answers it (audit log mode
	// blocking), but the leader may still be writing statuses.
	time.Sleep(time.Second)
	events := f.writes(from, to)
	byLeader, byStandby := writesBy(events, leader), writesBy(events, standby)
	f.t.Logf("%s: %s (leader) wrote %v; %s (standby) wrote %v", phase, leader, byLeader, standby, byStandby)
	if realWrites(byStandby) != 0 {
		f.t.Errorf("%s: the standby %s wrote %v; only the leader may write", phase, standby, byStandby)
	}
	if byLeader["ingresses"] < ingresses {
		f.t.Errorf("%s: the leader %s wrote %d Ingresses, want at least %d", phase, leader, byLeader["ingresses"], ingresses)
	}
}

// TestLeaderElection runs two managers with --leader-elect against one
// cluster, both serving the webhooks behind a balancer (as the webhook
// Service does in the bundle), each with a user of its own so that the
// API server's audit log says who wrote what. Only the leader writes; when
// the leader is killed in the middle of a flip of 200 DynamicIngresses the
// standby takes the Lease once it expires and completes the flip; when the
// leader stops cleanly (SIGTERM) it releases the Lease and the standby
// takes over at its next try.
func TestLeaderElection(t *testing.T) {
	// On a cluster of its own: runs beside the other fault test, after the
	// tests that share the suite's cluster.
	t.Parallel()
	f := startFaultCluster(t, auditWritesPolicy)
	const leaseNS = "operator-system"
	f.kubectl("", "create", "namespace", leaseNS)
	// Both managers serve the webhooks, each on a port of its own; the
	// API server's webhook configuration points at the balancer, which
	// passes each connection to a manager that accepts it.
	portA, err := controlplane.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	portB, err := controlplane.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	balancer, err := controlplane.StartBalancer(fmt.Sprintf("127.0.0.1:%d", f.cluster.WebhookPort),
		fmt.Sprintf("127.0.0.1:%d", portA), fmt.Sprintf("127.0.0.1:%d", portB))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = balancer.Close() })
	userA, err := f.cluster.AddUser("manager-a")
	if err != nil {
		t.Fatal(err)
	}
	userB, err := f.cluster.AddUser("manager-b")
	if err != nil {
		t.Fatal(err)
	}
	leaderElect := []string{"--leader-elect", "--leader-election-namespace=" + leaseNS}

	a := f.startManager("manager-a", userA, portA, leaderElect...)
	holderA, _ := f.waitForHolder(leaseNS, 30*time.Second)
	t.Logf("manager-a leads: the Lease holder is %s", holderA)
	bStarted := time.Now()
	b := f.startManager("manager-b", userB, portB, leaderElect...)

	ns := "ha"
	f.kubectl("", "create", "namespace", ns)
	const n = 200
	f.createFlipFleet(ns, n, "")

	// 1. Only the leader writes.
	flipped := time.Now()
	f.flip(ns, "200")
	done := f.waitForSites(ns, n, "sorry", time.Minute)
	t.Logf("flip 1 (manager-a leads, manager-b stands by): %v", done.Sub(flipped).Round(100*time.Millisecond))
	if h := f.holder(leaseNS); h != holderA {
		t.Fatalf("the Lease holder changed to %q while manager-a ran", h)
	}
	f.onlyLeaderWrote("creation and flip 1", bStarted, time.Now(), "manager-a", "manager-b", n)

	// 2. SIGKILL the leader 100ms into a flip.
	flipped2 := time.Now()
	f.flip(ns, "503")
	time.Sleep(100 * time.Millisecond)
	a.Kill()
	killed := time.Now()
	// The standby serves the webhooks: with the leader gone and the Lease
	// not yet expired, an admission request is answered all the same.
	f.admit(dynamicIngressManifest(ns, "admitted", "admitted", "flag", "/"))
	admitted := time.Now()
	holderB, tookOver := f.waitForHolder(leaseNS, time.Minute, holderA)
	t.Logf("manager-b leads: the Lease holder is %s", holderB)
	// Generous: the Lease expires 15s after the leader's last renewal.
	done2 := f.waitForSites(ns, n, "web", 2*time.Minute)
	t.Logf("manager-a killed; manager-b took the Lease %v later (the Lease lasts 15s after its last renewal) and completed the flip %v after the kill",
		tookOver.Sub(killed).Round(100*time.Millisecond), done2.Sub(killed).Round(100*time.Millisecond))
	if b.Exited() {
		t.Fatalf("manager-b exited; see %s", b.log)
	}

	// 3. SIGTERM the leader: it releases the Lease.
	a2Started := time.Now()
	a2 := f.startManager("manager-a2", userA, portA, leaderElect...)
	// Long enough for manager-a2 to try for the Lease once: it must not
	// get it while manager-b renews it.
	for range 20 {
		if h := f.holder(leaseNS); h != holderB {
			t.Fatalf("the Lease holder changed to %q while manager-b ran", h)
		}
		time.Sleep(250 * time.Millisecond)
	}
	termed := time.Now()
	stopped := make(chan time.Time, 1)
	go func() { b.Stop(30 * time.Second); stopped <- time.Now() }()
	_, handedOver := f.waitForHolder(leaseNS, time.Minute, holderA, holderB)
	handOver := handedOver.Sub(termed)
	exited := <-stopped
	t.Logf("manager-b got SIGTERM; it exited %v later, and manager-a2 held the Lease %v after the SIGTERM",
		exited.Sub(termed).Round(100*time.Millisecond), handOver.Round(100*time.Millisecond))
	// Generous: the standby tries every 2s to 4.4s (client-go jitters the
	// retry period by up to 120%), so a released Lease is taken within
	// about 5s of the SIGTERM; one not released only after it expires, 15s
	// after its last renewal: 13s to 19s after the SIGTERM.
	if handOver > 10*time.Second {
		t.Errorf("the Lease passed %v after the leader's SIGTERM: it was not released (it expired)", handOver)
	}
	flipped = time.Now()
	f.flip(ns, "200")
	done = f.waitForSites(ns, n, "sorry", time.Minute)
	t.Logf("flip 3 (manager-a2 leads): %v", done.Sub(flipped).Round(100*time.Millisecond))
	if a2.Exited() {
		t.Fatalf("manager-a2 exited; see %s", a2.log)
	}
	end := time.Now()

	f.onlyLeaderWrote("manager-b leads, manager-a2 stands by", a2Started, termed, "manager-b", "manager-a", 0)
	f.onlyLeaderWrote("flip 3", flipped, end, "manager-a", "manager-b", n)
	if checked := writesBy(f.writes(killed, admitted), "manager-b")["dry-run ingresses"]; checked == 0 {
		t.Errorf("the dry-run create after the kill was not checked by manager-b's webhooks")
	}
	// manager-a2 (user manager-a too) started after flip 2 was complete.
	flip2 := map[string]int{}
	for _, e := range f.writes(flipped2, a2Started) {
		if e.ObjectRef.Resource == "ingresses" && e.ObjectRef.Namespace == ns && !e.dryRun() {
			flip2[fmt.Sprintf("%s %d", e.User.Username, e.ResponseStatus.Code)]++
		}
	}
	t.Logf("flip 2: Ingress writes by user and response code: %v (manager-a before it was killed, manager-b after it took over)", flip2)
	t.Logf("manager-b after its SIGTERM wrote %v", writesBy(f.writes(termed, exited.Add(time.Second)), "manager-b"))
}

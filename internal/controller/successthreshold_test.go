package controller_test

import (
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// blipService is a status API that answers 200 and can be told to answer
// 502 to its next requests, however many.
type blipService struct {
	url string
	// blips is how many of the next requests get a 502.
	blips atomic.Int32
	// served502 counts the 502s answered.
	served502 atomic.Int32
}

func startBlipService(t *testing.T) *blipService {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blipService{url: "http://" + l.Addr().String() + "/status"}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for {
			n := b.blips.Load()
			if n <= 0 {
				_, _ = fmt.Fprint(w, `{"ok":true}`)
				return
			}
			if b.blips.CompareAndSwap(n, n-1) {
				b.served502.Add(1)
				w.WriteHeader(http.StatusBadGateway)
				_, _ = fmt.Fprint(w, "bad gateway")
				return
			}
		}
	}), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return b
}

// blipFixture is a state probing a blipService every second with
// successThreshold 3, and DynamicIngresses expecting 200 from it, all
// active and settled. They start passive (the state has no response until
// its third probe): settled is the resourceVersion of the last object
// written, so that the Switched events of that start can be told apart.
func blipFixture(t *testing.T, dynamicIngresses int) (ns string, api *blipService, state *v1beta1.DynamicIngressState, settled uint64) {
	t.Helper()
	ns = newNamespace(t)
	api = startBlipService(t)
	state = builders.ProbedState(ns, "status-api", api.url).Interval(time.Second).Timeout(time.Second / 2).
		FailureThreshold(3).SuccessThreshold(3).Obj()
	create(t, state)
	for i := range dynamicIngresses {
		name := fmt.Sprintf("site-%d", i)
		create(t, builders.DynamicIngress(ns, name).State(state.Name).ExpectCode("200").
			Passive(builders.IngressTo(name+".example.com", "sorry")).
			Active(builders.IngressTo(name+".example.com", "web")).Obj())
	}
	eventually(t, stateStatus(state)).Should(Equal(`200 "{\"ok\":true}"`))
	eventually(t, activeCount(t, ns)).Should(Equal(dynamicIngresses))
	eventually(t, backendsIn(t, ns)).Should(And(HaveLen(dynamicIngresses), HaveEach("web")))
	// Settled: nothing in the namespace is written any more.
	eventually(t, func() string {
		before := resourceVersions(t, ns)
		time.Sleep(1500 * time.Millisecond)
		return diffMaps(before, resourceVersions(t, ns))
	}).Should(BeEmpty())
	for _, rv := range resourceVersions(t, ns) {
		settled = max(settled, revision(t, rv))
	}
	for _, rv := range switchedEventsAfter(t, ns, 0)() {
		settled = max(settled, rv)
	}
	return ns, api, state, settled
}

// TestSuccessThresholdRidesOutABlip: with successThreshold 3 at 1s, a
// status API that answers 502 once between 200s changes nothing: the
// state's status never shows the 502, no DynamicIngress leaves active, no
// object is written and nothing is announced.
func TestSuccessThresholdRidesOutABlip(t *testing.T) {
	const sites = 5
	ns, api, state, settled := blipFixture(t, sites)
	before := resourceVersions(t, ns)

	api.blips.Store(1)
	// From the blip to three probes after it, the status and the modes
	// hold; a write in between would show in the resourceVersions.
	NewWithT(t).Consistently(func() string {
		return fmt.Sprintf("%s, %d active", stateStatus(state)(), activeCount(t, ns)())
	}, 4500*time.Millisecond, 50*time.Millisecond).Should(Equal(fmt.Sprintf(`200 "{\"ok\":true}", %d active`, sites)))
	if n := api.served502.Load(); n != 1 {
		t.Fatalf("the status API answered %d 502s, want exactly 1", n)
	}
	if diff := diffMaps(before, resourceVersions(t, ns)); diff != "" {
		t.Errorf("objects written for a one-probe blip: %s", diff)
	}
	if events := switchedEventsAfter(t, ns, settled)(); len(events) != 0 {
		t.Errorf("%d Switched events for a one-probe blip, want none", len(events))
	}
	NewWithT(t).Expect(conditionOf(state, v1beta1.ConditionReady)()).To(Equal("True/ProbeSucceeded"))
}

// TestSuccessThresholdRecordsALastingChange: the same state records a 502
// that lasts, at the third probe that returned it, and its DynamicIngresses
// switch.
func TestSuccessThresholdRecordsALastingChange(t *testing.T) {
	const sites = 3
	ns, api, state, settled := blipFixture(t, sites)

	api.blips.Store(1 << 20) // 502 from now on
	eventually(t, stateStatus(state)).Should(Equal(`502 "bad gateway"`))
	// Each 502 is a probe a second apart: the status cannot show the 502
	// before the third, nor long after it.
	if n := api.served502.Load(); n < 3 || n > 4 {
		t.Errorf("the status showed 502 after %d probes answered it, want 3 (or 4, had the next probe come before this look)", n)
	}
	eventually(t, activeCount(t, ns)).Should(BeZero())
	eventually(t, backendsIn(t, ns)).Should(HaveEach("sorry"))
	eventually(t, switchedEventsAfter(t, ns, settled)).Should(HaveLen(sites))
}

package controller_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// dataPlane stands for a proxy: it answers 503 "sorry" while the Ingress
// ns/name sends to the sorry backend, 200 "shop" otherwise, and picks up a
// change of the Ingress lag after it saw it, like a proxy that throttles
// its reloads. It counts the requests it gets.
type dataPlane struct {
	sorry    atomic.Bool
	requests atomic.Int64
	url      string
}

func newDataPlane(t *testing.T, ns, name string, lag time.Duration) *dataPlane {
	t.Helper()
	d := &dataPlane{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		d.requests.Add(1)
		if d.sorry.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("sorry"))
			return
		}
		_, _ = w.Write([]byte("shop"))
	}))
	t.Cleanup(srv.Close)
	d.url = srv.URL + "/"
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			sorry := backendOf(t, ns, name)() == "sorry"
			if sorry != d.sorry.Load() {
				time.Sleep(lag)
				d.sorry.Store(sorry)
			}
		}
	}()
	return d
}

// servedOf is a switch's Served condition and status.served.mode.
func servedOf(obj client.Object) func() string {
	return func() string {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return "get: " + err.Error()
		}
		status := obj.(interface{ SwitchStatus() *v1beta1.SwitchStatus }).SwitchStatus()
		c := meta.FindStatusCondition(status.Conditions, v1beta1.ConditionServed)
		if c == nil {
			return "none"
		}
		out := string(c.Status) + "/" + c.Reason
		if status.Served != nil {
			out += " " + string(status.Served.Mode)
		}
		return out
	}
}

// TestServedAfterTheDataPlaneServes: after a flip, Served is Checking until
// the URL answers with the new shape, then True with how long after the
// write; 200 switches behind one URL make one request per period; once
// decided, nothing is requested.
func TestServedAfterTheDataPlaneServes(t *testing.T) {
	ns := newNamespace(t)
	state := builders.FixedState(ns, "flag", "200", "").Obj()
	plane := newDataPlane(t, ns, "web-000", 700*time.Millisecond)
	objs := []client.Object{state}
	var switches []*v1beta1.DynamicIngress
	for i := range 200 {
		di := builders.DynamicIngress(ns, fmt.Sprintf("web-%03d", i)).State("flag").ExpectCode("503").
			Passive(builders.IngressTo("www.example.com", "web")).Active(builders.IngressTo("www.example.com", "sorry")).Obj()
		di.Spec.Served = builders.Served(plane.url, "503", "200").Period(250 * time.Millisecond).Timeout(30 * time.Second).Obj()
		switches = append(switches, di)
		objs = append(objs, di)
	}
	create(t, objs...)
	for _, di := range switches {
		eventually(t, servedOf(di)).Should(Equal("True/Served Passive"))
	}

	// Steady state: no request.
	before := plane.requests.Load()
	time.Sleep(2 * time.Second)
	if got := plane.requests.Load() - before; got != 0 {
		t.Errorf("%d requests to the served URL in 2s of steady state, want 0", got)
	}

	edited := time.Now()
	began := plane.requests.Load()
	setFixedStatus(t, state, "503")
	// Checking until served; under load the flip's statuses may be
	// written after the check ended, so Checking is not always seen.
	eventually(t, servedOf(switches[0])).Should(Or(Equal("Unknown/Checking Passive"), Equal("True/Served Active")))
	for _, di := range switches {
		eventually(t, servedOf(di)).Should(Equal("True/Served Active"))
	}
	took := time.Since(edited)
	// One request per period for all 200 (the loop's period is 250ms), not
	// one per switch.
	if got, most := plane.requests.Load()-began, int64(took/(250*time.Millisecond))+2; got > most {
		t.Errorf("%d requests in %s for 200 switches behind one URL, want at most %d (one per period)", got, took.Round(time.Millisecond), most)
	}
	after, err := time.ParseDuration(switches[0].Status.Served.After)
	if err != nil || after < 700*time.Millisecond || after > took {
		t.Errorf("status.served.after = %q, want between the data plane's lag 700ms and %s", switches[0].Status.Served.After, took)
	}
	NewWithT(t).Expect(conditionMessage(switches[0], v1beta1.ConditionServed)()).To(MatchRegexp(`^active mode served [0-9.]+s after the target was written$`))
	before = plane.requests.Load()
	time.Sleep(2 * time.Second)
	if got := plane.requests.Load() - before; got != 0 {
		t.Errorf("%d requests to the served URL in 2s after every switch was served, want 0", got)
	}
}

// TestNotServedAfterTheTimeout: a URL that never answers with the active
// shape (an IngressClass no controller serves) turns Served False after
// the timeout, with the last answer in the message and one NotServed
// Warning; its Active and Ready are unchanged.
func TestNotServedAfterTheTimeout(t *testing.T) {
	ns := newNamespace(t)
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		_, _ = w.Write([]byte("shop"))
	}))
	t.Cleanup(srv.Close)
	state := builders.FixedState(ns, "flag", "200", "").Obj()
	di := builders.DynamicIngress(ns, "web").State("flag").ExpectCode("503").
		Passive(builders.IngressTo("www.example.com", "web")).Active(builders.IngressTo("www.example.com", "sorry")).Obj()
	di.Spec.Served = builders.Served(srv.URL+"/", "503", "200").Period(500 * time.Millisecond).Timeout(5 * time.Second).Obj()
	create(t, state, di)
	eventually(t, servedOf(di)).Should(Equal("True/Served Passive"))

	setFixedStatus(t, state, "503")
	eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("True/Matched"))
	NewWithT(t).Eventually(servedOf(di), 15*time.Second, 100*time.Millisecond).Should(Equal("False/NotServed Passive"))
	NewWithT(t).Expect(conditionMessage(di, v1beta1.ConditionServed)()).To(Equal("active mode not served within 5s after the target was written: " + srv.URL + "/ answered HTTP 200"))
	NewWithT(t).Expect(conditionOf(di, v1beta1.ConditionReady)()).To(Equal("True/Synced"))
	eventually(t, func() int { return countOf(eventReasons(ns, "web")(), "NotServed") }).Should(Equal(1))
	before := requests.Load()
	time.Sleep(2 * time.Second)
	if got := requests.Load() - before; got != 0 {
		t.Errorf("%d requests after NotServed, want 0 until the target is written again", got)
	}
	NewWithT(t).Consistently(func() int { return countOf(eventReasons(ns, "web")(), "NotServed") }, time.Second).Should(Equal(1))

	// Removing spec.served removes the condition and status.served.
	edit(t, di, func(d *v1beta1.DynamicIngress) { d.Spec.Served = nil })
	eventually(t, servedOf(di)).Should(Equal("none"))
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// TestServedRouteWaitsForItsParents: a DynamicHTTPRoute is served once the
// URL answers with the shape and every parent of its HTTPRoute accepted
// the route's current generation.
func TestServedRouteWaitsForItsParents(t *testing.T) {
	ns := newNamespace(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("shop")) }))
	t.Cleanup(srv.Close)
	state := builders.FixedState(ns, "flag", "200", "").Obj()
	dhr := builders.DynamicHTTPRoute(ns, "route").State("flag").ExpectCode("503").
		Passive(builders.RouteTo("www.example.com", "web")).Active(builders.RedirectTo("www.example.com", "status.example.com")).Obj()
	dhr.Spec.Served = builders.Served(srv.URL+"/", "503", "200").Period(250 * time.Millisecond).Timeout(time.Minute).Obj()
	create(t, state, dhr)
	eventually(t, servedOf(dhr)).Should(Equal("Unknown/Checking"))
	eventually(t, conditionMessage(dhr, v1beta1.ConditionServed)).Should(HaveSuffix("no parent has accepted generation 1 of the HTTPRoute yet"))

	route := &gatewayv1.HTTPRoute{}
	NewWithT(t).Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "route"}, route)).To(Succeed())
	route.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: gatewayv1.ParentReference{Name: "public"}, ControllerName: "example.com/gateway",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: "True", Reason: "Accepted", ObservedGeneration: route.Generation, LastTransitionTime: metav1.Now()}}}}
	NewWithT(t).Expect(k8s.Status().Update(ctx, route)).To(Succeed())
	eventually(t, servedOf(dhr)).Should(Equal("True/Served Passive"))
}

// TestServedWrittenWithTheMode: a switch whose URL answers with the new
// shape soon after its target is written gets one status write for the
// flip, showing the mode and Served True together: the status waits for
// the check (a period, and at least 3 s) rather than being written
// Checking first and again a moment later. The proxy serves the new shape
// at once, or 1.5 s after the write (as Traefik, whose reloads come at
// most every 2 s, can), with a period of 1 s.
func TestServedWrittenWithTheMode(t *testing.T) {
	for _, tc := range []struct {
		name string
		lag  time.Duration
	}{
		{"served at once", 0},
		{"served a period and a half after the write", 1500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t)
			state := builders.FixedState(ns, "flag", "200", "").Obj()
			// The data plane serves what the Ingress says, lag after it
			// says it.
			backend := backendOf(t, ns, "web")
			var mu sync.Mutex
			var sorrySince time.Time
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				if backend() != "sorry" {
					sorrySince = time.Time{}
					return
				}
				if sorrySince.IsZero() {
					sorrySince = time.Now()
				}
				if time.Since(sorrySince) >= tc.lag {
					w.WriteHeader(http.StatusServiceUnavailable)
				}
			}))
			t.Cleanup(srv.Close)
			di := builders.DynamicIngress(ns, "web").State("flag").ExpectCode("503").
				Passive(builders.IngressTo("www.example.com", "web")).Active(builders.IngressTo("www.example.com", "sorry")).Obj()
			di.Spec.Served = builders.Served(srv.URL+"/", "503", "200").Period(time.Second).Timeout(30 * time.Second).Obj()
			create(t, state, di)
			eventually(t, servedOf(di)).Should(Equal("True/Served Passive"))

			watcher, err := client.NewWithWatch(testConfig, client.Options{Scheme: scheme})
			if err != nil {
				t.Fatal(err)
			}
			w, err := watcher.Watch(ctx, &v1beta1.DynamicIngressList{}, client.InNamespace(ns), client.MatchingFields{"metadata.name": "web"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Stop)
			setFixedStatus(t, state, "503")
			if first, seen := firstActiveStatus(t, w.ResultChan()); first != "Active=True Served=True/Served" {
				t.Fatalf("the first status showing the active mode shows %q, want %q (statuses seen: %v)", first, "Active=True Served=True/Served", seen)
			}
		})
	}
}

// firstActiveStatus follows a switch's watch events until its status
// shows the active mode, and gives what that status says of Active and
// Served, with every such pair seen until then.
func firstActiveStatus(t *testing.T, events <-chan watch.Event) (string, []string) {
	t.Helper()
	var seen []string
	timeout := time.After(20 * time.Second)
	for {
		select {
		case e := <-events:
			got, ok := e.Object.(*v1beta1.DynamicIngress)
			if !ok {
				continue
			}
			active := meta.FindStatusCondition(got.Status.Conditions, v1beta1.ConditionActive)
			served := meta.FindStatusCondition(got.Status.Conditions, v1beta1.ConditionServed)
			if active == nil || served == nil {
				continue
			}
			entry := "Active=" + string(active.Status) + " Served=" + string(served.Status) + "/" + served.Reason
			if len(seen) == 0 || seen[len(seen)-1] != entry {
				seen = append(seen, entry)
			}
			if active.Status == metav1.ConditionTrue {
				return entry, seen
			}
		case <-timeout:
			t.Fatalf("no status showed the active mode within 20s (statuses seen: %v)", seen)
		}
	}
}

// TestServedNeverCountsAnAnswerFromBeforeTheWrite: a switch flips to
// active and back to passive while a request of its active check is in
// flight, answered by the passive shape the proxy still served when it was
// sent. That answer is from before the flip back's write: Served must not
// turn True from it, and, as the data plane serves the active shape from
// then on (it never took the flip back), the check ends NotServed.
func TestServedNeverCountsAnAnswerFromBeforeTheWrite(t *testing.T) {
	ns := newNamespace(t)
	var slow, sorry atomic.Bool
	answered := make(chan struct{}, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		wasSorry, wasSlow := sorry.Load(), slow.Load()
		if wasSlow {
			time.Sleep(3 * time.Second)
		}
		if wasSorry {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		if wasSlow {
			answered <- struct{}{}
		}
	}))
	t.Cleanup(srv.Close)
	state := builders.FixedState(ns, "flag", "200", "").Obj()
	di := builders.DynamicIngress(ns, "web").State("flag").ExpectCode("503").
		Passive(builders.IngressTo("www.example.com", "web")).Active(builders.IngressTo("www.example.com", "sorry")).Obj()
	// A request may take up to its period (5 s): the slow answer arrives.
	di.Spec.Served = builders.Served(srv.URL+"/", "503", "200").Period(5 * time.Second).Timeout(8 * time.Second).Obj()
	create(t, state, di)
	eventually(t, servedOf(di)).Should(Equal("True/Served Passive"))
	// Served says how long after its write: a change of it is a new
	// decision (the status may keep the first one while a check holds it).
	servedAfter := func() string {
		v := servedOf(di)()
		if di.Status.Served != nil {
			v += " after " + di.Status.Served.After
		}
		return v
	}
	first := servedAfter()

	// The active check's first request is answered 3 s later, with the
	// passive shape it was sent to.
	slow.Store(true)
	setFixedStatus(t, state, "503")
	eventually(t, backendOf(t, ns, "web")).Should(Equal("sorry"))
	// Back to passive while that request is in flight; the data plane
	// serves the active shape from now on, at once.
	setFixedStatus(t, state, "200")
	eventually(t, backendOf(t, ns, "web")).Should(Equal("web"))
	sorry.Store(true)
	slow.Store(false)
	select {
	case <-answered:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow request was not answered within 10s")
	}
	NewWithT(t).Consistently(servedAfter, 2*time.Second, 50*time.Millisecond).Should(Or(Equal(first), Not(HavePrefix("True/"))))
	eventually(t, servedOf(di)).WithTimeout(30 * time.Second).Should(Equal("False/NotServed Passive"))
}

// TestServedChangeChecksAgain: a change of spec.served alone (its URL)
// sets Served to Checking and checks the new URL, without a target write.
func TestServedChangeChecksAgain(t *testing.T) {
	ns := newNamespace(t)
	plane := newDataPlane(t, ns, "web", 0)
	gone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotFound) }))
	t.Cleanup(gone.Close)
	state := builders.FixedState(ns, "flag", "200", "").Obj()
	di := builders.DynamicIngress(ns, "web").State("flag").ExpectCode("503").
		Passive(builders.IngressTo("www.example.com", "web")).Active(builders.IngressTo("www.example.com", "sorry")).Obj()
	di.Spec.Served = builders.Served(plane.url, "503", "200").Period(250 * time.Millisecond).Timeout(5 * time.Second).Obj()
	create(t, state, di)
	eventually(t, servedOf(di)).Should(Equal("True/Served Passive"))
	ingressVersion := targetVersion(t, ns, "web")

	edit(t, di, func(d *v1beta1.DynamicIngress) { d.Spec.Served.URL = gone.URL + "/moved" })
	eventually(t, servedOf(di)).Should(Equal("Unknown/Checking Passive"))
	eventually(t, servedOf(di)).Should(Equal("False/NotServed Passive"))
	c := meta.FindStatusCondition(di.Status.Conditions, v1beta1.ConditionServed)
	NewWithT(t).Expect(c.Message).To(HaveSuffix(gone.URL + "/moved answered HTTP 404"))
	NewWithT(t).Expect(targetVersion(t, ns, "web")).To(Equal(ingressVersion), "the target was written again")
}

// targetVersion is the resourceVersion of the Ingress ns/name.
func targetVersion(t *testing.T, ns, name string) string {
	t.Helper()
	ing := &networkingv1.Ingress{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ing); err != nil {
		t.Fatal(err)
	}
	return ing.ResourceVersion
}

// TestServedRequestsInFlightPerNamespace: 300 switches of one namespace
// whose served URLs (each its own) stall and never answer as their shape
// hold at most 8 requests in flight together; another namespace's switch
// is checked and Served beside them.
func TestServedRequestsInFlightPerNamespace(t *testing.T) {
	ns := newNamespace(t)
	var held suite.InFlight
	// Each request is held 700 ms, within the checks' request timeout
	// (1 s), and answered 404: the handler has ended, and its count with
	// it, before the manager has the answer, so the count here is never
	// above the manager's own (a request the manager gave up on would
	// stay counted here until the server noticed).
	stalling := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer held.Enter()()
		select {
		case <-time.After(700 * time.Millisecond):
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	t.Cleanup(stalling.Close)
	state := builders.FixedState(ns, "flag", "200", "").Obj()
	objs := []client.Object{state}
	for i := range 300 {
		di := builders.DynamicIngress(ns, fmt.Sprintf("web-%03d", i)).State("flag").ExpectCode("503").
			Passive(builders.IngressTo("www.example.com", "web")).Active(builders.IngressTo("www.example.com", "sorry")).Obj()
		di.Spec.Served = builders.Served(fmt.Sprintf("%s/%d", stalling.URL, i), "503", "200").Period(250 * time.Millisecond).Timeout(time.Minute).Obj()
		objs = append(objs, di)
	}
	create(t, objs...)
	eventually(t, func() int64 { return held.Peak() }).Should(BeNumerically(">=", 8))

	other := newNamespace(t)
	plane := newDataPlane(t, other, "shop", 0)
	otherState := builders.FixedState(other, "flag", "200", "").Obj()
	shop := builders.DynamicIngress(other, "shop").State("flag").ExpectCode("503").
		Passive(builders.IngressTo("shop.example.com", "web")).Active(builders.IngressTo("shop.example.com", "sorry")).Obj()
	shop.Spec.Served = builders.Served(plane.url, "503", "200").Period(250 * time.Millisecond).Timeout(30 * time.Second).Obj()
	create(t, otherState, shop)
	eventually(t, servedOf(shop)).Should(Equal("True/Served Passive"))
	time.Sleep(2 * time.Second)
	if got := held.Peak(); got > 8 {
		t.Errorf("%d requests of one namespace's served checks in flight at once, want at most 8", got)
	}
}

// TestServedExpressionsDoNotStallAnotherNamespace: 40 switches of one
// namespace check, each every 250 ms, a URL of its own answering 10 KiB
// (a new answer each time) with a distinct slow expression (about 80 ms each, never true: they
// check until their timeout); another namespace's flip of 50 switches
// completes within 3 s beside them, its statuses too. The served checks' lock, which every
// switch's reconcile takes, is never held while a matcher is evaluated,
// and the noisy namespace's evaluations wait for its own turns
// (docs/behaviour.md, "Fair shares").
func TestServedExpressionsDoNotStallAnotherNamespace(t *testing.T) {
	const noisySwitches, victimSwitches = 40, 50
	var answered atomic.Int64
	body := strings.Repeat("x", 10<<10)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		// Each answer differs: no verdict is kept from an earlier one.
		_, _ = fmt.Fprintf(w, "%d %s", answered.Add(1), body)
	}))
	t.Cleanup(server.Close)
	noisy := newNamespace(t)
	create(t, builders.FixedState(noisy, "flag", "503", "").Obj())
	for i := range noisySwitches {
		check := builders.Served(fmt.Sprintf("%s/%d", server.URL, i), "200", "200").Period(250 * time.Millisecond).Timeout(time.Hour)
		check.Passive.Expression = slowExpression(i)
		create(t, siteSwitch(noisy, fmt.Sprintf("slow-%03d", i), "flag").ExpectCode("200").Served(check).Obj())
	}
	t.Cleanup(func() {
		// Their checks end once their switches are gone.
		_ = k8s.DeleteAllOf(ctx, &v1beta1.DynamicIngress{}, client.InNamespace(noisy))
	})
	victim, victimState := passiveSites(t, victimSwitches, nil)
	// Every noisy check has been answered: their evaluations are under
	// way.
	eventually(t, answered.Load).Should(BeNumerically(">=", noisySwitches))

	began := time.Now()
	setFixedStatus(t, victimState, "200")
	NewWithT(t).Eventually(backendsIn(t, victim), 3*time.Second, 20*time.Millisecond).Should(Equal(slices.Repeat([]string{"sorry"}, victimSwitches)),
		"the victim namespace's targets waited for the noisy namespace's served expressions")
	NewWithT(t).Eventually(activeCount(t, victim), 3*time.Second, 20*time.Millisecond).Should(Equal(victimSwitches),
		"the victim namespace's statuses waited for the noisy namespace's served expressions")
	t.Logf("the victim namespace's complete flip of %d took %s beside %d served checks with slow expressions", victimSwitches, time.Since(began).Round(time.Millisecond), noisySwitches)
}

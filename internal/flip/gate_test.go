package flip

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/metrics"
)

const (
	ingressKind = "DynamicIngress"
	routeKind   = "DynamicHTTPRoute"
)

// gateUnderTest is a status gate whose releases are recorded, by kind.
type gateUnderTest struct {
	*Gate
	t        *testing.T
	clock    *testingclock.FakeClock
	released map[string][]string
}

func newGateUnderTest(t *testing.T) *gateUnderTest {
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	g := &gateUnderTest{Gate: NewGate(clk, 10*time.Second), t: t, clock: clk, released: map[string][]string{}}
	for _, kind := range []string{ingressKind, routeKind} {
		g.Register(kind, func(key types.NamespacedName) {
			// A release func may call back into the gate (it enqueues; a
			// reconcile may run at once): no lock is held.
			g.Ticket()
			g.released[kind] = append(g.released[kind], nameOf(key))
			slices.Sort(g.released[kind])
		})
	}
	return g
}

// key is the key of the switch named name: "name" in the namespace shop,
// "namespace/name" in another.
func key(name string) types.NamespacedName {
	if namespace, name, ok := strings.Cut(name, "/"); ok {
		return types.NamespacedName{Namespace: namespace, Name: name}
	}
	return types.NamespacedName{Namespace: "shop", Name: name}
}

// nameOf names the switch at key as key names it.
func nameOf(key types.NamespacedName) string {
	if key.Namespace == "shop" {
		return key.Name
	}
	return key.String()
}

func (g *gateUnderTest) expectAll(kind string, names ...string) {
	for _, name := range names {
		g.Expect(kind, key(name))
	}
}

// sync is a reconcile that began now and synced the target.
func (g *gateUnderTest) sync(kind, name string) { g.Done(kind, key(name), g.Ticket()) }

func (g *gateUnderTest) mustHold(kind, name string, atMost time.Duration) {
	g.t.Helper()
	held, left := g.Hold(kind, key(name), true)
	if !held || left != atMost {
		g.t.Fatalf("hold(%s %s) = %v, %v; want held for at most %v", kind, name, held, left, atMost)
	}
}

// mustPass is a reconcile, with a status to write or not, that is not
// held.
func (g *gateUnderTest) mustPass(kind, name string, write bool) {
	g.t.Helper()
	if held, left := g.Hold(kind, key(name), write); held {
		g.t.Fatalf("the reconcile of %s %s (a status to write: %v) was held for %v", kind, name, write, left)
	}
}

// mustWrite is a reconcile whose status is not held and is written.
func (g *gateUnderTest) mustWrite(kind, name string) {
	g.t.Helper()
	g.mustPass(kind, name, true)
	g.Written(kind, key(name))
}

func (g *gateUnderTest) mustHaveReleased(want map[string][]string) {
	g.t.Helper()
	if !maps.EqualFunc(g.released, want, slices.Equal[[]string]) {
		g.t.Fatalf("released %v, want %v", g.released, want)
	}
}

func TestStatusGateHoldsUntilTheLastTargetIsSynced(t *testing.T) {
	g := newGateUnderTest(t)
	g.mustWrite(ingressKind, "a") // no state change under way

	g.expectAll(ingressKind, "a", "b", "c")
	g.expectAll(routeKind, "r")
	g.clock.Step(2 * time.Second)
	g.mustHold(ingressKind, "a", 8*time.Second) // 10s from the state change
	g.sync(ingressKind, "a")
	g.mustHold(routeKind, "r", 8*time.Second) // Ingresses are still to be written
	g.mustPass(ingressKind, "b", false)
	g.sync(ingressKind, "b")
	g.sync(ingressKind, "unrelated") // not part of the change
	g.sync(routeKind, "r")
	g.mustHaveReleased(map[string][]string{})

	g.sync(ingressKind, "c")
	want := map[string][]string{ingressKind: {"a"}, routeKind: {"r"}}
	g.mustHaveReleased(want)
	g.mustWrite(ingressKind, "a")
	g.mustWrite(ingressKind, "b")
	g.sync(ingressKind, "c")
	g.mustHaveReleased(want) // released once
}

func TestStatusGateCountsOnlyReconcilesThatSawTheChange(t *testing.T) {
	g := newGateUnderTest(t)
	// A reconcile of a began before a state change was seen: it read the
	// old state, so it does not sync a for that change.
	early := g.Ticket()
	g.expectAll(ingressKind, "a", "b")
	g.mustHold(ingressKind, "b", 10*time.Second)
	g.Done(ingressKind, key("a"), early)
	g.sync(ingressKind, "b")
	g.mustHaveReleased(map[string][]string{})
	g.sync(ingressKind, "a") // the reconcile the change enqueued
	g.mustHaveReleased(map[string][]string{ingressKind: {"b"}})

	// A switch expected again after it was synced is pending again.
	g.expectAll(ingressKind, "a")
	g.mustHold(ingressKind, "b", 10*time.Second)
	g.sync(ingressKind, "a")
	g.mustHaveReleased(map[string][]string{ingressKind: {"b", "b"}})
}

func TestStatusGateHoldsNoLongerThanMaxHold(t *testing.T) {
	g := newGateUnderTest(t)
	g.expectAll(ingressKind, "stuck", "a")
	g.clock.Step(4 * time.Second)
	g.expectAll(ingressKind, "b") // a second change while the first is under way
	g.clock.Step(5 * time.Second)
	g.mustHold(ingressKind, "a", time.Second) // 10s from the first change
	g.clock.Step(time.Second)
	g.mustWrite(ingressKind, "a")
	g.mustWrite(ingressKind, "b")

	// Once every target is synced, the next change holds for its own 10s;
	// nothing was held when the last one was synced.
	g.sync(ingressKind, "stuck")
	g.sync(ingressKind, "a")
	g.sync(ingressKind, "b")
	g.mustHaveReleased(map[string][]string{})
	g.expectAll(ingressKind, "c")
	g.clock.Step(time.Second)
	g.mustHold(ingressKind, "d", 9*time.Second)
}

func TestStatusGateHoldsAStatusNoLongerThanMaxHoldAcrossChanges(t *testing.T) {
	g := newGateUnderTest(t)
	g.expectAll(ingressKind, "a")
	g.mustHold(ingressKind, "held", 10*time.Second)
	g.clock.Step(6 * time.Second)
	g.sync(ingressKind, "a")
	g.mustHaveReleased(map[string][]string{ingressKind: {"held"}})

	// A new change begins before the released switch is reconciled: its
	// status is held again, but only for what is left of its 10s.
	g.expectAll(ingressKind, "b")
	g.mustHold(ingressKind, "held", 4*time.Second)
	g.clock.Step(4 * time.Second)
	g.mustWrite(ingressKind, "held")
	g.mustHold(ingressKind, "other", 6*time.Second)
}

func TestStatusGateForgetsDeletedSwitches(t *testing.T) {
	g := newGateUnderTest(t)
	g.expectAll(ingressKind, "a", "deleted")
	g.mustHold(ingressKind, "a", 10*time.Second)
	g.mustHold(ingressKind, "gone", 10*time.Second)
	g.Forget(ingressKind, key("gone"))
	g.sync(ingressKind, "a")
	g.mustHaveReleased(map[string][]string{})
	g.Forget(ingressKind, key("deleted")) // the last pending one
	g.mustHaveReleased(map[string][]string{ingressKind: {"a"}})
}

func TestStatusGateDropsAHeldSwitchWithNothingToWrite(t *testing.T) {
	g := newGateUnderTest(t)
	g.expectAll(ingressKind, "x")
	g.mustHold(ingressKind, "a", 10*time.Second)
	// Reconciled again (a watch event), its status no longer changes.
	g.mustPass(ingressKind, "a", false)
	g.sync(ingressKind, "x")
	g.mustHaveReleased(map[string][]string{})
}

func TestStatusGateKeepsTheBoundThroughAFailedStatusWrite(t *testing.T) {
	g := newGateUnderTest(t)
	g.expectAll(ingressKind, "x")
	g.mustHold(ingressKind, "a", 10*time.Second)
	g.clock.Step(5 * time.Second)
	g.sync(ingressKind, "x")
	g.mustHaveReleased(map[string][]string{ingressKind: {"a"}})
	g.clock.Step(100 * time.Millisecond)
	g.expectAll(ingressKind, "y") // another change begins
	g.clock.Step(4900 * time.Millisecond)
	// 10s after its first hold: written, but the write fails (no call to
	// written), and the retry is not held for a new 10s.
	g.mustPass(ingressKind, "a", true)
	g.clock.Step(100 * time.Millisecond)
	g.mustPass(ingressKind, "a", true) // the retry
}

func TestStatusGateHoldsOnlyTheStatusesOfItsNamespace(t *testing.T) {
	g := newGateUnderTest(t)
	var sent []string
	g.expectAll(ingressKind, "a", "b") // a flip in shop
	g.mustHold(ingressKind, "a", 10*time.Second)
	g.recordEvent(&sent, "a switched")

	// Another namespace's statuses and events do not wait for shop's targets.
	g.mustWrite(ingressKind, "blog/x")
	g.recordEvent(&sent, "blog/x switched")
	g.mustHaveSent(&sent, "blog/x switched")

	// Nor do they wait for its time: each namespace's targets are pending
	// since its own state change.
	g.clock.Step(8 * time.Second)
	g.expectAll(ingressKind, "blog/y")
	g.mustHold(ingressKind, "blog/z", 10*time.Second)
	g.mustHold(ingressKind, "c", 2*time.Second)

	// The last target of shop releases shop's held statuses, not blog's.
	g.sync(ingressKind, "a")
	g.sync(ingressKind, "b")
	g.mustHaveReleased(map[string][]string{ingressKind: {"a", "c"}})
	g.mustWrite(ingressKind, "a")
	g.mustWrite(ingressKind, "c")
	g.mustHaveSent(&sent, "blog/x switched", "a switched")
	g.sync(ingressKind, "blog/y")
	g.mustHaveReleased(map[string][]string{ingressKind: {"a", "blog/z", "c"}})
}

func TestStatusGateTakesTheEventsOfNamespacesInTurn(t *testing.T) {
	g := newGateUnderTest(t)
	var sent []string
	for _, name := range []string{"a1", "a2", "blog/b1", "a3", "cafe/c1", "blog/b2", "a4", "dock/d1"} {
		g.recordEvent(&sent, name)
	}
	g.expectAll(ingressKind, "dock/flipping") // dock's events wait for its flip
	g.mustHaveSent(&sent, "a1", "blog/b1", "cafe/c1", "a2", "blog/b2", "a3", "a4")
	g.sync(ingressKind, "dock/flipping")
	g.mustHaveSent(&sent, "a1", "blog/b1", "cafe/c1", "a2", "blog/b2", "a3", "a4", "dock/d1")
}

// droppedEvents is the value of the dropped events counter of namespace,
// as the manager's metrics endpoint serves it.
func droppedEvents(t *testing.T, namespace string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != metrics.EventsDroppedName {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "namespace" && l.GetValue() == namespace {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func TestStatusGateDropsTheEventsBeyondItsBoundAndSaysSoOnce(t *testing.T) {
	g := newGateUnderTest(t)
	const flood = "flood-dropped"
	var sent, warnings []string
	recorder := func(regarding *corev1.ObjectReference, eventType, reason, note string) {
		if eventType == corev1.EventTypeWarning {
			warnings = append(warnings, fmt.Sprintf("%s about %s: %s", reason, regarding.Name, note))
			return
		}
		sent = append(sent, note)
	}
	g.expectAll(ingressKind, flood+"/flipping") // its events wait
	for i := range maxEventsWaiting + 3 {
		g.recordAbout(key(fmt.Sprintf("%s/sw%d", flood, i)), recorder, fmt.Sprint(i))
	}
	if got := droppedEvents(t, flood); got != 3 {
		t.Errorf("%s counts %v events of %s dropped, want 3", metrics.EventsDroppedName, got, flood)
	}
	// Another namespace's events are neither dropped nor delayed.
	g.recordAbout(key("calm/web"), recorder, "calm")
	g.mustHaveSent(&sent, "calm")

	g.sync(ingressKind, flood+"/flipping")
	if event := g.nextEvent(); event != nil {
		event() // room for one: the summary waits there, and counts on
	}
	g.recordAbout(key(flood+"/late"), recorder, "late")
	if got := droppedEvents(t, flood); got != 4 {
		t.Errorf("%s counts %v events of %s dropped, want 4", metrics.EventsDroppedName, got, flood)
	}
	for event := g.nextEvent(); event != nil; event = g.nextEvent() {
		event()
	}
	if len(sent) != 1+maxEventsWaiting {
		t.Errorf("sent %d events, want calm's and %d of %s's", len(sent), maxEventsWaiting, flood)
	}
	// About the switch whose event was dropped first.
	want := []string{fmt.Sprintf("EventsDropped about sw%d: Dropped 4 events of namespace %q: more than %d waited to be recorded", maxEventsWaiting, flood, maxEventsWaiting)}
	if diff := cmp.Diff(want, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}

	// Another overflow, still unsaid when the manager stops: said then.
	for i := range maxEventsWaiting + 1 {
		g.recordAbout(key(fmt.Sprintf("%s/again%d", flood, i)), recorder, "again")
	}
	for _, event := range g.takeEvents() {
		event()
	}
	want = append(want, fmt.Sprintf("EventsDropped about again%d: Dropped 1 event of namespace %q: more than %d waited to be recorded", maxEventsWaiting, flood, maxEventsWaiting))
	if diff := cmp.Diff(want, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

// addChecker is a work queue that checks each item as it is added.
type addChecker struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	check func(reconcile.Request)
}

func (q addChecker) Add(item reconcile.Request) {
	q.check(item)
	q.TypedRateLimitingInterface.Add(item)
}

func TestExpectAndAddExpectsEverySwitchBeforeTheFirstIsAdded(t *testing.T) {
	g := newGateUnderTest(t)
	keys := []types.NamespacedName{key("a"), key("b"), key("c")}
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer queue.ShutDown()
	added := 0
	q := addChecker{queue, func(item reconcile.Request) {
		added++
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, k := range keys {
			if _, ok := g.namespaces[k.Namespace].pending[gateKey{ingressKind, k}]; !ok {
				t.Errorf("%s was added before %s was expected", item, k)
			}
		}
	}}
	g.ExpectAndAdd(ingressKind, keys, q)
	if added != len(keys) || queue.Len() != len(keys) {
		t.Fatalf("added %d, queue holds %d; want %d", added, queue.Len(), len(keys))
	}
}

// noteRecorder is an event recorder that calls itself with each event it
// records.
type noteRecorder func(regarding *corev1.ObjectReference, eventType, reason, note string)

func (r noteRecorder) Eventf(regarding, _ runtime.Object, eventType, reason, _, note string, args ...any) {
	ref, _ := regarding.(*corev1.ObjectReference)
	r(ref, eventType, reason, fmt.Sprintf(note, args...))
}

// recordEvent records an event through the gate, regarding the switch
// named by its name up to the first space (key); sent has the events sent
// so far, in order, by name.
func (g *gateUnderTest) recordEvent(sent *[]string, name string) {
	switchName, _, _ := strings.Cut(name, " ")
	g.recordAbout(key(switchName), func(_ *corev1.ObjectReference, _, _, note string) { *sent = append(*sent, note) }, name)
}

// recordAbout records the Normal event note about the switch at k
// through the gate, by recorder.
func (g *gateUnderTest) recordAbout(k types.NamespacedName, recorder noteRecorder, note string) {
	regarding := &corev1.ObjectReference{Kind: ingressKind, Namespace: k.Namespace, Name: k.Name}
	g.Record(recorder, regarding, Event{corev1.EventTypeNormal, v1beta1.EventReasonSwitched, "SwitchToActive", note})
}

// mustHaveSent records every event now due, as the event pacer would, and
// checks the events sent so far.
func (g *gateUnderTest) mustHaveSent(sent *[]string, want ...string) {
	g.t.Helper()
	for event := g.nextEvent(); event != nil; event = g.nextEvent() {
		event()
	}
	if !slices.Equal(*sent, want) {
		g.t.Fatalf("events sent %q, want %q", *sent, want)
	}
}

func TestStatusGateSendsEventsAfterTheStatusesOfAFlip(t *testing.T) {
	g := newGateUnderTest(t)
	var sent []string
	g.recordEvent(&sent, "quiet") // nothing under way: sent at once
	g.mustHaveSent(&sent, "quiet")

	g.expectAll(ingressKind, "a", "b")
	g.mustHold(ingressKind, "a", 10*time.Second)
	g.recordEvent(&sent, "during the targets")
	g.sync(ingressKind, "a")
	g.mustHold(ingressKind, "b", 10*time.Second)
	g.sync(ingressKind, "b") // the last target: a and b are released
	g.mustHaveSent(&sent, "quiet")

	// The statuses are written in turn; the events wait for the last.
	g.mustPass(ingressKind, "a", true)
	g.recordEvent(&sent, "a switched")
	g.Written(ingressKind, key("a"))
	g.mustHaveSent(&sent, "quiet")
	g.mustPass(ingressKind, "b", true)
	g.recordEvent(&sent, "b switched")
	g.Written(ingressKind, key("b"))
	g.mustHaveSent(&sent, "quiet", "during the targets", "a switched", "b switched")
}

func TestStatusGateSendsEventsOfAStatusThatNeedsNoWriteOrIsGone(t *testing.T) {
	g := newGateUnderTest(t)
	var sent []string
	g.expectAll(ingressKind, "x")
	g.mustHold(ingressKind, "a", 10*time.Second)
	g.mustHold(ingressKind, "gone", 10*time.Second)
	g.sync(ingressKind, "x")
	g.recordEvent(&sent, "x switched")
	g.Forget(ingressKind, key("gone"))
	g.mustHaveSent(&sent)
	g.mustPass(ingressKind, "a", false) // nothing to write after all
	g.mustHaveSent(&sent, "x switched")
}

func TestStatusGateHoldsNoEventLongerThanMaxHold(t *testing.T) {
	g := newGateUnderTest(t)
	var sent []string
	g.expectAll(ingressKind, "stuck")
	g.recordEvent(&sent, "first")
	g.clock.Step(9 * time.Second)
	g.recordEvent(&sent, "second")
	g.mustHaveSent(&sent)
	g.clock.Step(time.Second)
	// The target is still pending, but the first event has waited 10s.
	g.mustHaveSent(&sent, "first")
	g.recordEvent(&sent, "third")
	g.clock.Step(9 * time.Second)
	g.mustHaveSent(&sent, "first", "second")
	g.clock.Step(time.Second)
	g.mustHaveSent(&sent, "first", "second", "third")
}

func TestStatusGateSendsEventsAfterTheLastTargetsStatus(t *testing.T) {
	g := newGateUnderTest(t)
	var sent []string
	// As the reconciles go: each syncs its target, then asks whether its
	// status is held. The last target's status is not held but still to
	// be written when the held ones are.
	g.expectAll(ingressKind, "a", "b")
	g.sync(ingressKind, "a")
	g.mustHold(ingressKind, "a", 10*time.Second)
	g.sync(ingressKind, "b")
	g.mustPass(ingressKind, "b", true) // its status is written by its next reconcile
	g.mustPass(ingressKind, "a", true)
	g.recordEvent(&sent, "a switched")
	g.Written(ingressKind, key("a"))
	g.mustHaveSent(&sent)
	g.mustPass(ingressKind, "b", true)
	g.recordEvent(&sent, "b switched")
	g.Written(ingressKind, key("b"))
	g.mustHaveSent(&sent, "a switched", "b switched")
}

func TestStatusGateFlushesEventsThatWaitedMaxHoldWithoutAReconcile(t *testing.T) {
	g := newGateUnderTest(t)
	var sent []string
	g.mustPass(ingressKind, "failing", true) // its status write fails, again and again
	g.recordEvent(&sent, "e")
	g.clock.Step(9 * time.Second)
	g.mustHaveSent(&sent)
	g.clock.Step(time.Second) // the event pacer's poll finds it due
	g.mustHaveSent(&sent, "e")
}

// recordCall records through gate an event about a switch of namespace,
// whose recording calls sent.
func recordCall(gate *Gate, namespace string, sent func()) {
	regarding := &corev1.ObjectReference{Kind: ingressKind, Namespace: namespace, Name: "web"}
	gate.Record(noteRecorder(func(*corev1.ObjectReference, string, string, string) { sent() }), regarding, Event{corev1.EventTypeNormal, v1beta1.EventReasonSwitched, "SwitchToActive", "switched"})
}

func TestEventPacerRecordsEveryEventInOrderAtItsPace(t *testing.T) {
	gate := NewGate(clock.RealClock{}, time.Minute)
	p := NewPacer(gate)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var got []int
	done := make(chan struct{})
	const n = eventBurst + eventRate/2 // half a second past the burst
	record := func(i int) func() {
		return func() {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, i)
			if len(got) == n {
				close(done)
			}
		}
	}
	start := time.Now()
	// Half before the pacer starts, half after.
	for i := range n / 2 {
		recordCall(gate, "shop", record(i))
	}
	go func() { _ = p.Start(ctx) }()
	for i := n / 2; i < n; i++ {
		recordCall(gate, "shop", record(i))
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("not every event was recorded within 10s")
	}
	if took := time.Since(start); took < 400*time.Millisecond {
		t.Errorf("%d events recorded in %s: faster than %d at once and %d a second", n, took, eventBurst, eventRate)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.IsSorted(got) {
		t.Errorf("events recorded out of order")
	}
}

func TestEventPacerWaitsForAFlipsStatuses(t *testing.T) {
	gate := NewGate(clock.RealClock{}, time.Minute)
	p := NewPacer(gate)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = p.Start(ctx) }()
	var sent atomic.Int32
	gate.Expect(ingressKind, key("a")) // a flip under way
	recordCall(gate, "shop", func() { sent.Add(1) })
	time.Sleep(100 * time.Millisecond)
	if sent.Load() != 0 {
		t.Fatal("an event was recorded while a target of the flip was pending")
	}
	gate.Done(ingressKind, key("a"), gate.Ticket())
	NewWithT(t).Eventually(sent.Load, 2*time.Second, 10*time.Millisecond).Should(Equal(int32(1)))
}

func TestEventPacerRecordsWhatWaitsWhenItStops(t *testing.T) {
	gate := NewGate(clock.RealClock{}, time.Minute)
	p := NewPacer(gate)
	gate.Expect(ingressKind, key("a")) // a flip under way: events wait
	var sent atomic.Int32
	recordCall(gate, "shop", func() { sent.Add(1) })
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = p.Start(ctx); close(stopped) }()
	cancel()
	<-stopped
	if sent.Load() != 1 {
		t.Errorf("a stopping pacer recorded %d of the 1 event waiting in the gate", sent.Load())
	}
}

func TestEventPacerTakesTheNamespacesInTurn(t *testing.T) {
	gate := NewGate(clock.RealClock{}, time.Minute)
	p := NewPacer(gate)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const busy = 1000
	var mu sync.Mutex
	var got []string
	quietSent := make(chan struct{})
	for i := range busy {
		recordCall(gate, "busy", func() {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, fmt.Sprint("busy ", i))
			if i == 10 {
				// Recorded while the busy namespace's next event is taken.
				recordCall(gate, "quiet", func() {
					mu.Lock()
					defer mu.Unlock()
					got = append(got, "quiet")
					close(quietSent)
				})
			}
		})
	}
	go func() { _ = p.Start(ctx) }()
	select {
	case <-quietSent:
	case <-time.After(10 * time.Second):
		t.Fatal("the quiet namespace's event was not recorded within 10s")
	}
	mu.Lock()
	defer mu.Unlock()
	// The busy namespace's 11th event was taken before the quiet event was
	// recorded; the quiet one then waits for the 12th only.
	at := slices.Index(got, "quiet")
	want := []string{"busy 10", "busy 11", "quiet"}
	if diff := cmp.Diff(want, got[max(at-2, 0):at+1]); diff != "" {
		t.Errorf("the events recorded last (-want +got):\n%s", diff)
	}
}

// TestStatusGateTellsWhenANamespacesTargetsAreWritten: the served checks
// that wait on TargetsPending are told once a namespace's last pending
// target is synced or its switch forgotten, not before, and without the
// gate's lock held (the call may ask the gate again).
func TestStatusGateTellsWhenANamespacesTargetsAreWritten(t *testing.T) {
	g := newGateUnderTest(t)
	var told []string // each call: the namespace, and whether it still had targets pending
	g.OnTargetsWritten(func(namespace string) {
		told = append(told, fmt.Sprintf("%s pending %v", namespace, g.TargetsPending(namespace)))
	})
	g.expectAll(ingressKind, "a", "b", "other/c")
	g.sync(ingressKind, "a")
	g.sync(ingressKind, "other/c") // another namespace's last one
	if want := []string{"other pending false"}; !slices.Equal(told, want) {
		t.Fatalf("told %q after a and other/c, want %q (other's last target only)", told, want)
	}
	g.sync(ingressKind, "b")
	if want := []string{"other pending false", "shop pending false"}; !slices.Equal(told, want) {
		t.Fatalf("told %q after b, want %q", told, want)
	}
	g.expectAll(ingressKind, "a", "gone")
	g.sync(ingressKind, "a")
	g.Forget(ingressKind, key("gone"))
	if want := []string{"other pending false", "shop pending false", "shop pending false"}; !slices.Equal(told, want) {
		t.Fatalf("told %q after gone was forgotten, want %q", told, want)
	}
}

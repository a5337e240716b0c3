// Package flip holds what a flip needs between the state that changed and
// its followers' statuses, whatever the switch kind: the status gate
// (gate.go: statuses wait for their namespace's target writes), the
// per-namespace event queue and its pacer (events.go, pacer.go: events
// wait for the statuses), and the flip tracker (tracker.go: the flip
// summary of a state's history entry and the notifications' progress).
// It imports no reconciler (docs/architecture.md).
package flip

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// MaxStatusHold bounds how long a switch's status waits for the target
// writes of state changes (see Gate).
const MaxStatusHold = 10 * time.Second

// Gate holds back status writes while the target writes that a state
// change caused are still to come. During a flip the targets are what
// traffic sees; every status patch and event the API server handles before
// the last target write delays that write (docs/benchmarks.md).
//
// The state watch's handler names each switch it enqueues (expect); the
// reconcile of each reports when its target is synced, or failed to be
// (done). While any of them is pending, a switch of the same namespace
// whose status is to change is held (hold) rather than written; when the
// last pending one of the namespace is done, every held switch of the
// namespace is released: handed to its kind's release func, which enqueues
// it to be reconciled again.
//
// The gate is one per namespace: a namespace's statuses and events wait
// for the pending targets of its own switches only, whichever state
// changed (a cluster state's flip is pending in each of its followers'
// namespaces), including the changes the manager's first list of states
// delivers at start. One namespace's flip never holds another's statuses
// or events (docs/behaviour.md, "Targets before statuses"). Holding is
// bounded twice by maxHold: no status is held longer than that after its
// first hold (until it is written), and nothing is held once targets of
// its namespace have been pending without a break for that long (a switch
// whose reconcile keeps being retried, for a cache that lags or a target
// that keeps changing, or states that keep changing one after another,
// would otherwise hold up every status of the namespace). A held reconcile
// asks to be retried after the time left.
//
// A reconcile that began before its switch was expected (it read the state
// from before the change) does not count as done for that change: each
// expect is numbered, and a reconcile takes the current number (ticket)
// before it reads anything.
//
// Events wait too (record): an event recorded while any status of its
// namespace is held or about to be written, or any target of its namespace
// pending, is due once none is, so that the API server writes the statuses
// of a flip before its events (an event costs it about what a status patch
// does; docs/benchmarks.md). An event that has waited maxHold is due
// whatever waits. Each namespace's events wait in a queue of their own,
// in the order they were recorded, of at most maxEventsWaiting: what comes
// beyond is dropped and counted (metrics.CountEventsDropped), and summarised
// in one Warning once the queue has room again (eventOverflow). The event
// pacer takes the due ones one at a time (nextEvent), a namespace at a time
// in turn; a flip that begins meanwhile pauses its namespace's events.
//
// One gate serves every kind of switch. It keeps time on the real clock, as
// the work queue does.
type Gate struct {
	clock   clock.PassiveClock
	maxHold time.Duration

	mu      sync.Mutex
	expects uint64
	// namespaces has what waits in each namespace; a namespace where
	// nothing waits has no entry.
	namespaces map[string]*namespaceGate
	// turns has the namespaces whose events wait, in the order the event
	// pacer serves them: a namespace served goes last.
	turns []string
	// releasers enqueue a held switch again, by kind.
	releasers map[string]func(types.NamespacedName)
	// due is called, without g.mu, when events may have become due (the
	// event pacer's wake-up); nil calls nothing.
	due func()
	// written is called, without g.mu, with a namespace whose last
	// pending target is written (OnTargetsWritten); nil calls nothing.
	written func(namespace string)
}

// namespaceGate is what waits in one namespace.
type namespaceGate struct {
	// pending maps each expected switch to the number of its expect.
	pending map[gateKey]uint64
	// since is when pending last became non-empty.
	since time.Time
	// held has each held switch until its status is written, released or
	// not, so that the bound counts from the first hold.
	held map[gateKey]heldStatus
	// unwritten has the switches whose status a reconcile is writing or
	// about to write without a hold (the last targets of a flip among
	// them), until it is written: events wait for them too.
	unwritten map[gateKey]struct{}
	// events are the recordings waiting to be taken, in order.
	events []deferredEvent
	// overflow is the namespace's overflow not yet summarised: from the
	// first event dropped until its summary is taken.
	overflow *eventOverflow
}

// heldStatus is when a switch's status was first held, and whether the
// switch has been enqueued again since.
type heldStatus struct {
	first    time.Time
	released bool
}

// gateKey names a switch: its kind and its key.
type gateKey struct {
	kind string
	key  types.NamespacedName
}

// NewGate returns a gate on clk that holds a status at most maxHold.
func NewGate(clk clock.PassiveClock, maxHold time.Duration) *Gate {
	return &Gate{clock: clk, maxHold: maxHold, namespaces: map[string]*namespaceGate{},
		releasers: map[string]func(types.NamespacedName){}}
}

// namespaceLocked returns the entry of namespace, made when there is none.
func (g *Gate) namespaceLocked(namespace string) *namespaceGate {
	ns := g.namespaces[namespace]
	if ns == nil {
		ns = &namespaceGate{pending: map[gateKey]uint64{}, held: map[gateKey]heldStatus{}, unwritten: map[gateKey]struct{}{}}
		g.namespaces[namespace] = ns
	}
	return ns
}

// Register sets how a held switch of kind is reconciled again.
func (g *Gate) Register(kind string, release func(types.NamespacedName)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.releasers[kind] = release
}

// Expect notes that the targets of the switches of kind at keys are to be
// synced after a state change, all at once. Call it before they are
// enqueued.
func (g *Gate) Expect(kind string, keys ...types.NamespacedName) {
	if len(keys) == 0 {
		return
	}
	now := g.clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.expects++
	for _, key := range keys {
		ns := g.namespaceLocked(key.Namespace)
		if len(ns.pending) == 0 {
			ns.since = now
		}
		ns.pending[gateKey{kind, key}] = g.expects
	}
}

// Ticket is what a reconcile takes before it reads anything, to give to
// done.
func (g *Gate) Ticket() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.expects
}

// Done notes that the reconcile that took ticket synced the target of the
// switch of kind at key, or failed to: it holds up no status any more,
// unless the switch was expected again after the ticket was taken. When it
// was the last pending one of its namespace, the namespace's held switches
// are released.
func (g *Gate) Done(kind string, key types.NamespacedName, ticket uint64) {
	k := gateKey{kind, key}
	g.mu.Lock()
	var releases []func()
	ns := g.namespaces[key.Namespace]
	if ns != nil {
		if expected, ok := ns.pending[k]; ok && expected <= ticket {
			delete(ns.pending, k)
			releases = g.openLocked(key.Namespace, ns)
		}
	}
	g.unlockAndRun(key.Namespace, releases)
}

// OnTargetsWritten sets what is called with a namespace whose last pending
// target is written, or whose last pending switch is forgotten
// (served.Checks.TargetsWritten: the namespace's checks that wait on
// TargetsPending look again then).
func (g *Gate) OnTargetsWritten(written func(namespace string)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.written = written
}

// Written notes that the status of the switch of kind at key was Written:
// a later hold of it counts from then.
func (g *Gate) Written(kind string, key types.NamespacedName) {
	k := gateKey{kind, key}
	g.mu.Lock()
	if ns := g.namespaces[key.Namespace]; ns != nil {
		delete(ns.held, k)
		delete(ns.unwritten, k)
	}
	g.unlockAndRun(key.Namespace, nil)
}

// Forget drops the switch of kind at key, which is gone or going.
func (g *Gate) Forget(kind string, key types.NamespacedName) {
	k := gateKey{kind, key}
	g.mu.Lock()
	var releases []func()
	if ns := g.namespaces[key.Namespace]; ns != nil {
		delete(ns.held, k)
		delete(ns.unwritten, k)
		if _, ok := ns.pending[k]; ok {
			delete(ns.pending, k)
			releases = g.openLocked(key.Namespace, ns)
		}
	}
	g.unlockAndRun(key.Namespace, releases)
}

// unlockAndRun unlocks g.mu (held by the caller), makes the release calls,
// and calls due when an event of namespace is due. It first drops the
// namespace's entry if nothing waits there any more.
func (g *Gate) unlockAndRun(namespace string, releases []func()) {
	due := g.due != nil && g.eventDueLocked(g.namespaces[namespace])
	g.tidyLocked(namespace)
	g.mu.Unlock()
	runAll(releases)
	if due {
		g.due()
	}
}

// tidyLocked drops the entry of namespace when nothing waits there.
func (g *Gate) tidyLocked(namespace string) {
	ns := g.namespaces[namespace]
	if ns != nil && len(ns.pending) == 0 && len(ns.held) == 0 && len(ns.unwritten) == 0 && len(ns.events) == 0 && ns.overflow == nil {
		delete(g.namespaces, namespace)
	}
}

// openLocked opens namespace, whose entry is ns, when nothing is pending
// there any more: it marks every held switch not yet released as released,
// and returns the calls that enqueue them and then tell written, to be
// made once g.mu (held by the caller) is unlocked.
func (g *Gate) openLocked(namespace string, ns *namespaceGate) []func() {
	if len(ns.pending) > 0 {
		return nil
	}
	var releases []func()
	for k, h := range ns.held {
		if h.released {
			continue
		}
		ns.held[k] = heldStatus{first: h.first, released: true}
		if release := g.releasers[k.kind]; release != nil {
			releases = append(releases, func() { release(k.key) })
		}
	}
	if written := g.written; written != nil {
		releases = append(releases, func() { written(namespace) })
	}
	return releases
}

func runAll(calls []func()) {
	for _, call := range calls {
		call()
	}
}

// TargetsPending reports whether targets of a state change are still to be
// written in namespace (within the bound of maxHold, as for statuses): the
// served checks of the namespace wait for them (served.Checks.Busy).
func (g *Gate) TargetsPending(namespace string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	ns, ok := g.namespaces[namespace]
	return ok && len(ns.pending) > 0 && g.clock.Now().Sub(ns.since) < g.maxHold
}

// Hold reports whether the status write of the switch of kind at key is
// to wait, and for how long at most: the switch is released as soon as no
// target of its namespace is pending, and is to be reconciled again after
// the returned duration in any case. write says whether the reconcile has
// a status to write: one that has not is never held, and neither is one
// whose target write failed (its status says so at once). When Hold
// reports false, the status, if any, is written; call Written once it is.
func (g *Gate) Hold(kind string, key types.NamespacedName, write bool) (bool, time.Duration) {
	g.mu.Lock()
	held, left := g.holdLocked(g.namespaceLocked(key.Namespace), gateKey{kind, key}, write)
	g.unlockAndRun(key.Namespace, nil)
	return held, left
}

func (g *Gate) holdLocked(ns *namespaceGate, k gateKey, write bool) (bool, time.Duration) {
	now := g.clock.Now()
	if !write {
		delete(ns.held, k)
		delete(ns.unwritten, k)
		return false, 0
	}
	first := now
	if h, ok := ns.held[k]; ok {
		first = h.first
	}
	left := min(g.maxHold-now.Sub(ns.since), g.maxHold-now.Sub(first))
	if len(ns.pending) == 0 || left <= 0 {
		// Written now or by the next reconcile: events wait for it.
		ns.unwritten[k] = struct{}{}
		return false, 0
	}
	// Held (again): released when nothing of its namespace is pending.
	ns.held[k] = heldStatus{first: first}
	return true, left
}

// ExpectAndAdd has the gate expect every switch of kind at keys, all at
// once, and then adds them to q: each reconcile counts, and none can empty
// the gate before the last is expected.
func (g *Gate) ExpectAndAdd(kind string, keys []types.NamespacedName, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	g.Expect(kind, keys...)
	for _, key := range keys {
		q.Add(reconcile.Request{NamespacedName: key})
	}
}

package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// maxStatusHold bounds how long a switch's status waits for the target
// writes of state changes (see statusGate).
const maxStatusHold = 10 * time.Second

// statusGate holds back status writes while the target writes that a state
// change caused are still to come. During a flip the targets are what
// traffic sees; every status patch and event the API server handles before
// the last target write delays that write (docs/benchmarks.md).
//
// The state watch's handler names each switch it enqueues (expect); the
// reconcile of each reports when its target is synced, or failed to be
// (done). While any of them is pending, a switch whose status is to change
// is held (hold) rather than written; when the last pending one is done,
// every held switch is released: handed to its kind's release func, which
// enqueues it to be reconciled again.
//
// The gate is one for all states: a status waits for the pending targets
// of any state change, including the changes the manager's first list of
// states delivers at start. Holding is bounded twice by maxHold: no status
// is held longer than that after its first hold (until it is written), and
// nothing is held once targets have been pending without a break for that
// long (a switch whose reconcile keeps being retried, for a cache that lags
// or a target that keeps changing, or states that keep changing one after
// another, would otherwise hold up every status). A held reconcile asks to
// be retried after the time left.
//
// A reconcile that began before its switch was expected (it read the state
// from before the change) does not count as done for that change: each
// expect is numbered, and a reconcile takes the current number (ticket)
// before it reads anything.
//
// Events wait too (record): an event recorded while any status is held or
// about to be written, or any target pending, is due once none is, so that
// the API server writes the statuses of a flip before its events (an event
// costs it about what a status patch does; docs/benchmarks.md). The event
// pacer takes the due ones one at a time (nextEvent), in the order they
// were recorded; a flip that begins meanwhile pauses them again. An event
// that has waited maxHold is due whatever waits.
//
// One gate serves every kind of switch. It keeps time on the real clock, as
// the work queue does.
type statusGate struct {
	clock   clock.PassiveClock
	maxHold time.Duration

	mu sync.Mutex
	// pending maps each expected switch to the number of its expect.
	pending map[gateKey]uint64
	expects uint64
	// since is when pending last became non-empty.
	since time.Time
	// held has each held switch until its status is written, released or
	// not, so that the bound counts from the first hold.
	held map[gateKey]heldStatus
	// releasers enqueue a held switch again, by kind.
	releasers map[string]func(types.NamespacedName)
	// unwritten has the switches whose status a reconcile is writing or
	// about to write without a hold (the last targets of a flip among
	// them), until it is written: events wait for them too.
	unwritten map[gateKey]struct{}
	// events are the recordings waiting to be taken, in order.
	events []deferredEvent
	// due is called, without g.mu, when events may have become due (the
	// event pacer's wake-up); nil calls nothing.
	due func()
}

// deferredEvent is the recording of an event and when it was recorded.
type deferredEvent struct {
	at     time.Time
	record func()
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

func newStatusGate(clk clock.PassiveClock, maxHold time.Duration) *statusGate {
	return &statusGate{clock: clk, maxHold: maxHold, pending: map[gateKey]uint64{},
		held: map[gateKey]heldStatus{}, unwritten: map[gateKey]struct{}{}, releasers: map[string]func(types.NamespacedName){}}
}

// register sets how a held switch of kind is reconciled again.
func (g *statusGate) register(kind string, release func(types.NamespacedName)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.releasers[kind] = release
}

// expect notes that the targets of the switches of kind at keys are to be
// synced after a state change, all at once. Call it before they are
// enqueued.
func (g *statusGate) expect(kind string, keys ...types.NamespacedName) {
	if len(keys) == 0 {
		return
	}
	now := g.clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.pending) == 0 {
		g.since = now
	}
	g.expects++
	for _, key := range keys {
		g.pending[gateKey{kind, key}] = g.expects
	}
}

// ticket is what a reconcile takes before it reads anything, to give to
// done.
func (g *statusGate) ticket() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.expects
}

// done notes that the reconcile that took ticket synced the target of the
// switch of kind at key, or failed to: it holds up no status any more,
// unless the switch was expected again after the ticket was taken. When it
// was the last pending one, the held switches are released.
func (g *statusGate) done(kind string, key types.NamespacedName, ticket uint64) {
	k := gateKey{kind, key}
	g.mu.Lock()
	var releases []func()
	if expected, ok := g.pending[k]; ok && expected <= ticket {
		delete(g.pending, k)
		releases = g.openLocked()
	}
	g.unlockAndRun(releases)
}

// written notes that the status of the switch of kind at key was written:
// a later hold of it counts from then.
func (g *statusGate) written(kind string, key types.NamespacedName) {
	k := gateKey{kind, key}
	g.mu.Lock()
	delete(g.held, k)
	delete(g.unwritten, k)
	g.unlockAndRun(nil)
}

// forget drops the switch of kind at key, which is gone or going.
func (g *statusGate) forget(kind string, key types.NamespacedName) {
	k := gateKey{kind, key}
	g.mu.Lock()
	delete(g.held, k)
	delete(g.unwritten, k)
	var releases []func()
	if _, ok := g.pending[k]; ok {
		delete(g.pending, k)
		releases = g.openLocked()
	}
	g.unlockAndRun(releases)
}

// record keeps the recording of an event until nextEvent takes it.
func (g *statusGate) record(event func()) {
	g.mu.Lock()
	g.events = append(g.events, deferredEvent{at: g.clock.Now(), record: event})
	g.unlockAndRun(nil)
}

// nextEvent takes the first event that waits when it is due: no status
// is held or unwritten and no target is pending, or it has waited maxHold.
// It returns nil when none is.
func (g *statusGate) nextEvent() func() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.eventDueLocked() {
		return nil
	}
	next := g.events[0]
	g.events[0] = deferredEvent{}
	g.events = g.events[1:]
	return next.record
}

// takeEvents takes every event that waits, due or not (at shutdown).
func (g *statusGate) takeEvents() []func() {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]func(), 0, len(g.events))
	for _, e := range g.events {
		out = append(out, e.record)
	}
	g.events = nil
	return out
}

// unlockAndRun unlocks g.mu (held by the caller), makes the release calls,
// and calls due when an event is due.
func (g *statusGate) unlockAndRun(releases []func()) {
	due := g.due != nil && g.eventDueLocked()
	g.mu.Unlock()
	runAll(releases)
	if due {
		g.due()
	}
}

// eventDueLocked reports whether the first event that waits is due.
func (g *statusGate) eventDueLocked() bool {
	if len(g.events) == 0 {
		return false
	}
	busy := len(g.pending) > 0 || len(g.held) > 0 || len(g.unwritten) > 0
	return !busy || g.clock.Since(g.events[0].at) >= g.maxHold
}

// openLocked marks every held switch not yet released as released when
// nothing is pending, and returns the calls that enqueue them, to be made
// once g.mu (held by the caller) is unlocked.
func (g *statusGate) openLocked() []func() {
	if len(g.pending) > 0 {
		return nil
	}
	var releases []func()
	for k, h := range g.held {
		if h.released {
			continue
		}
		g.held[k] = heldStatus{first: h.first, released: true}
		if release := g.releasers[k.kind]; release != nil {
			releases = append(releases, func() { release(k.key) })
		}
	}
	return releases
}

func runAll(calls []func()) {
	for _, call := range calls {
		call()
	}
}

// hold reports whether the status write of the switch of kind at key is
// to wait, and for how long at most: the switch is released as soon as no
// target is pending, and is to be reconciled again after the returned
// duration in any case. write says whether the reconcile has a status to
// write: one that has not is never held, and neither is one whose target
// write failed (its status says so at once). When hold reports false, the
// status, if any, is written; call written once it is.
func (g *statusGate) hold(kind string, key types.NamespacedName, write bool) (bool, time.Duration) {
	g.mu.Lock()
	held, left := g.holdLocked(gateKey{kind, key}, write)
	g.unlockAndRun(nil)
	return held, left
}

func (g *statusGate) holdLocked(k gateKey, write bool) (bool, time.Duration) {
	now := g.clock.Now()
	if !write {
		delete(g.held, k)
		delete(g.unwritten, k)
		return false, 0
	}
	first := now
	if h, ok := g.held[k]; ok {
		first = h.first
	}
	left := min(g.maxHold-now.Sub(g.since), g.maxHold-now.Sub(first))
	if len(g.pending) == 0 || left <= 0 {
		// Written now or by the next reconcile: events wait for it.
		g.unwritten[k] = struct{}{}
		return false, 0
	}
	// Held (again): released when nothing is pending any more.
	g.held[k] = heldStatus{first: first}
	return true, left
}

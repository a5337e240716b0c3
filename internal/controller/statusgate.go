package controller

import (
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// maxStatusHold bounds how long a switch's status waits for the target
// writes of a state change (see statusGate): statuses of a flip that never
// ends (a switch whose target cannot be read) are written after it.
const maxStatusHold = 10 * time.Second

// statusGate holds back status writes while the target writes that a state
// change caused are still to come. During a flip the targets are what
// traffic sees; every status patch and event the API server handles before
// the last target write delays that write (docs/benchmarks.md, "Targets
// first").
//
// A state change names the switches it drives (expect); the reconcile of
// each reports when its target is synced or cannot be (done). While any of
// them is pending, a switch whose status is to change is held (hold) rather
// than written; when the last pending one is done, every held switch is
// released: handed to its kind's release func, which enqueues it to be
// reconciled again. Nothing is held longer than maxHold after the first
// switch became pending: a held reconcile asks to be retried then, and
// from then on nothing more is held until the pending ones are done.
//
// One gate serves every kind of switch, since one state change fans out to
// all of them. It keeps time on the real clock, as the work queue does.
type statusGate struct {
	clock   clock.PassiveClock
	maxHold time.Duration

	mu      sync.Mutex
	pending sets.Set[gateKey]
	held    sets.Set[gateKey]
	// since is when pending last became non-empty.
	since   time.Time
	release map[string]func(types.NamespacedName)
}

// gateKey names a switch: its kind and its key.
type gateKey struct {
	kind string
	key  types.NamespacedName
}

func newStatusGate(clk clock.PassiveClock, maxHold time.Duration) *statusGate {
	return &statusGate{clock: clk, maxHold: maxHold, pending: sets.New[gateKey](), held: sets.New[gateKey](),
		release: map[string]func(types.NamespacedName){}}
}

// register sets how a held switch of kind is reconciled again.
func (g *statusGate) register(kind string, release func(types.NamespacedName)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.release[kind] = release
}

// expect notes that the targets of the switches of kind at keys are to be
// synced after a state change.
func (g *statusGate) expect(kind string, keys []types.NamespacedName) {
	if len(keys) == 0 {
		return
	}
	now := g.clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pending.Len() == 0 {
		g.since = now
	}
	for _, key := range keys {
		g.pending.Insert(gateKey{kind, key})
	}
}

// done notes that the target of the switch of kind at key is synced, or
// cannot be: it holds up no status any more. When it was the last one,
// the held switches are released.
func (g *statusGate) done(kind string, key types.NamespacedName) {
	g.mu.Lock()
	k := gateKey{kind, key}
	if !g.pending.Has(k) {
		g.mu.Unlock()
		return
	}
	g.pending.Delete(k)
	var released []gateKey
	if g.pending.Len() == 0 && g.held.Len() > 0 {
		released = g.held.UnsortedList()
		g.held = sets.New[gateKey]()
	}
	release := maps.Clone(g.release)
	g.mu.Unlock()
	for _, k := range released {
		if f := release[k.kind]; f != nil {
			f(k.key)
		}
	}
}

// hold reports whether the status write of the switch of kind at key is
// to wait, and for how long at most: the switch is released as soon as the
// pending targets are synced, and is to be reconciled again after the
// returned duration in any case.
func (g *statusGate) hold(kind string, key types.NamespacedName) (bool, time.Duration) {
	now := g.clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pending.Len() == 0 {
		return false, 0
	}
	left := g.maxHold - now.Sub(g.since)
	if left <= 0 {
		return false, 0
	}
	g.held.Insert(gateKey{kind, key})
	return true, left
}

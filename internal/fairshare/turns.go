// Package fairshare shares the manager's evaluation time between tenants
// (namespaces) fairly: a few slots, handed out in turn to the tenants that
// wait, each tenant held to a share of one core on average
// (docs/behaviour.md, "Fair shares"). It has no Kubernetes types.
package fairshare

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Turns hands out a fixed number of slots to tenants in turn: when a slot
// frees, the next tenant in line that waits gets it, whatever the length of
// the other tenants' queues, so that one tenant's queue of slow work delays
// another's next turn by at most the time one slot takes to free. A
// tenant's work is also held to its share of one core: a turn that took d
// keeps the tenant's next turn waiting until d/share after it began, while
// the other tenants take theirs. Safe for concurrent use.
type Turns struct {
	clock Clock
	slots int
	share float64

	mu   sync.Mutex
	busy int
	// tenants has every tenant that waits, holds a turn or is held back
	// by its share.
	tenants map[string]*tenant
	// line is the order in which the tenants that wait get their turns.
	line []string
	// wake is the timer that dispatches again when a tenant held back by
	// its share may take a turn; nil when none is set.
	wake   clock.Timer
	wakeAt time.Time
}

// tenant is one tenant's waiters, turns in hand, and when it may next
// begin a turn.
type tenant struct {
	waiters []*waiter
	holding int
	readyAt time.Time
}

// waiter is one Acquire call that waits; turn is set, and ready closed,
// when it is given its turn.
type waiter struct {
	ready chan struct{}
	turn  *Turn
}

// Turn is a slot held by one tenant; Done gives it back.
type Turn struct {
	turns  *Turns
	tenant string
	began  time.Time
	once   sync.Once
}

// Clock is what Turns needs of a clock: the time, and a timer to give a
// turn when a tenant's share lets it begin.
type Clock interface {
	clock.PassiveClock
	AfterFunc(d time.Duration, f func()) clock.Timer
}

// New returns Turns with slots slots, each tenant held to share (0 < share
// <= slots) of one core on average.
func New(clk Clock, slots int, share float64) *Turns {
	return &Turns{clock: clk, slots: max(slots, 1), share: share, tenants: map[string]*tenant{}}
}

// Acquire waits for a turn of tenant, or for ctx to be done, whichever
// comes first.
func (t *Turns) Acquire(ctx context.Context, name string) (*Turn, error) {
	w := &waiter{ready: make(chan struct{})}
	t.mu.Lock()
	tn := t.tenantLocked(name)
	if len(tn.waiters) == 0 {
		t.line = append(t.line, name)
	}
	tn.waiters = append(tn.waiters, w)
	t.dispatchLocked()
	t.mu.Unlock()

	select {
	case <-w.ready:
		return w.turn, nil
	case <-ctx.Done():
	}
	t.mu.Lock()
	select {
	case <-w.ready:
		// Given a turn while ctx ended: give it back uncharged.
		t.mu.Unlock()
		w.turn.giveBack(false)
		return nil, ctx.Err()
	default:
	}
	t.removeWaiterLocked(name, w)
	t.mu.Unlock()
	return nil, ctx.Err()
}

// Done gives the turn back, charging its tenant for the time it held it.
// Calls after the first do nothing.
func (turn *Turn) Done() {
	turn.giveBack(true)
}

func (turn *Turn) giveBack(charge bool) {
	turn.once.Do(func() {
		t := turn.turns
		t.mu.Lock()
		defer t.mu.Unlock()
		now := t.clock.Now()
		tn := t.tenantLocked(turn.tenant)
		tn.holding--
		t.busy--
		if charge {
			cost := time.Duration(float64(now.Sub(turn.began)) / t.share)
			tn.readyAt = maxTime(tn.readyAt, turn.began).Add(cost)
		}
		t.dispatchLocked()
		t.forgetIdleLocked(turn.tenant, now)
	})
}

// Waiting is how many Acquire calls wait, for tests and metrics.
func (t *Turns) Waiting() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, tn := range t.tenants {
		n += len(tn.waiters)
	}
	return n
}

func (t *Turns) tenantLocked(name string) *tenant {
	tn := t.tenants[name]
	if tn == nil {
		tn = &tenant{}
		t.tenants[name] = tn
	}
	return tn
}

// dispatchLocked gives free slots to the tenants in line whose share lets
// them begin, in line order; a tenant served goes to the back of the line
// if it still waits. When free slots remain and only tenants held back by
// their share wait, it sets the timer for the first of them.
func (t *Turns) dispatchLocked() {
	now := t.clock.Now()
	for t.busy < t.slots {
		i := t.nextInLineLocked(now)
		if i < 0 {
			break
		}
		name := t.line[i]
		tn := t.tenants[name]
		w := tn.waiters[0]
		tn.waiters[0] = nil
		tn.waiters = tn.waiters[1:]
		t.line = append(t.line[:i], t.line[i+1:]...)
		if len(tn.waiters) > 0 {
			t.line = append(t.line, name)
		}
		tn.holding++
		t.busy++
		w.turn = &Turn{turns: t, tenant: name, began: now}
		close(w.ready)
	}
	if t.busy < t.slots {
		t.wakeLocked(now)
	}
}

// nextInLineLocked is the index in line of the first tenant that may begin
// a turn now, or -1.
func (t *Turns) nextInLineLocked(now time.Time) int {
	for i, name := range t.line {
		if !t.tenants[name].readyAt.After(now) {
			return i
		}
	}
	return -1
}

// wakeLocked sets the timer for the earliest time a tenant in line may
// begin, unless one is set for that time or earlier.
func (t *Turns) wakeLocked(now time.Time) {
	var first time.Time
	for _, name := range t.line {
		if at := t.tenants[name].readyAt; first.IsZero() || at.Before(first) {
			first = at
		}
	}
	if first.IsZero() || (t.wake != nil && !t.wakeAt.After(first)) {
		return
	}
	if t.wake != nil {
		t.wake.Stop()
	}
	t.wakeAt = first
	t.wake = t.clock.AfterFunc(first.Sub(now), func() {
		// On its own goroutine: a clock may call f with its own lock
		// held, and dispatching reads the clock.
		go func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			t.wake = nil
			t.dispatchLocked()
		}()
	})
}

// removeWaiterLocked takes w out of its tenant's queue, and the tenant out
// of line when none of its waiters is left.
func (t *Turns) removeWaiterLocked(name string, w *waiter) {
	tn := t.tenants[name]
	for i, x := range tn.waiters {
		if x == w {
			tn.waiters = append(tn.waiters[:i], tn.waiters[i+1:]...)
			break
		}
	}
	if len(tn.waiters) == 0 {
		for i, x := range t.line {
			if x == name {
				t.line = append(t.line[:i], t.line[i+1:]...)
				break
			}
		}
	}
	t.forgetIdleLocked(name, t.clock.Now())
}

// forgetIdleLocked drops a tenant that neither waits nor holds a turn
// once its share no longer holds it back; one that is still held back is
// kept so that its next turn waits, and forgotten at a later call.
func (t *Turns) forgetIdleLocked(name string, now time.Time) {
	for n, tn := range t.tenants {
		if n != name && len(t.tenants) < 64 {
			continue
		}
		if len(tn.waiters) == 0 && tn.holding == 0 && !tn.readyAt.After(now) {
			delete(t.tenants, n)
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

package states

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// boundaryTimers wakes a schedule state's reconcile when its schedule next
// opens or closes, and a service state's when its count has held its side
// long enough to change the answer: one timer per state, on the manager's
// clock, so nothing polls and no status is written between two boundaries.
type boundaryTimers struct {
	clock  clock.WithDelayedExecution
	notify func(key string)

	mu     sync.Mutex
	timers map[string]boundaryTimer
}

type boundaryTimer struct {
	at    time.Time
	timer clock.Timer
}

func newBoundaryTimers(clk clock.WithDelayedExecution, notify func(key string)) *boundaryTimers {
	return &boundaryTimers{clock: clk, notify: notify, timers: map[string]boundaryTimer{}}
}

// set makes the state with this key reconcile at at; a zero at removes its
// timer. Setting the time it already has changes nothing.
func (b *boundaryTimers) set(key string, at time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.timers[key]; ok {
		if t.at.Equal(at) {
			return
		}
		t.timer.Stop()
		delete(b.timers, key)
	}
	if at.IsZero() {
		return
	}
	// A reconcile that runs a hair before the boundary finds the old answer
	// and sets a timer for the rest of the way.
	b.timers[key] = boundaryTimer{at: at, timer: b.clock.AfterFunc(at.Sub(b.clock.Now()), func() { b.fire(key, at) })}
}

// fire forgets the timer that fired, so that the reconcile it wakes sets
// the next one even when it finds the same boundary (it ran a hair early),
// and wakes the reconcile.
func (b *boundaryTimers) fire(key string, at time.Time) {
	b.mu.Lock()
	if t, ok := b.timers[key]; ok && t.at.Equal(at) {
		delete(b.timers, key)
	}
	b.mu.Unlock()
	b.notify(key)
}

// remove drops the state's timer.
func (b *boundaryTimers) remove(key string) {
	b.set(key, time.Time{})
}

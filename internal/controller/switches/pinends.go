package switches

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// pinEnds wakes the switches whose pins end, those that end at one time
// together (docs/behaviour.md, "Pins that end"): one timer per end time,
// on the manager's clock, never a poll. fire gets every switch whose pin
// ends at the time, all at once, so that it hands them to the status gate
// as a state change does: their targets are written first, and their
// statuses wait for them (docs/benchmarks.md, "Pins that end at one
// time").
type pinEnds struct {
	clock clock.WithDelayedExecution
	fire  func(keys []types.NamespacedName)

	mu sync.Mutex
	// ends has each switch's pin end; at, the switches of each end time
	// and its timer.
	ends map[types.NamespacedName]time.Time
	at   map[time.Time]*pinEndTimer
}

type pinEndTimer struct {
	keys  map[types.NamespacedName]struct{}
	timer clock.Timer
}

func newPinEnds(clk clock.WithDelayedExecution, fire func(keys []types.NamespacedName)) *pinEnds {
	return &pinEnds{clock: clk, fire: fire, ends: map[types.NamespacedName]time.Time{}, at: map[time.Time]*pinEndTimer{}}
}

// set wakes the switch at key when its pin ends at end; a zero end
// forgets it. Setting the end it has changes nothing.
func (p *pinEnds) set(key types.NamespacedName, end time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.ends[key]; ok {
		if old.Equal(end) {
			return
		}
		p.dropLocked(key, old)
	}
	if end.IsZero() {
		return
	}
	end = end.UTC()
	p.ends[key] = end
	t := p.at[end]
	if t == nil {
		t = &pinEndTimer{keys: map[types.NamespacedName]struct{}{}}
		t.timer = p.clock.AfterFunc(end.Sub(p.clock.Now()), func() { p.ring(end) })
		p.at[end] = t
	}
	t.keys[key] = struct{}{}
}

// dropLocked forgets key's end old, and the timer of old once no switch
// ends then.
func (p *pinEnds) dropLocked(key types.NamespacedName, old time.Time) {
	delete(p.ends, key)
	if t := p.at[old]; t != nil {
		delete(t.keys, key)
		if len(t.keys) == 0 {
			t.timer.Stop()
			delete(p.at, old)
		}
	}
}

// ring hands fire the switches whose pins end at end.
func (p *pinEnds) ring(end time.Time) {
	p.mu.Lock()
	t := p.at[end]
	delete(p.at, end)
	var keys []types.NamespacedName
	if t != nil {
		for key := range t.keys {
			delete(p.ends, key)
			keys = append(keys, key)
		}
	}
	p.mu.Unlock()
	if len(keys) > 0 {
		p.fire(keys)
	}
}

// Package memory keeps the manager's resident memory low while it is at
// rest (docs/operations.md, "Memory at rest").
//
// With the garbage collector's default target (GOGC=100) a Go heap grows to
// twice its live size between two collections, and the runtime keeps that
// much resident. While the manager works (a flip, a restart catching up)
// that headroom saves collections, which cost CPU the flip needs. At rest
// it allocates little (a metrics scrape, a lease renewal), so collecting
// more often costs next to nothing and the headroom is only memory: Rest
// lowers the target while the manager allocates little, returns the freed
// memory to the operating system once, and puts the target back at the
// first sign of work.
package memory

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

const (
	// DefaultPercent is --gc-percent-at-rest's default: at rest the heap
	// grows by a quarter of its live size between collections instead of
	// by all of it.
	DefaultPercent = 25
	// DefaultQuietFor is how long the manager allocates little before it
	// is at rest: longer than a flip's pauses (a status gate, a served
	// check's period) and than the time between two metrics scrapes.
	DefaultQuietFor = 30 * time.Second
	// defaultTick is how often Rest reads the runtime's figures.
	defaultTick = time.Second
	// minBusyBytes is the least a second's allocations that count as work,
	// so that a small manager's scrape does not.
	minBusyBytes = 8 << 20
)

// Busy reports whether allocated bytes in one tick, with live bytes in the
// heap, are work: at least half the live heap (more than a collection's
// worth at the target at rest) and at least minBusyBytes. A metrics scrape
// of 10 000 switches (about 15 MiB, with about 60 MiB live) is not; a flip
// of a few hundred switches is.
func Busy(allocated, live uint64) bool {
	return allocated >= max(live/2, minBusyBytes)
}

// Rest lowers GOGC to Percent while the manager is at rest.
type Rest struct {
	// Percent is the collector's target at rest (GOGC); 0 or less leaves
	// the target alone.
	Percent int
	Log     logr.Logger
	// QuietFor is how long the manager allocates little before it is at
	// rest (DefaultQuietFor when zero); Tick how often it looks (a second
	// when zero). Tests shorten them.
	QuietFor, Tick time.Duration

	// mu orders the changes of the target; resting is read without it.
	mu      sync.Mutex
	resting atomic.Bool
	// normal is the target to put back (GOGC before rest).
	normal int
	// lastBusy is when work was last seen, in Unix nanoseconds.
	lastBusy atomic.Int64
}

// Wake tells Rest that work begins: the target goes back at once, before
// the work's first second of allocations would show it. The engine calls
// it from every switch's reconcile, so a flip never runs at the target at
// rest: at 500 switches the live heap is about 10 MiB, and a collection
// every 2.5 MiB allocated would cost the flip CPU. Cheap when not at rest.
func (r *Rest) Wake() {
	now := time.Now().UnixNano()
	// Every worker calls this: write the shared time only when it is
	// stale, so that they do not contend for it.
	if now-r.lastBusy.Load() > int64(100*time.Millisecond) {
		r.lastBusy.Store(now)
	}
	if !r.resting.Load() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.resting.Load() {
		debug.SetGCPercent(r.normal)
		r.resting.Store(false)
	}
}

// rest sets the target at rest, unless work was seen since busySeen (the
// time of the last work when it decided): resting is set first and the
// time read after it, so that a Wake in between either sees resting and
// waits for the lock, or is seen here.
func (r *Rest) rest(busySeen int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resting.Store(true)
	debug.SetGCPercent(r.Percent)
	if r.lastBusy.Load() != busySeen {
		debug.SetGCPercent(r.normal)
		r.resting.Store(false)
		return false
	}
	return true
}

// AtRest reports whether the lower target is in effect (the
// dynamicingress_manager_memory_at_rest gauge).
func (r *Rest) AtRest() bool { return r.resting.Load() }

// gcPercent is the collector's target now (GOGC; negative when off).
func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(int64(s[0].Value.Uint64()))
}

// Start runs until ctx ends: a manager Runnable. It needs no leader: every
// replica keeps its own memory.
func (r *Rest) Start(ctx context.Context) error {
	if r.Percent <= 0 {
		return nil
	}
	quiet, every := r.QuietFor, r.Tick
	if quiet <= 0 {
		quiet = DefaultQuietFor
	}
	if every <= 0 {
		every = defaultTick
	}
	samples := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(samples)
	prev := samples[0].Value.Uint64()
	r.mu.Lock()
	r.normal = gcPercent()
	r.mu.Unlock()
	if r.normal < 0 || r.normal <= r.Percent {
		// GOGC off, or already as low: nothing to do at rest.
		return nil
	}
	r.lastBusy.Store(time.Now().UnixNano())
	t := time.NewTicker(every)
	defer t.Stop()
	defer r.Wake()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			metrics.Read(samples)
			allocs, live := samples[0].Value.Uint64(), samples[1].Value.Uint64()
			busy := Busy(allocs-prev, live)
			prev = allocs
			switch {
			case busy:
				r.Wake()
			case !r.resting.Load():
				seen := r.lastBusy.Load()
				if now.Sub(time.Unix(0, seen)) < quiet || !r.rest(seen) {
					continue
				}
				// A collection now, and the memory it frees returned.
				debug.FreeOSMemory()
				r.Log.V(1).Info("memory: at rest", "gcPercent", r.Percent, "liveBytes", live)
			}
		}
	}
}

// NeedLeaderElection is false: each replica keeps its own memory low.
func (r *Rest) NeedLeaderElection() bool { return false }

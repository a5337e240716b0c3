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
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strings"
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

	resting atomic.Bool
}

// AtRest reports whether the lower target is in effect (the
// dynamicingress_manager_memory_at_rest gauge).
func (r *Rest) AtRest() bool { return r.resting.Load() }

// Enabled reports whether Rest changes anything: a Percent above 0, and no
// GOGC=off, which asks for no collection at all.
func (r *Rest) Enabled() bool {
	return r.Percent > 0 && !strings.EqualFold(os.Getenv("GOGC"), "off")
}

// Start runs until ctx ends: a manager Runnable. It needs no leader: every
// replica keeps its own memory.
func (r *Rest) Start(ctx context.Context) error {
	if !r.Enabled() {
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
	lastBusy := time.Now()
	normal := -1
	t := time.NewTicker(every)
	defer t.Stop()
	defer func() {
		if r.resting.Load() {
			debug.SetGCPercent(normal)
		}
	}()
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
				lastBusy = now
				if r.resting.Load() {
					debug.SetGCPercent(normal)
					r.resting.Store(false)
					r.Log.V(1).Info("memory: work, the collector's target back", "gcPercent", normal)
				}
			case !r.resting.Load() && now.Sub(lastBusy) >= quiet:
				normal = debug.SetGCPercent(r.Percent)
				if normal >= 0 && normal <= r.Percent {
					// GOGC is already as low: nothing to do at rest.
					debug.SetGCPercent(normal)
					return nil
				}
				r.resting.Store(true)
				// A collection now, and the memory it frees returned.
				debug.FreeOSMemory()
				r.Log.V(1).Info("memory: at rest", "gcPercent", r.Percent, "liveBytes", live)
			}
		}
	}
}

// NeedLeaderElection is false: each replica keeps its own memory low.
func (r *Rest) NeedLeaderElection() bool { return false }

package memory

import (
	"context"
	"runtime/debug"
	"sync"
	"testing"
	"time"
)

func TestBusy(t *testing.T) {
	const mib = 1 << 20
	for _, tt := range []struct {
		name            string
		allocated, live uint64
		want            bool
	}{
		{"nothing", 0, 60 * mib, false},
		{"a scrape of 10 000 switches", 15 * mib, 60 * mib, false},
		{"half the live heap", 30 * mib, 60 * mib, true},
		{"a flip of 500 in a small manager", 40 * mib, 10 * mib, true},
		{"a small manager's scrape: under the floor", 6 * mib, 4 * mib, false},
		{"the floor", 8 * mib, 4 * mib, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Busy(tt.allocated, tt.live); got != tt.want {
				t.Errorf("Busy(%d MiB, %d MiB) = %v, want %v", tt.allocated/mib, tt.live/mib, got, tt.want)
			}
		})
	}
}

// TestRest runs the loop on this test's own runtime: quiet, it lowers the
// target; allocating, it puts the target back; stopped, it leaves the
// target as it found it.
func TestRest(t *testing.T) {
	if gcPercent() < 0 {
		t.Skip("GOGC=off")
	}
	withGOGC(t, 100)
	r := &Rest{Percent: 25, QuietFor: 100 * time.Millisecond, Tick: 10 * time.Millisecond}
	stop := run(t, r)
	waitFor(t, "at rest", r.AtRest)
	if p := gcPercent(); p != 25 {
		t.Errorf("GOGC at rest = %d, want 25", p)
	}
	// Work: allocate well over the floor each tick until Rest sees it.
	var keep [][]byte
	waitFor(t, "awake", func() bool {
		keep = append(keep[:0], make([]byte, 16<<20))
		return !r.AtRest()
	})
	if p := gcPercent(); p != 100 {
		t.Errorf("GOGC after work = %d, want 100", p)
	}
	waitFor(t, "at rest again", r.AtRest)
	stop()
	if p := gcPercent(); p != 100 {
		t.Errorf("GOGC after Start returned at rest = %d, want 100", p)
	}
	_ = keep
}

// withGOGC sets the collector's target for the test, and puts the one
// before it back after it.
func withGOGC(t *testing.T, percent int) {
	before := debug.SetGCPercent(percent)
	t.Cleanup(func() { debug.SetGCPercent(before) })
}

// run starts r and returns how to stop it; the test stops it at the end
// anyway. Start puts the target back when it returns, so stopping waits
// for it: it must not do so in the next test.
func run(t *testing.T, r *Rest) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Start(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("not %s within 10s", what)
}

// TestRestLeavesALowerGOGC: a GOGC already at or below the target at rest
// is left alone.
func TestRestLeavesALowerGOGC(t *testing.T) {
	withGOGC(t, 20)
	r := &Rest{Percent: 25, QuietFor: 50 * time.Millisecond, Tick: 10 * time.Millisecond}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := gcPercent(); p != 20 || r.AtRest() {
		t.Errorf("GOGC = %d, at rest %v; want 20 and not at rest", p, r.AtRest())
	}
}

// TestRestWake: Wake puts the target back at once, and the quiet time
// counts again from it.
func TestRestWake(t *testing.T) {
	withGOGC(t, 100)
	r := &Rest{Percent: 25, QuietFor: 300 * time.Millisecond, Tick: 10 * time.Millisecond}
	run(t, r)
	waitFor(t, "at rest", r.AtRest)
	r.Wake()
	if p := gcPercent(); p != 100 || r.AtRest() {
		t.Fatalf("after Wake: GOGC %d, at rest %v; want 100, not at rest", p, r.AtRest())
	}
	time.Sleep(100 * time.Millisecond)
	if r.AtRest() {
		t.Error("at rest again 100ms after Wake, before its quiet time")
	}
	waitFor(t, "at rest again", r.AtRest)
}

// TestRestLeavesGCOff: with the collector off (GOGC=off, or any negative
// GOGC), Rest never turns it on.
func TestRestLeavesGCOff(t *testing.T) {
	withGOGC(t, -1)
	r := &Rest{Percent: 25, QuietFor: 20 * time.Millisecond, Tick: 5 * time.Millisecond}
	run(t, r)
	time.Sleep(200 * time.Millisecond)
	if p := gcPercent(); p >= 0 || r.AtRest() {
		t.Errorf("GOGC = %d, at rest %v; want the collector still off", p, r.AtRest())
	}
}

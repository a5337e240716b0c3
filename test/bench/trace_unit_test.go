package bench

import (
	"context"
	"os"
	"path/filepath"
	"runtime/trace"
	"strings"
	"testing"
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/regions"
)

// A trace made by this process's runtime: its regions read back by type,
// nested ones too, on the wall clock.
func TestTraceSpans(t *testing.T) {
	if trace.IsEnabled() {
		t.Skip("a trace already runs (go test -trace)")
	}
	path := filepath.Join(t.TempDir(), "flip.trace")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if err := trace.Start(f); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	trace.WithRegion(ctx, regions.SwitchReconcile, func() {
		trace.WithRegion(ctx, regions.TargetWrite, func() { time.Sleep(20 * time.Millisecond) })
		trace.WithRegion(ctx, regions.SwitchStatus, func() { time.Sleep(5 * time.Millisecond) })
	})
	trace.Stop()
	after := time.Now()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	spans, extent, err := traceSpans(path)
	if err != nil {
		t.Fatal(err)
	}
	if extent.begin.Before(before.Add(-time.Millisecond)) || extent.end.After(after.Add(time.Millisecond)) || extent.end.Sub(extent.begin) < 25*time.Millisecond {
		t.Errorf("the trace from %s to %s, want within %s to %s and at least 25ms", extent.begin, extent.end, before, after)
	}
	for kind, least := range map[string]time.Duration{regions.SwitchReconcile: 25 * time.Millisecond, regions.TargetWrite: 20 * time.Millisecond, regions.SwitchStatus: 5 * time.Millisecond} {
		ss := spans[kind]
		if len(ss) != 1 {
			t.Fatalf("%s: %d spans, want 1 (%v)", kind, len(ss), spans)
		}
		s := ss[0]
		if d := s.end.Sub(s.begin); d < least || d > least+time.Second {
			t.Errorf("%s lasted %s, want at least %s", kind, d, least)
		}
		// The wall clock of the trace's snapshot, within the test's own
		// readings (a little slack for the clocks' rounding).
		if s.begin.Before(before.Add(-time.Millisecond)) || s.end.After(after.Add(time.Millisecond)) {
			t.Errorf("%s from %s to %s, outside the trace's %s to %s", kind, s.begin, s.end, before, after)
		}
	}
	if r := spans[regions.SwitchReconcile][0]; r.inner < 25*time.Millisecond || r.inner > r.end.Sub(r.begin) {
		t.Errorf("the reconcile's writes took %s of its %s, want at least 25ms", r.inner, r.end.Sub(r.begin))
	}
	if w := spans[regions.TargetWrite][0]; w.inner != 0 {
		t.Errorf("the target write has %s of regions within it, want none", w.inner)
	}
	if w, s := spans[regions.TargetWrite][0], spans[regions.SwitchStatus][0]; !s.begin.After(w.end.Add(-time.Millisecond)) {
		t.Errorf("the status write began at %s, before the target write ended at %s", s.begin, w.end)
	}
}

func TestTraceTimeline(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	spans := map[string][]span{
		regions.StateReconcile:  {{begin: at(-50), end: at(-40)}, {begin: at(2), end: at(12)}},
		regions.SwitchReconcile: {{begin: at(10), end: at(70), inner: 40 * time.Millisecond}, {begin: at(20), end: at(160), inner: 120 * time.Millisecond}, {begin: at(30), end: at(31)}},
		regions.TargetWrite:     {{begin: at(20), end: at(60)}, {begin: at(30), end: at(150)}, {begin: at(40), end: at(380)}},
	}
	got := traceTimeline(spans, span{begin: at(-300), end: at(420)}, t0)
	for _, want := range []string{
		"the trace from -300.00ms to 420ms",
		"target write              3, from 20.0ms to 380ms (up to the trace's end: later ones are not in it)",
		"state reconcile           1, from 2.00ms to 12.0ms",
		"2 switch reconciles with a write: their time beside it p50 20.0ms",
		"target write ended per 100 ms from the edit: 1 1 0 1",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("timeline lacks %q:\n%s", want, got)
		}
	}
}

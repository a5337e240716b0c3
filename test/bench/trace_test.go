package bench

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	xtrace "golang.org/x/exp/trace"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/regions"
)

// Tracing a flip (BENCH_TRACE=dir): a Go execution trace of the manager
// over each operator flip of the flip and the served measures (not the
// other measures'), from traceLead before the edit, BENCH_TRACE_SECONDS
// long (default 6), saved into dir as [served-]manager-<N>-<direction>-<unix
// nanoseconds>.trace (go tool trace) and summarised beside the bench's own watches: where the
// trace begins and ends, and for each region the manager marks
// (internal/regions) how many ran, the first began and the last ended
// after the state's edit, their durations; how many of the writes, events
// and served requests ended in each 100 ms. A trace slows the manager: its
// flips are for finding where the time goes, never for the figures.

// traceLead is how long before a traced flip's edit its trace is asked for;
// traceBucket the timeline's step.
const (
	traceLead   = 300 * time.Millisecond
	traceBucket = 100 * time.Millisecond
)

// traceManager takes a Go execution trace of the manager in the background
// into the BENCH_TRACE directory, as name-<unix nanoseconds>.trace, and
// returns once the manager has had traceLead to begin it; the returned function
// waits for it (once: later calls return the same) and returns its path
// ("" without BENCH_TRACE, or when the manager serves no profiles or the
// trace failed).
func (b *bench) traceManager(m *managerProc, name string) func() string {
	dir := os.Getenv("BENCH_TRACE")
	if dir == "" || m.pprofURL == "" {
		return func() string { return "" }
	}
	seconds := os.Getenv("BENCH_TRACE_SECONDS")
	if seconds == "" {
		seconds = "6"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.progress("trace %s: %v", name, err)
		return func() string { return "" }
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%d.trace", strings.ReplaceAll(name, " ", "-"), time.Now().UnixNano()))
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			resp, err := http.Get(m.pprofURL + "/trace?seconds=" + seconds)
			if err != nil {
				return err
			}
			defer func() { _ = resp.Body.Close() }()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s/trace: %s", m.pprofURL, resp.Status)
			}
			raw, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			return os.WriteFile(path, raw, 0o644)
		}()
	}()
	// The trace begins when the manager has the request: give it time, so
	// that the flip's first reconciles are in it.
	time.Sleep(traceLead)
	return sync.OnceValue(func() string {
		if err := <-done; err != nil {
			b.progress("trace %s: %v", name, err)
			return ""
		}
		return path
	})
}

// traced waits for the trace that stop returns (when there is one) and
// prints its timeline from t0 after seen, what the bench's watches saw.
func (b *bench) traced(stop func() string, t0 time.Time, seen string) {
	path := stop()
	if path == "" {
		return
	}
	spans, extent, err := traceSpans(path)
	if err != nil {
		b.progress("trace %s: %v", path, err)
		return
	}
	b.progress("trace of the %s (%s):\n%s", seen, path, traceTimeline(spans, extent, t0))
}

// span is one region of a trace, in wall-clock time; inner is the time of
// the regions directly within it.
type span struct {
	begin, end time.Time
	inner      time.Duration
}

// traceSpans reads the regions of a trace, by type, in wall-clock time
// (from the trace's clock snapshots), and the trace's own extent (its first
// and last event); regions still open at its end, or begun before it, are
// left out.
func traceSpans(path string) (map[string][]span, span, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, span{}, err
	}
	defer func() { _ = f.Close() }()
	r, err := xtrace.NewReader(f)
	if err != nil {
		return nil, span{}, err
	}
	type open struct {
		kind  string
		begin xtrace.Time
		inner time.Duration
	}
	type closed struct {
		begin, end xtrace.Time
		inner      time.Duration
	}
	var (
		snap        *xtrace.ClockSnapshot
		stack       = map[xtrace.GoID][]open{}
		raw         = map[string][]closed{}
		first, last xtrace.Time
	)
	for {
		ev, err := r.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, span{}, err
		}
		if first == 0 {
			first = ev.Time()
		}
		last = max(last, ev.Time())
		switch ev.Kind() {
		case xtrace.EventSync:
			if s := ev.Sync().ClockSnapshot; s != nil && snap == nil {
				snap = s
			}
		case xtrace.EventRegionBegin:
			g := ev.Goroutine()
			stack[g] = append(stack[g], open{kind: ev.Region().Type, begin: ev.Time()})
		case xtrace.EventRegionEnd:
			g, kind := ev.Goroutine(), ev.Region().Type
			s := stack[g]
			if k := len(s) - 1; k >= 0 && s[k].kind == kind {
				raw[kind] = append(raw[kind], closed{s[k].begin, ev.Time(), s[k].inner})
				stack[g] = s[:k]
				if k > 0 {
					stack[g][k-1].inner += time.Duration(ev.Time() - s[k].begin)
				}
			}
		}
	}
	if snap == nil {
		return nil, span{}, fmt.Errorf("%s: no clock snapshot (a trace of Go 1.25 or later has one)", path)
	}
	wall := func(t xtrace.Time) time.Time { return snap.Wall.Add(time.Duration(t - snap.Trace)) }
	out := map[string][]span{}
	for kind, ts := range raw {
		for _, t := range ts {
			out[kind] = append(out[kind], span{wall(t.begin), wall(t.end), t.inner})
		}
	}
	return out, span{begin: wall(first), end: wall(last)}, nil
}

// traceTimeline summarises the regions of a flip that began at t0, in a
// trace of extent: one line a region type, in the order of a flip (marked
// when its last one ended in the trace's last 100 ms: later ones may be cut
// off), then the ends of the writes, events and requests per 100 ms.
func traceTimeline(spans map[string][]span, extent span, t0 time.Time) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "  the trace from %s to %s\n", round(extent.begin.Sub(t0)), round(extent.end.Sub(t0)))
	for _, kind := range regions.All {
		ss := spans[kind]
		var durations []time.Duration
		var first, last time.Duration
		n := 0
		for _, s := range ss {
			if s.end.Before(t0) {
				continue
			}
			b, e := s.begin.Sub(t0), s.end.Sub(t0)
			if n == 0 || b < first {
				first = b
			}
			last = max(last, e)
			durations = append(durations, s.end.Sub(s.begin))
			n++
		}
		if n == 0 {
			fmt.Fprintf(&sb, "  %-22s none\n", kind)
			continue
		}
		cut := ""
		if extent.end.Sub(t0)-last < traceBucket {
			cut = " (up to the trace's end: later ones are not in it)"
		}
		fmt.Fprintf(&sb, "  %-22s %4d, from %s to %s%s; each p50 %s, p90 %s, max %s\n", kind, n, round(first), round(last), cut,
			round(percentile(durations, 0.5)), round(percentile(durations, 0.9)), round(slices.Max(durations)))
	}
	var own []time.Duration
	for _, s := range spans[regions.SwitchReconcile] {
		if !s.end.Before(t0) && s.inner > 0 {
			own = append(own, s.end.Sub(s.begin)-s.inner)
		}
	}
	if len(own) > 0 {
		fmt.Fprintf(&sb, "  %d switch reconciles with a write: their time beside it p50 %s, p90 %s, max %s\n", len(own),
			round(percentile(own, 0.5)), round(percentile(own, 0.9)), round(slices.Max(own)))
	}
	for _, kind := range []string{regions.TargetWrite, regions.SwitchStatus, regions.Event, regions.ServedRequest} {
		if h := perBucket(spans[kind], t0, traceBucket); h != "" {
			fmt.Fprintf(&sb, "  %s ended per 100 ms from the edit: %s\n", kind, h)
		}
	}
	return sb.String()
}

// perBucket counts the spans that ended in each bucket after t0, up to the
// last bucket with one.
func perBucket(ss []span, t0 time.Time, bucket time.Duration) string {
	var counts []int
	for _, s := range ss {
		if s.end.Before(t0) {
			continue
		}
		k := int(s.end.Sub(t0) / bucket)
		for len(counts) <= k {
			counts = append(counts, 0)
		}
		counts[k]++
	}
	words := make([]string, len(counts))
	for i, c := range counts {
		words[i] = fmt.Sprint(c)
	}
	return strings.Join(words, " ")
}

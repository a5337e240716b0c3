package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The manager's memory as the scale measure reads it: at its peak, at
// rest (after its lower GC target at rest took effect), its working set,
// where its resident memory is, and its heap profiles.

// memReading is the manager's memory at one moment, or the peak of a phase.
type memReading struct {
	rss        int64
	heap, live float64
	// workingSet: the anonymous pages and the file pages (the binary's)
	// used over a window with one metrics scrape, as a Prometheus scraping
	// every 15 s makes (docs/benchmarks.md, "Memory at rest");
	// workingSetScraped: the same over the readings' window, a scrape
	// every settle. atRest: how long after the start of the reading the
	// manager's lower GC target at rest was in effect (0: never).
	workingSet, workingSetScraped int64
	atRest                        time.Duration
}

// memorySampler follows a manager's heap while a phase runs.
type memorySampler struct {
	stop     chan struct{}
	done     chan struct{}
	mu       sync.Mutex
	heapPeak float64
}

// memorySampleEvery is how often the sampler reads the manager's metrics:
// at 10 000 switches a scrape encodes some 30 000 series, so not often.
const memorySampleEvery = 2 * time.Second

// sampleMemory scrapes go_memstats_heap_alloc_bytes every
// memorySampleEvery until end.
func sampleMemory(ctx context.Context, m *managerProc) *memorySampler {
	s := &memorySampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(memorySampleEvery)
		defer tick.Stop()
		for {
			if mm, err := scrapeURL(ctx, m.metricsURL, []string{"go_memstats_heap_alloc_bytes"}); err == nil {
				s.mu.Lock()
				s.heapPeak = max(s.heapPeak, mm.sum("go_memstats_heap_alloc_bytes", nil))
				s.mu.Unlock()
			}
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// end stops sampling and returns the peak: the process's VmHWM and the
// largest heap sampled.
func (s *memorySampler) end(m *managerProc) memReading {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return memReading{rss: procStatusBytes(m.Pid(), "VmHWM:"), heap: s.heapPeak}
}

// restingMemory waits up to cfg.restWait for the manager to be at rest
// (dynamicingress_manager_memory_at_rest; the manager rests after 30s of
// few allocations), then reads its working set over five times
// cfg.settle with one scrape of its metrics in the middle, and then again
// over as long while it takes five readings of RSS, heap_alloc and the
// live heap after the last GC (their medians), a scrape each.
func (b *bench) restingMemory(ctx context.Context, m *managerProc) (memReading, error) {
	var r memReading
	t0 := time.Now()
	for time.Since(t0) < b.cfg.restWait {
		mm, err := scrapeURL(ctx, m.metricsURL, []string{atRestMetric})
		if err != nil {
			return memReading{}, err
		}
		if mm.sum(atRestMetric, nil) == 1 {
			r.atRest = time.Since(t0)
			break
		}
		time.Sleep(time.Second)
	}
	// The working set over 15 s in make bench (five times the settle),
	// a metrics scrape's interval, with the one scrape a Prometheus makes
	// in it: a scrape encodes every series, so five of them use more of
	// the binary's pages and leave more garbage than one.
	clearReferenced(m.Pid())
	for i := range 5 {
		time.Sleep(b.cfg.settle)
		if i == 2 {
			if _, err := scrapeURL(ctx, m.metricsURL, nil); err != nil {
				return memReading{}, err
			}
		}
	}
	r.workingSet = workingSet(m.Pid())
	clearReferenced(m.Pid())
	var rss, heap, live []float64
	for range 5 {
		time.Sleep(b.cfg.settle)
		mm, err := scrapeURL(ctx, m.metricsURL, []string{"go_memstats_heap_alloc_bytes", "go_gc_heap_live_bytes"})
		if err != nil {
			return memReading{}, err
		}
		rss = append(rss, float64(rssBytes(m.Pid())))
		heap = append(heap, mm.sum("go_memstats_heap_alloc_bytes", nil))
		live = append(live, mm.sum("go_gc_heap_live_bytes", nil))
	}
	r.workingSetScraped = workingSet(m.Pid())
	b.memoryBreakdown(ctx, m)
	r.rss, r.heap, r.live = int64(medianFloat(rss)), medianFloat(heap), medianFloat(live)
	return r, nil
}

const (
	// atRestMetric is the manager's gauge of its GC target at rest.
	atRestMetric = "dynamicingress_manager_memory_at_rest"
)

// clearReferenced clears the accessed bits of the process's pages
// (/proc/PID/clear_refs), so that smaps' Referenced counts the pages used
// since.
func clearReferenced(pid int) {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("1"), 0)
}

// workingSet is what of the process's memory a container's limit cannot
// take back: every anonymous page (there is no swap), and the file-backed
// pages (the binary's code and read-only data) used since clearReferenced.
// The kernel reclaims the others, pages of start-up code read once, before
// it counts a container out of memory, and the kubelet's working set
// (container_memory_working_set_bytes) leaves them out as inactive.
func workingSet(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	var anon, fileRef int64
	file := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			file = fields[4] != "0"
			continue
		}
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(fields[1], 10, 64)
		switch {
		case fields[0] == "Anonymous:":
			anon += kb
		case fields[0] == "Referenced:" && file:
			fileRef += kb
		}
	}
	return (anon + fileRef) * 1024
}

// breakdownSeries are the runtime's figures that say where a manager's
// resident memory is: the heap in spans and returned to the OS, the GC's
// next goal, stacks and the runtime's other own memory.
var breakdownSeries = []string{
	"go_memstats_heap_inuse_bytes", "go_memstats_heap_idle_bytes", "go_memstats_heap_released_bytes",
	"go_memstats_next_gc_bytes", "go_memstats_stack_sys_bytes", "go_memstats_sys_bytes", "go_gc_heap_live_bytes",
}

// memoryBreakdown prints where the manager's resident memory is: anonymous
// and file-backed pages (the binary's), and the runtime's own figures.
func (b *bench) memoryBreakdown(ctx context.Context, m *managerProc) {
	mm, err := scrapeURL(ctx, m.metricsURL, breakdownSeries)
	if err != nil {
		return
	}
	line := fmt.Sprintf("memory breakdown: VmRSS %s (anon %s, file %s), working set %s", mib(rssBytes(m.Pid())),
		mib(procStatusBytes(m.Pid(), "RssAnon:")), mib(procStatusBytes(m.Pid(), "RssFile:")), mib(workingSet(m.Pid())))
	for _, s := range breakdownSeries {
		line += fmt.Sprintf(", %s %s", strings.TrimPrefix(strings.TrimSuffix(s, "_bytes"), "go_memstats_"), mib(int64(mm.sum(s, nil))))
	}
	b.progress("%s", line)
}

// heapProfile saves the manager's heap profile into the BENCH_PROFILE
// directory, when the manager serves Go's profiles (BENCH_PROFILE).
func (b *bench) heapProfile(m *managerProc, name string) {
	if m.pprofURL == "" {
		return
	}
	b.profile(name, func(string) ([]byte, error) {
		resp, err := http.Get(m.pprofURL + "/heap")
		if err != nil {
			return nil, err
		}
		defer func() { _ = resp.Body.Close() }()
		return io.ReadAll(resp.Body)
	})()
}

// watchRest, when BENCH_REST gives a duration, prints the manager's memory
// breakdown every 20 s for that long: how resident memory moves at rest,
// after the start-up peak.
func (b *bench) watchRest(ctx context.Context, m *managerProc) {
	d, err := time.ParseDuration(os.Getenv("BENCH_REST"))
	if err != nil {
		return
	}
	for end := time.Now().Add(d); time.Now().Before(end); {
		time.Sleep(20 * time.Second)
		b.memoryBreakdown(ctx, m)
	}
}

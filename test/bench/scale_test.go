package bench

import (
	"context"
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// probeScaleResult is the probe throughput of many states, against the
// same manager idle.
type probeScaleResult struct {
	states     int
	window     time.Duration
	idleWindow time.Duration
	readyAfter time.Duration
	// achieved probes per second at the endpoints, scheduled = states/interval.
	achieved, scheduled float64
	// CPU in cores (CPU seconds per second) and RSS, loaded and idle.
	cpuLoad, cpuIdle float64
	rssLoad, rssIdle int64
	writes           requests
}

// probeScale runs cfg.probeStates states probing four local endpoints
// every second, one of them pointed at an endpoint that never answers.
func (b *bench) probeScale(ctx context.Context) (*probeScaleResult, error) {
	h, n := b.h, b.cfg.probeStates
	res := &probeScaleResult{states: n, window: b.cfg.probeWindow, idleWindow: b.cfg.idleWindow, scheduled: float64(n) / probeInterval.Seconds()}
	m, err := h.startManager(managerOptions{probes: true})
	if err != nil {
		return nil, err
	}
	defer m.stop()
	// Idle: the manager with no state at all, after its start.
	time.Sleep(b.cfg.settle)
	b.progress("probe scale: the manager idle for %s", res.idleWindow)
	cpu0, t0 := cpuSeconds(m.Pid()), time.Now()
	time.Sleep(res.idleWindow)
	res.cpuIdle = (cpuSeconds(m.Pid()) - cpu0) / time.Since(t0).Seconds()
	res.rssIdle = rssBytes(m.Pid())

	var eps []*endpoint
	for range 4 {
		e, err := startEndpoint(modeOK)
		if err != nil {
			return nil, err
		}
		defer e.Close()
		eps = append(eps, e)
	}
	hang, err := startEndpoint(modeHang)
	if err != nil {
		return nil, err
	}
	defer hang.Close()
	eps = append(eps, hang)
	const ns = "probe-scale"
	if err := h.ensureNamespace(ctx, ns); err != nil {
		return nil, err
	}
	hangName := objName(0)
	w, err := watchArrivals(ctx, states(h, ns), n, func(o runtime.Object) (string, bool) {
		name, ok := stateReady(o)
		if name == hangName {
			return stateFailed(o)
		}
		return name, ok
	})
	if err != nil {
		return nil, err
	}
	defer w.stop()
	start := time.Now()
	w.startAt(start)
	b.progress("probe scale: creating %d states probing every %s (one endpoint hangs)", n, probeInterval)
	if err := parallel(n, 32, func(i int) error {
		url := eps[i%4].URL
		if i == 0 {
			url = hang.URL
		}
		return h.c.Create(ctx, probedState(ns, objName(i), fmt.Sprintf("%s/state/%d", url, i)).Obj())
	}); err != nil {
		return nil, err
	}
	if err := w.wait(3 * time.Minute); err != nil {
		return nil, fmt.Errorf("probe scale: %w (%v)", err, m.check())
	}
	res.readyAfter = time.Since(start)
	time.Sleep(2 * probeInterval)

	count := func() int64 {
		total := int64(0)
		for _, e := range eps {
			total += e.count.Load()
		}
		return total
	}
	before, err := h.apiserverMetrics(ctx)
	if err != nil {
		return nil, err
	}
	b.progress("probe scale: all %d states have a status after %s; measuring for %s", n, round(res.readyAfter), res.window)
	p0, cpu0, t0 := count(), cpuSeconds(m.Pid()), time.Now()
	time.Sleep(res.window)
	p1, cpu1, elapsed := count(), cpuSeconds(m.Pid()), time.Since(t0).Seconds()
	res.rssLoad = rssBytes(m.Pid())
	after, err := h.apiserverMetrics(ctx)
	if err != nil {
		return nil, err
	}
	res.achieved = float64(p1-p0) / elapsed
	res.cpuLoad = (cpu1 - cpu0) / elapsed
	res.writes = requestCounts(after).sub(requestCounts(before))
	if err := m.check(); err != nil {
		return nil, err
	}
	b.progress("probe scale: %.0f probes/s of %.0f scheduled; manager CPU %.2f cores (idle %.3f), RSS %s (idle %s)",
		res.achieved, res.scheduled, res.cpuLoad, res.cpuIdle, mib(res.rssLoad), mib(res.rssIdle))
	m.stop()
	return res, h.clearNamespace(ctx, ns)
}

// webhookResult is the latency of DynamicIngress creates with and without
// the admission webhooks.
type webhookResult struct {
	n             int
	with, without []time.Duration
}

// webhookLatency creates cfg.webhookN DynamicIngresses one after the other
// with the webhook configurations installed and served by the manager, and
// as many with the configurations removed (the same control plane, the same
// manager, the same objects): the difference is what admission adds.
func (b *bench) webhookLatency(ctx context.Context) (*webhookResult, error) {
	h, n := b.h, b.cfg.webhookN
	res := &webhookResult{n: n}
	m, err := h.startManager(managerOptions{webhooks: true})
	if err != nil {
		return nil, err
	}
	defer m.stop()
	// The loop ends with the configurations removed, as the other
	// measures expect; after a failure too.
	defer func() {
		if !h.webhooksOff {
			_ = h.setWebhooks(context.Background(), false)
		}
	}()
	for _, on := range []bool{true, false} {
		if err := h.setWebhooks(ctx, on); err != nil {
			return nil, fmt.Errorf("%w (%v)", err, m.check())
		}
		ns := "webhook-off"
		if on {
			ns = "webhook-on"
		}
		if err := h.ensureNamespace(ctx, ns); err != nil {
			return nil, err
		}
		if err := h.c.Create(ctx, fixedState(ns, "flag", "503")); err != nil {
			return nil, err
		}
		// Warm up connections and caches: not measured.
		for i := range 10 {
			if err := h.c.Create(ctx, dynamicIngress(ns, fmt.Sprintf("warmup-%d", i), "flag")); err != nil {
				return nil, err
			}
		}
		var lat []time.Duration
		for i := range n {
			di := dynamicIngress(ns, objName(i), "flag")
			t0 := time.Now()
			if err := h.c.Create(ctx, di); err != nil {
				return nil, fmt.Errorf("create %d with webhooks=%v: %w", i, on, err)
			}
			lat = append(lat, time.Since(t0))
		}
		if on {
			res.with = lat
		} else {
			res.without = lat
		}
		b.progress("webhook: %d creates with webhooks=%v: p50 %s, p99 %s", n, on, round(percentile(lat, 0.5)), round(percentile(lat, 0.99)))
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	m.stop()
	for _, ns := range []string{"webhook-on", "webhook-off"} {
		if err := h.clearNamespace(ctx, ns); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// memoryResult is the manager's memory after sync, without and with many
// Ingresses it does not manage.
type memoryResult struct {
	unrelated int
	// Readings of the manager without [0] and with [1] the Ingresses.
	rss        [2]int64
	heap, live [2]float64
	// gcSeen: a garbage collection ran after the sync, before the readings.
	gcSeen    [2]bool
	createdIn time.Duration
}

// memory measures the manager after sync with 0 and then cfg.unrelated
// Ingresses that lack the managed-by label: RSS from /proc, heap_alloc
// (what was asked for; it moves with the GC cycle) and the live heap after
// the last GC (go_gc_heap_live_bytes, the steadier figure), medians of five
// readings.
func (b *bench) memory(ctx context.Context) (*memoryResult, error) {
	h := b.h
	res := &memoryResult{unrelated: b.cfg.unrelated}
	sample := func(phase int) error {
		m, err := h.startManager(managerOptions{metrics: true})
		if err != nil {
			return err
		}
		defer m.stop()
		// A DynamicIngress created after the start is Ready only once the
		// caches synced and the controllers run.
		if _, err := b.setupOperator(ctx, inNamespace(fmt.Sprintf("memory-%d", phase), 1)); err != nil {
			return err
		}
		synced := time.Now()
		time.Sleep(b.cfg.settle)
		if b.cfg.gcWait > 0 {
			// An idle Go program collects at the latest every two minutes:
			// wait for a collection after the sync, so that the live heap is
			// the heap the synced manager keeps, not a moment of its start.
			deadline := time.Now().Add(b.cfg.gcWait)
			for {
				mm, err := scrapeURL(ctx, m.metricsURL, []string{"go_memstats_last_gc_time_seconds"})
				if err != nil {
					return err
				}
				last := mm.sum("go_memstats_last_gc_time_seconds", nil)
				if last > float64(synced.UnixNano())/1e9 {
					res.gcSeen[phase] = true
					break
				}
				if time.Now().After(deadline) {
					break
				}
				time.Sleep(time.Second)
			}
		}
		var rss, heap, live []float64
		for range 5 {
			mm, err := scrapeURL(ctx, m.metricsURL, []string{"go_memstats_heap_alloc_bytes", "go_gc_heap_live_bytes"})
			if err != nil {
				return err
			}
			rss = append(rss, float64(rssBytes(m.Pid())))
			heap = append(heap, mm.sum("go_memstats_heap_alloc_bytes", nil))
			live = append(live, mm.sum("go_gc_heap_live_bytes", nil))
			time.Sleep(b.cfg.settle / 5)
		}
		res.rss[phase], res.heap[phase], res.live[phase] = int64(medianFloat(rss)), medianFloat(heap), medianFloat(live)
		return m.check()
	}
	if err := sample(0); err != nil {
		return nil, err
	}
	b.progress("memory: 0 unrelated Ingresses: RSS %s, heap_alloc %s, live heap %s (GC after sync: %v)", mib(res.rss[0]), mib(int64(res.heap[0])), mib(int64(res.live[0])), res.gcSeen[0])
	const ns = "unrelated"
	if err := h.ensureNamespace(ctx, ns); err != nil {
		return nil, err
	}
	t0 := time.Now()
	ings := h.cs.NetworkingV1().Ingresses(ns)
	if err := parallel(res.unrelated, 64, func(i int) error {
		ing := baselineIngress(ns, objName(i), false)
		ing.Labels = map[string]string{"app": "unrelated"}
		_, err := ings.Create(ctx, ing, metav1.CreateOptions{})
		return err
	}); err != nil {
		return nil, err
	}
	res.createdIn = time.Since(t0)
	b.progress("memory: created %d unrelated Ingresses in %s", res.unrelated, round(res.createdIn))
	if err := sample(1); err != nil {
		return nil, err
	}
	b.progress("memory: %d unrelated Ingresses: RSS %s, heap_alloc %s, live heap %s (GC after sync: %v)", res.unrelated, mib(res.rss[1]), mib(int64(res.heap[1])), mib(int64(res.live[1])), res.gcSeen[1])
	return res, nil
}

func medianFloat(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

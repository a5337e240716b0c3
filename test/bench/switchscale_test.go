package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
)

// The switch scale measure (BENCH_ONLY=scale): many DynamicIngresses and
// their Ingresses following a hundred states, as one install carries them.
const (
	// scaleFlipNS holds the state that the scale flip edits and its
	// cfg.scaleFlipN DynamicIngresses; scaleNS the rest, following the
	// other states.
	scaleFlipNS = "scale-flip"
	scaleNS     = "scale"
	// scaleFloorNS holds the owned floor's Ingresses of the scale flip.
	scaleFloorNS = "scale-floor-owned"
	// restartBound is what the restart must stay within (docs/benchmarks.md).
	restartBound = 60 * time.Second
	// restWorkingSetBar and restLiveHeapBar are the bars of memory at rest
	// a switch, at 10 000 switches (docs/benchmarks.md, "Memory at rest").
	restWorkingSetBar = 12 << 10
	restLiveHeapBar   = 6 << 10
)

// scaleResult is the switch scale measure.
type scaleResult struct {
	switches, states, flipN int
	// created: every create answered; converged: every Ingress exists and
	// every DynamicIngress is Ready, from the first create.
	created, converged time.Duration
	// Memory of the manager that converged from empty: at rest afterwards,
	// and at its peak (VmHWM; the largest heap_alloc sampled every
	// memorySampleEvery).
	rest, peak memReading
	// The restart: from starting the new manager until it had reconciled
	// every DynamicIngress and state and its queues were empty (caughtUp);
	// the write requests kube-apiserver counted from the start until no
	// request for cfg.quiet after that; whether every DynamicIngress was
	// Ready (read from the API server) at the end; the manager's memory.
	caughtUp               time.Duration
	restartWrites          requests
	readyAfterRestart      int
	restartRest, restartPk memReading
	// flips: the flip of the flipN switches of one state, with 10 000
	// switches in the cache, against the owned floor.
	flips *flipSuiteResult
}

// scaleStateName names the states of scaleNS.
func scaleStateName(i int) string { return fmt.Sprintf("state-%03d", i) }

// switchScale creates cfg.scaleSwitches DynamicIngresses following
// cfg.scaleStates states (cfg.scaleFlipN of them on one state in a
// namespace of their own, the rest spread over the others) and times their
// convergence from empty; restarts the manager and counts its writes while
// it catches up; then flips the one state's switches against the owned
// floor, with every switch in the manager's cache.
func (b *bench) switchScale(ctx context.Context) (*scaleResult, error) {
	h, cfg := b.h, b.cfg
	res := &scaleResult{switches: cfg.scaleSwitches, states: cfg.scaleStates, flipN: cfg.scaleFlipN}
	rest := res.switches - res.flipN
	for _, ns := range []string{scaleFlipNS, scaleNS, scaleFloorNS} {
		if err := h.ensureNamespace(ctx, ns); err != nil {
			return nil, err
		}
	}
	m, err := h.startManager(managerOptions{metrics: true})
	if err != nil {
		return nil, err
	}
	defer func() { m.stop() }()

	// Converge from empty.
	var waits []*arrivals
	for _, w := range []struct {
		l        lister
		n        int
		switches bool
	}{
		{ingressLister{h, scaleFlipNS}, res.flipN, false}, {ingressLister{h, scaleNS}, rest, false},
		{dynamicIngresses(h, scaleFlipNS), res.flipN, true}, {dynamicIngresses(h, scaleNS), rest, true},
	} {
		match := ingressShape(false)
		if w.switches {
			match = diSettled(false)
		}
		a, err := watchArrivals(ctx, w.l, w.n, match)
		if err != nil {
			return nil, err
		}
		defer a.stop()
		waits = append(waits, a)
	}
	sampler := sampleMemory(ctx, m)
	t0 := time.Now()
	for _, a := range waits {
		a.startAt(t0)
	}
	b.progress("scale: creating %d states and %d DynamicIngresses (%d on the state the flip edits)", res.states, res.switches, res.flipN)
	if err := h.c.Create(ctx, fixedState(scaleFlipNS, "flip", "503")); err != nil {
		return nil, err
	}
	others := max(1, res.states-1)
	if err := parallel(others, 16, func(i int) error {
		return h.c.Create(ctx, fixedState(scaleNS, scaleStateName(i), "503"))
	}); err != nil {
		return nil, err
	}
	if err := parallel(res.switches, 32, func(i int) error {
		if i < res.flipN {
			return h.c.Create(ctx, dynamicIngress(scaleFlipNS, objName(i), "flip"))
		}
		return h.c.Create(ctx, dynamicIngress(scaleNS, objName(i), scaleStateName(i%others)))
	}); err != nil {
		return nil, fmt.Errorf("creating %d DynamicIngresses: %w", res.switches, err)
	}
	res.created = time.Since(t0)
	b.progress("scale: created in %s; waiting for every Ingress and status", round(res.created))
	for _, a := range waits {
		if err := a.wait(flipTimeout(res.switches, 100*time.Millisecond)); err != nil {
			return nil, fmt.Errorf("scale: converging: %w (%v)", err, m.check())
		}
	}
	res.converged = time.Since(t0)
	if _, err := b.waitQuiet(ctx, cfg.quiet, 2*time.Minute); err != nil {
		return nil, err
	}
	res.peak = sampler.end(m)
	time.Sleep(cfg.settle)
	if res.rest, err = b.restingMemory(ctx, m); err != nil {
		return nil, err
	}
	// The readings' own scrapes count towards the peak too.
	res.peak.rss = procStatusBytes(m.Pid(), "VmHWM:")
	b.heapProfile(m, "heap-converged")
	b.watchRest(ctx, m)
	b.progress("scale: converged after %s; RSS %s at rest (peak %s), heap %s (peak %s)",
		round(res.converged), mib(res.rest.rss), mib(res.peak.rss), mib(int64(res.rest.heap)), mib(int64(res.peak.heap)))

	// Restart: the new manager must write nothing while it catches up.
	m.stop()
	if _, err := b.waitQuiet(ctx, cfg.quiet, 20*time.Second); err != nil {
		return nil, err
	}
	before, err := h.apiserverMetrics(ctx)
	if err != nil {
		return nil, err
	}
	t0 = time.Now()
	if m, err = h.startManager(managerOptions{metrics: true}); err != nil {
		return nil, err
	}
	sampler = sampleMemory(ctx, m)
	if res.caughtUp, err = b.waitCaughtUp(ctx, m, t0, res.switches, res.states); err != nil {
		return nil, err
	}
	after, err := b.waitQuiet(ctx, cfg.quiet, 30*time.Second)
	if err != nil {
		return nil, err
	}
	res.restartWrites = requestCounts(after).sub(requestCounts(before))
	res.restartPk = sampler.end(m)
	if res.readyAfterRestart, err = b.countSettled(ctx, false); err != nil {
		return nil, err
	}
	time.Sleep(cfg.settle)
	if res.restartRest, err = b.restingMemory(ctx, m); err != nil {
		return nil, err
	}
	res.restartPk.rss = procStatusBytes(m.Pid(), "VmHWM:")
	b.heapProfile(m, "heap-restarted")
	b.progress("scale: restarted manager caught up after %s with %g writes (%s); %d of %d Ready; RSS %s at rest (peak %s)",
		round(res.caughtUp), res.restartWrites.writes(""), res.restartWrites.writeSummary(), res.readyAfterRestart, res.switches,
		mib(res.restartRest.rss), mib(res.restartPk.rss))

	// The flip of one state's switches among all of them.
	if res.flips, err = b.scaleFlips(ctx, m); err != nil {
		return nil, err
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	m.stop()
	for _, ns := range []string{scaleFlipNS, scaleNS, scaleFloorNS} {
		if err := h.clearNamespace(ctx, ns); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// waitCaughtUp waits until the manager has reconciled at least every
// DynamicIngress and every state since its start and its two work queues
// have been empty, with no reconcile running, at two readings in a row.
func (b *bench) waitCaughtUp(ctx context.Context, m *managerProc, t0 time.Time, switches, states int) (time.Duration, error) {
	deadline := t0.Add(5 * time.Minute)
	idle := 0
	for {
		mm, err := scrapeURL(ctx, m.metricsURL, []string{"controller_runtime_reconcile_total", "workqueue_depth", "controller_runtime_active_workers"})
		if err == nil {
			di := map[string]string{"controller": "dynamicingress"}
			st := map[string]string{"controller": "dynamicingressstate"}
			done := mm.sum("controller_runtime_reconcile_total", di) >= float64(switches) &&
				mm.sum("controller_runtime_reconcile_total", st) >= float64(states) &&
				mm.sum("workqueue_depth", di)+mm.sum("workqueue_depth", st) == 0 &&
				mm.sum("controller_runtime_active_workers", di)+mm.sum("controller_runtime_active_workers", st) == 0
			if done {
				if idle++; idle == 2 {
					return time.Since(t0), nil
				}
			} else {
				idle = 0
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("scale: the restarted manager did not catch up within %s (%v)", deadline.Sub(t0), m.check())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// countSettled counts the DynamicIngresses of the scale namespaces whose
// status shows the mode (active or not) and Ready, as the API server has
// them.
func (b *bench) countSettled(ctx context.Context, active bool) (int, error) {
	n := 0
	for _, ns := range []string{scaleFlipNS, scaleNS} {
		list := &v1beta1.DynamicIngressList{}
		if err := b.h.c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return 0, err
		}
		for i := range list.Items {
			di := &list.Items[i]
			if _, ok := diSettled(active)(di); ok {
				n++
			}
		}
	}
	return n, nil
}

// scaleFlips flips the scale-flip state cfg.scaleFlipReps times each way,
// interleaved with the owned floor writing as many Ingresses.
func (b *bench) scaleFlips(ctx context.Context, m *managerProc) (*flipSuiteResult, error) {
	floor := inNamespace(scaleFloorNS, b.cfg.scaleFlipN)
	own, err := b.setupOwnedFloor(ctx, floor)
	if err != nil {
		return nil, err
	}
	return b.againstOwnedFloor(ctx, fmt.Sprintf("scale flip (of %d switches)", b.cfg.scaleSwitches), b.cfg.scaleFlipReps,
		inNamespace(scaleFlipNS, b.cfg.scaleFlipN), floor, own, m)
}

// chartMemoryLimit is the manager's memory limit in the chart's values
// (the bundle's is the same: test/chart checks it), which the scale
// measure's peak is read against; 0 when it cannot be read.
func chartMemoryLimit() int64 {
	raw, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "charts", "dynamic-ingress-operator", "values.yaml"))
	if err != nil {
		return 0
	}
	var values struct {
		Resources struct {
			Limits map[string]string `json:"limits"`
		} `json:"resources"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		return 0
	}
	q, err := resource.ParseQuantity(values.Resources.Limits["memory"])
	if err != nil {
		return 0
	}
	return q.Value()
}

func (r *scaleResult) markdown(cfg config) string {
	var sb strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	w("#### Scale: %d switches following %d states\n\n", r.switches, r.states)
	w("%d DynamicIngresses created by 32 client workers from empty (%d on one state in a namespace of their own, the rest spread over %d states), each state fixed; ",
		r.switches, r.flipN, max(1, r.states-1))
	w("then the manager restarted; then the flip of the one state's %d switches, with every switch in the manager's cache, against the owned floor writing as many Ingresses. ", r.flipN)
	w("The manager runs with its metrics on. Peak RSS is VmHWM from /proc; peak heap the largest `go_memstats_heap_alloc_bytes` sampled every %s; ", memorySampleEvery)
	w("at rest: medians of five readings after the writes stopped. \"Caught up\": from starting the new manager until it had reconciled every DynamicIngress and state and its queues were empty; ")
	w("the restart's writes are kube-apiserver's count from the start until no write for %s after that.\n\n", cfg.quiet)
	w("At rest means after the manager's lower GC target at rest took effect (`dynamicingress_manager_memory_at_rest`, \"at rest after\": from the end of the writes); the working set is the anonymous pages and the binary's pages used over %s with one full scrape of the manager's metrics in its middle, as a Prometheus scraping every %s makes (smaps' Referenced after clear_refs), and then over the readings' %s, a scrape every %s. ", 5*cfg.settle, 5*cfg.settle, 5*cfg.settle, cfg.settle)
	w("\n\n")
	t := &table{header: []string{"phase", "time", "writes", "at rest after", "working set at rest", fmt.Sprintf("working set, a scrape every %s", cfg.settle), "RSS at rest", "heap_alloc at rest", "live heap at rest", "peak RSS", "peak heap_alloc (sampled)"}}
	t.add(fmt.Sprintf("converge from empty (creates answered after %s)", round(r.created)), round(r.converged), "–", restAfter(r.rest.atRest),
		mib(r.rest.workingSet), mib(r.rest.workingSetScraped), mib(r.rest.rss), mib(int64(r.rest.heap)), mib(int64(r.rest.live)), mib(r.peak.rss), mib(int64(r.peak.heap)))
	t.add(fmt.Sprintf("restart until caught up (%d of %d Ready after it)", r.readyAfterRestart, r.switches), round(r.caughtUp),
		fmt.Sprintf("%g (%s)", r.restartWrites.writes(""), r.restartWrites.writeSummary()), restAfter(r.restartRest.atRest),
		mib(r.restartRest.workingSet), mib(r.restartRest.workingSetScraped), mib(r.restartRest.rss), mib(int64(r.restartRest.heap)), mib(int64(r.restartRest.live)), mib(r.restartPk.rss), mib(int64(r.restartPk.heap)))
	w("%s\n", t)
	w("%s", r.flips.ownedFloorTable(cfg.ownedFloorWorkers))
	return sb.String()
}

// restAfter says when the manager was at rest after the writes ended.
func restAfter(d time.Duration) string {
	if d == 0 {
		return "not waited for"
	}
	return round(d)
}

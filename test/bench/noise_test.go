package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/match"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// The tenant noise measure (BENCH_ONLY=noise): many states of other
// tenants probing large answers through the most expensive bodyExpression
// the webhook admits, and what that does to the manager's memory and to a
// flip of other switches. The bar it is read against: with 100 such states
// probing 1 MiB answers every second, the manager's peak RSS stays under
// 80 % of the install's memory limit, and a flip of 500 other switches
// stays within 1.5× of the same flip without them (docs/benchmarks.md).
const (
	// noiseNS holds the noisy states; noiseFlipNS the state the flip edits
	// and its switches.
	noiseNS     = "noise-tenants"
	noiseFlipNS = "noise-flip"
	// noiseWho names the operator's flips while the noise runs.
	noiseWho = "operator, with the tenant noise"
	// noisePace is how long the manager pauses a noisy state after it read
	// a 1 MiB answer through its expression (probe.ExpressionBytesPerSecond),
	// before the random part of up to half as much again: the states are
	// probed about every 16-24s, not every second.
	noisePace = time.Duration(probe.MaxExpressionInput) * time.Second / probe.ExpressionBytesPerSecond
	// noiseWarm is how long the noise runs in make bench, once every noisy
	// state has probed, before the first flip: past one paced cycle of
	// every state, so that the flips meet the noise as it runs for good
	// (spread over the cycle), not the quiet after every state's first
	// probe. The small run waits two probe intervals (config.noiseWarm).
	noiseWarm = noisePace*3/2 + 2*probeInterval
	// noiseTimeout is the noisy states' probe timeout.
	noiseTimeout = time.Second
	// noiseRSSBar is the fraction of the memory limit the peak must stay
	// under (read, not asserted: no figure is a pass mark).
	noiseRSSBar = 0.8
)

// noiseExpression is every noisy state's bodyExpression: three levels of
// map around response.json. Over noiseBody it is the most expensive of
// noiseCandidates per probe in CPU, and within a MiB of the most in
// allocation: response.json of as many empty objects as it decodes is
// adapted object by object as the result is written, and the nest writes
// it again and again until the result is too large.
var noiseExpression = builders.NestedMaps(3, "response.json")

// noiseBodyDesc says what noiseBody is, for the report.
const noiseBodyDesc = "a JSON array of as many empty objects as response.json decodes, padded with spaces to 1 MiB"

// noiseBody is the noise server's answer: probe.MaxExpressionInput bytes
// (1 MiB, the longest body a body expression reads) holding as many empty
// JSON objects as response.json decodes (match.MaxJSONValues counts the
// array, every object and every comma), then spaces. Empty objects are the
// most values per byte, and each costs the most to adapt and write out.
func noiseBody() []byte {
	objects := (match.MaxJSONValues - 1) / 2
	b := make([]byte, 0, probe.MaxExpressionInput)
	b = append(b, '[')
	for i := range objects {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{', '}')
	}
	for len(b) < probe.MaxExpressionInput-1 {
		b = append(b, ' ')
	}
	return append(b, ']')
}

// noiseCandidate is a bodyExpression and a 1 MiB answer it may be fed.
type noiseCandidate struct {
	expr, bodyDesc string
	body           func() []byte
}

// oneString is a JSON object holding one string, 1 MiB in all.
func oneString() []byte {
	return []byte(`{"a":"` + strings.Repeat("x", probe.MaxExpressionInput-8) + `"}`)
}

// noiseCandidates are the expensive expressions the webhook admits, each on
// the 1 MiB answer that makes it most expensive; the first is the one the
// noisy states run.
var noiseCandidates = []noiseCandidate{
	{noiseExpression, noiseBodyDesc, noiseBody},
	{"response.json", noiseBodyDesc, noiseBody},
	{builders.NestedMaps(3, "response.json"), "one 1 MiB JSON string `{\"a\":\"xx…\"}`", oneString},
	{"response.json", "one 1 MiB JSON string `{\"a\":\"xx…\"}`", oneString},
	{builders.NestedMaps(5, "response.body"), "1 MiB of text", func() []byte { return []byte(strings.Repeat("x", probe.MaxExpressionInput)) }},
}

// evalCost is what one evaluation of a candidate costs the process that
// runs it, measured in the bench's own process (the working tree's
// internal/match).
type evalCost struct {
	expr, bodyDesc string
	allocated      float64 // bytes per evaluation
	took           time.Duration
	outcome        string
}

// noiseEvaluations is how many times each candidate is evaluated for its
// cost.
const noiseEvaluations = 3

// measureCandidates evaluates each candidate noiseEvaluations times, one
// after the other, before anything else of the measure runs.
func measureCandidates() []evalCost {
	var out []evalCost
	for _, c := range noiseCandidates {
		resp := match.Response{StatusCode: "200", Body: string(c.body())}
		// The first evaluation compiles the expression.
		_, _ = match.RecordedBody(c.expr, resp)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		t0 := time.Now()
		var got string
		var err error
		for range noiseEvaluations {
			got, err = match.RecordedBody(c.expr, resp)
		}
		took := time.Since(t0) / noiseEvaluations
		runtime.ReadMemStats(&after)
		outcome := fmt.Sprintf("recorded (%s of result, cut to --probe-max-body-bytes)", mib(int64(len(got))))
		if err != nil {
			outcome = strings.TrimPrefix(err.Error(), "bodyExpression failed: ")
		}
		out = append(out, evalCost{expr: c.expr, bodyDesc: c.bodyDesc, took: took, outcome: outcome,
			allocated: float64(after.TotalAlloc-before.TotalAlloc) / noiseEvaluations})
	}
	return out
}

// startNoiseServer answers every request with body, on 127.0.0.1 only.
func startNoiseServer(body []byte) (*endpoint, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	e := &endpoint{mode: "1 MiB answer"}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		e.count.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}))
	// httptest listens on loopback already; this makes it 127.0.0.1 for
	// certain, never [::1] or another address.
	_ = srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	e.URL, e.close = srv.URL, srv.Close
	return e, nil
}

// stateProbed matches a probed state whose status shows a probe's outcome,
// success or failure.
func stateProbed(o k8sruntime.Object) (string, bool) {
	s, ok := o.(*v1beta1.DynamicIngressState)
	if !ok {
		return "", false
	}
	c := meta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionReady)
	return s.Name, c != nil && (c.Reason == v1beta1.ReasonProbeSucceeded || c.Reason == v1beta1.ReasonProbeFailed)
}

// resetPeakRSS resets the process's VmHWM to its current RSS (Linux's
// clear_refs), so that a phase's peak is its own.
func resetPeakRSS(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// noisePhase is what one phase of the measure saw: the manager's peak RSS
// and its CPU, and for the noisy phase the noise itself.
type noisePhase struct {
	peakRSS int64
	// cores: the manager's CPU seconds per second over the phase, flips
	// included.
	cores   float64
	elapsed time.Duration
	// The noisy phase only: the time until every noisy state showed a
	// probe's outcome; the probes the server answered per second and the
	// API server's writes per second over config.noiseWarm, before the flips; the
	// states' Ready conditions at the end.
	probedAfter      time.Duration
	answered, writes float64
	// reached: the probes that reached the noise server from the states'
	// creation to the flips.
	reached      int64
	writeSummary string
	conditions   map[string]int
}

// noiseResult is the tenant noise measure.
type noiseResult struct {
	states, flipN, reps int
	// warm: how long the noise ran before the flips (config.noiseWarm).
	warm       time.Duration
	candidates []evalCost
	// flips: "operator" without the noise, noiseWho with it.
	flips *flipSuiteResult
	// quiet and noisy: the phases of every round; peak is the largest.
	quiet, noisy []noisePhase
	limit        int64
}

func (r *noiseResult) peak(phases []noisePhase) int64 {
	var p int64
	for _, ph := range phases {
		p = max(p, ph.peakRSS)
	}
	return p
}

// tenantNoise sets up cfg.noiseFlipN switches following one fixed state,
// then runs cfg.noiseFlipReps rounds, each of a quiet phase (the flip each
// way) and a noisy phase (cfg.noiseStates states probing the noise server
// every second through noiseExpression, then the same flips), in an order
// that rotates from round to round, with one manager throughout.
func (b *bench) tenantNoise(ctx context.Context) (*noiseResult, error) {
	h, cfg := b.h, b.cfg
	res := &noiseResult{states: cfg.noiseStates, flipN: cfg.noiseFlipN, reps: cfg.noiseFlipReps, warm: cfg.noiseWarm,
		flips: &flipSuiteResult{n: cfg.noiseFlipN}, limit: chartMemoryLimit()}
	b.progress("noise: evaluating %d candidate bodyExpressions %d times each in the bench's process", len(noiseCandidates), noiseEvaluations)
	res.candidates = measureCandidates()
	for _, c := range res.candidates {
		b.progress("noise: %s over %s: %s allocated, %s per evaluation: %s", c.expr, c.bodyDesc, mib(int64(c.allocated)), round(c.took), c.outcome)
	}
	srv, err := startNoiseServer(noiseBody())
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	m, err := h.startManager(managerOptions{probes: true})
	if err != nil {
		return nil, err
	}
	defer func() { m.stop() }()
	b.progress("noise: creating the state and %d DynamicIngresses the flip edits", res.flipN)
	if _, err := b.setupOperator(ctx, inNamespace(noiseFlipNS, res.flipN)); err != nil {
		return nil, err
	}
	if err := h.ensureNamespace(ctx, noiseNS); err != nil {
		return nil, err
	}
	flips := func(rep int, who string) error {
		for _, active := range []bool{true, false} {
			run, err := b.operatorFlip(ctx, inNamespace(noiseFlipNS, res.flipN), active, m)
			if err != nil {
				return err
			}
			run.who = who
			res.flips.add(run)
			b.progress("noise flip N=%d round %d %s, %s: %s (p50 %s), statuses %s; CPU s until then %s",
				res.flipN, rep+1, direction(active), who, round(run.total), round(run.p50), round(run.statusDone), run.cpuArrived)
		}
		return nil
	}
	for rep := range res.reps {
		quiet := func() error {
			ph, err := b.noisePhaseRun(m, func() error { return flips(rep, "operator") })
			if err != nil {
				return err
			}
			res.quiet = append(res.quiet, ph)
			b.progress("noise round %d, without the noise: peak RSS %s, manager %.2f cores", rep+1, mib(ph.peakRSS), ph.cores)
			return nil
		}
		noisy := func() error {
			var on noisePhase
			ph, err := b.noisePhaseRun(m, func() error {
				var err error
				if on, err = b.noiseOn(ctx, m, srv); err != nil {
					return err
				}
				return flips(rep, noiseWho)
			})
			if err != nil {
				return err
			}
			ph.probedAfter, ph.answered, ph.reached, ph.writes, ph.writeSummary = on.probedAfter, on.answered, on.reached, on.writes, on.writeSummary
			if ph.conditions, err = b.noiseConditions(ctx); err != nil {
				return err
			}
			res.noisy = append(res.noisy, ph)
			b.progress("noise round %d, with the noise: peak RSS %s of the limit %s, manager %.2f cores, %.0f answers/s, %.1f writes/s; states: %s",
				rep+1, mib(ph.peakRSS), mib(res.limit), ph.cores, ph.answered, ph.writes, changesSummary(ph.conditions))
			return b.noiseOff(ctx, srv)
		}
		if err := b.runRound(ctx, rep, []func() error{quiet, noisy}); err != nil {
			return nil, err
		}
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	m.stop()
	for _, ns := range []string{noiseNS, noiseFlipNS} {
		if err := h.clearNamespace(ctx, ns); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// noisePhaseRun runs one phase from a fresh peak: the manager's VmHWM at
// the end and its CPU over the phase.
func (b *bench) noisePhaseRun(m *managerProc, run func() error) (noisePhase, error) {
	var ph noisePhase
	if err := resetPeakRSS(m.Pid()); err != nil {
		return ph, fmt.Errorf("resetting the manager's peak RSS: %w", err)
	}
	cpu0, t0 := cpuSeconds(m.Pid()), time.Now()
	if err := run(); err != nil {
		return ph, err
	}
	ph.elapsed = time.Since(t0)
	ph.cores = (cpuSeconds(m.Pid()) - cpu0) / ph.elapsed.Seconds()
	ph.peakRSS = procStatusBytes(m.Pid(), "VmHWM:")
	return ph, m.check()
}

// noiseStateName names the noisy states.
func noiseStateName(i int) string { return fmt.Sprintf("tenant-%03d", i) }

// noiseOn creates the noisy states, waits until each shows a probe's
// outcome, then counts the server's answers and the API server's writes
// over config.noiseWarm.
func (b *bench) noiseOn(ctx context.Context, m *managerProc, srv *endpoint) (noisePhase, error) {
	h, n := b.h, b.cfg.noiseStates
	var ph noisePhase
	w, err := watchArrivals(ctx, states(h, noiseNS), n, stateProbed)
	if err != nil {
		return ph, err
	}
	defer w.stop()
	created := srv.count.Load()
	t0 := time.Now()
	w.startAt(t0)
	if err := parallel(n, 16, func(i int) error {
		s := probedState(noiseNS, noiseStateName(i), fmt.Sprintf("%s/tenant/%d", srv.URL, i)).
			Timeout(noiseTimeout).BodyExpression(noiseExpression).Obj()
		return h.c.Create(ctx, s)
	}); err != nil {
		return ph, fmt.Errorf("creating %d noisy states: %w", n, err)
	}
	if err := w.wait(2 * time.Minute); err != nil {
		return ph, fmt.Errorf("noise: waiting for every noisy state to probe: %w (%v)", err, m.check())
	}
	ph.probedAfter = time.Since(t0)
	before, err := h.apiserverMetrics(ctx)
	if err != nil {
		return ph, err
	}
	a0, t1 := srv.count.Load(), time.Now()
	time.Sleep(b.cfg.noiseWarm)
	after, err := h.apiserverMetrics(ctx)
	if err != nil {
		return ph, err
	}
	secs := time.Since(t1).Seconds()
	ph.answered = float64(srv.count.Load()-a0) / secs
	ph.reached = srv.count.Load() - created
	writes := requestCounts(after).sub(requestCounts(before))
	ph.writes, ph.writeSummary = writes.writes("")/secs, writes.writeSummary()
	return ph, nil
}

// noiseConditions tallies the noisy states' Ready conditions by reason and
// message, each state's URL left out.
func (b *bench) noiseConditions(ctx context.Context) (map[string]int, error) {
	list := &v1beta1.DynamicIngressStateList{}
	if err := b.h.c.List(ctx, list, client.InNamespace(noiseNS)); err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, s := range list.Items {
		c := meta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionReady)
		if c == nil {
			out["no condition"]++
			continue
		}
		msg := c.Message
		if s.Spec.Probe != nil {
			msg = strings.ReplaceAll(msg, s.Spec.Probe.URL, "<url>")
		}
		out[c.Reason+" ("+msg+")"]++
	}
	return out, nil
}

// noiseOff deletes the noisy states and waits until no probe has reached
// the server for a probe timeout and an interval.
func (b *bench) noiseOff(ctx context.Context, srv *endpoint) error {
	if err := b.h.c.DeleteAllOf(ctx, &v1beta1.DynamicIngressState{}, client.InNamespace(noiseNS)); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	last, since := srv.count.Load(), time.Now()
	for {
		list := &v1beta1.DynamicIngressStateList{}
		if err := b.h.c.List(ctx, list, client.InNamespace(noiseNS)); err != nil {
			return err
		}
		if c := srv.count.Load(); c != last {
			last, since = c, time.Now()
		} else if len(list.Items) == 0 && time.Since(since) > noiseTimeout+probeInterval {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("noise: %d noisy states left, or probes still reaching the server, a minute after deleting them", len(list.Items))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkNoise asserts what the noise measure must have done, never how
// fast: every flip ran in both phases, the noise reached the server and
// every reading is there.
func checkNoise(t *testing.T, cfg config, res *noiseResult) {
	t.Helper()
	for _, who := range []string{"operator", noiseWho} {
		for _, active := range []bool{true, false} {
			if got := len(res.flips.of(who, &active)); got != cfg.noiseFlipReps {
				t.Errorf("noise: %d flips %s by %q, want %d", got, direction(active), who, cfg.noiseFlipReps)
			}
		}
	}
	if len(res.quiet) != cfg.noiseFlipReps || len(res.noisy) != cfg.noiseFlipReps {
		t.Errorf("noise: %d quiet and %d noisy phases, want %d of each", len(res.quiet), len(res.noisy), cfg.noiseFlipReps)
	}
	for _, ph := range res.noisy {
		if ph.reached == 0 {
			t.Errorf("noise: no probe reached the noise server")
		}
		// Past one paced cycle of every state (make bench), the noise
		// still runs.
		if cfg.noiseWarm > noisePace*3/2 && ph.answered == 0 {
			t.Errorf("noise: no probe reached the noise server in the %s before the flips", cfg.noiseWarm)
		}
		if ph.conditions["no condition"] != 0 {
			t.Errorf("noise: states without a Ready condition: %v", ph.conditions)
		}
	}
	if res.peak(res.quiet) == 0 || res.peak(res.noisy) == 0 || res.limit == 0 {
		t.Errorf("noise: a memory reading is missing: peak RSS %d / %d, limit %d", res.peak(res.quiet), res.peak(res.noisy), res.limit)
	}
	for _, c := range res.candidates {
		if c.allocated == 0 {
			t.Errorf("noise: no allocation measured for %s", c.expr)
		}
	}
}

// summaryRows adds the measure's figures beside their baselines.
func (r *noiseResult) summaryRows(sum *table) {
	for _, active := range []bool{true, false} {
		with, without := figures(r.flips.of(noiseWho, &active)), figures(r.flips.of("operator", &active))
		sum.add(fmt.Sprintf("tenant noise: flip N=%d %s with %d states probing 1 MiB answers every %s, every Ingress arrived (median of %d)",
			r.flipN, direction(active), r.states, probeInterval, with.flips),
			round(with.total), fmt.Sprintf("the same flip without the noise (median of %d)", without.flips), round(without.total), durRatio(with.total, without.total))
	}
	sum.add(fmt.Sprintf("tenant noise: manager peak RSS with %d noisy states (bar: under %.0f %% of the limit)", r.states, noiseRSSBar*100),
		mib(r.peak(r.noisy)), "the chart's memory limit", mib(r.limit), ratio(float64(r.peak(r.noisy)), float64(r.limit)))
}

// markdown is the measure's section of the report.
func (r *noiseResult) markdown() string {
	var sb strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	w("#### Tenant noise: %d states probing 1 MiB answers through the worst bodyExpression\n\n", r.states)
	w("%d DynamicIngressStates of another namespace probe a server of the bench (127.0.0.1) every %s (timeout %s) with `probe.bodyExpression: %s`; ",
		r.states, probeInterval, noiseTimeout, noiseExpression)
	w("every answer is %s (%d bytes, the longest a body expression reads). ", noiseBodyDesc, probe.MaxExpressionInput)
	w("It is the most expensive of the candidates below per probe in time, and within a MiB of the most in allocation: response.json is adapted value by value as the result is written out, ")
	w("empty objects are the most values a 1 MiB answer holds within the %d that response.json decodes, and the nest writes the array again until the result is too large. ", match.MaxJSONValues)
	w("The candidates' costs are measured in the bench's own process (%d evaluations each, one at a time). ", noiseEvaluations)
	w("The manager evaluates at most %d body expressions at once; a probe that waits for a slot past its timeout fails.\n\n", probe.MaxConcurrentEvaluations)
	ct := &table{header: []string{"bodyExpression", "answer", "allocated / evaluation", "time / evaluation", "outcome"}}
	for _, c := range r.candidates {
		ct.add("`"+c.expr+"`", c.bodyDesc, mib(int64(c.allocated)), round(c.took), c.outcome)
	}
	w("%s\n", ct)
	w("With one manager throughout, %d DynamicIngresses of a third namespace follow one fixed state; each of %d rounds has a phase without the noise and one with it, in an order that rotates from round to round. ",
		r.flipN, r.reps)
	w("In each phase the state is flipped each way as in the flip measure (from the edit until every Ingress shows the new shape). ")
	w("The noisy phase creates the states, waits until every one shows a probe's outcome in its Ready condition, lets the noise run %s more, then flips; afterwards the states are deleted and the next phase waits until no probe reaches the server. ", r.warm)
	w("Peak RSS is the manager's VmHWM over the phase (reset at its start through /proc/<pid>/clear_refs), against the chart's memory limit; the server answering the probes runs in the bench's process, on the same cores.\n\n")
	ft := &table{header: []string{"N", "direction", "writer", "flips", "all arrived", "range", "p50 arrival", "p99 arrival", "first", "returned / statuses", "÷ without the noise", "CPU s: manager / apiserver / etcd / bench"}}
	for _, active := range []bool{true, false} {
		without := figures(r.flips.of("operator", &active))
		for _, who := range []string{"operator", noiseWho} {
			f := figures(r.flips.of(who, &active))
			if f.flips == 0 {
				continue
			}
			ft.add(flipRow(r.flipN, active, who, f, durRatio(f.total, without.total))...)
		}
	}
	w("%s\n", ft)
	pt := &table{header: []string{"round", "phase", "took", "manager peak RSS", "÷ memory limit", "manager CPU (cores)", "every state probed after", "answers / s", "writes / s (by verb and resource)", "noisy states' Ready conditions at the end"}}
	for i := range r.reps {
		if i < len(r.quiet) {
			q := r.quiet[i]
			pt.add(fmt.Sprint(i+1), "without the noise", round(q.elapsed), mib(q.peakRSS), ratio(float64(q.peakRSS), float64(r.limit)), fmt.Sprintf("%.2f", q.cores), "–", "–", "–", "–")
		}
		if i < len(r.noisy) {
			n := r.noisy[i]
			pt.add(fmt.Sprint(i+1), "with the noise", round(n.elapsed), mib(n.peakRSS), ratio(float64(n.peakRSS), float64(r.limit)), fmt.Sprintf("%.2f", n.cores),
				round(n.probedAfter), fmt.Sprintf("%.1f (%d states at %s)", n.answered, r.states, probeInterval), fmt.Sprintf("%.1f (%s)", n.writes, n.writeSummary), noiseConditionSummary(n.conditions))
		}
	}
	w("%s", pt)
	w("\nAnswers and writes per second are counted over the %s before the flips; the flips' own CPU is in the flip table. ", r.warm)
	w("The manager paces a state whose expression reads a large answer to %s of answer per second on average (docs/behaviour.md, \"What a probe records\"): after a 1 MiB answer the state waits %s and up to half as much again, so %d states configured at %s reach the server about %.1f times a second, not %d.\n",
		"64 KiB", noisePace, r.states, probeInterval, float64(r.states)/(noisePace.Seconds()*1.25), r.states)
	return sb.String()
}

// noiseConditionSummary lists the conditions' counts, most frequent first.
func noiseConditionSummary(c map[string]int) string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return c[keys[i]] > c[keys[j]] || (c[keys[i]] == c[keys[j]] && keys[i] < keys[j]) })
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d× %s", c[k], k))
	}
	return strings.Join(parts, "; ")
}

// TestNoiseAnswer checks what the measure's description says of its
// expression and answer, in every `go test`: the webhook admits the
// expression, and the answer is exactly the longest body a body
// expression reads, with no more JSON values than response.json decodes.
func TestNoiseAnswer(t *testing.T) {
	for _, c := range noiseCandidates {
		if err := match.CompileBodyExpression(c.expr); err != nil {
			t.Errorf("the webhook refuses %q: %v", c.expr, err)
		}
		if got := len(c.body()); got != probe.MaxExpressionInput {
			t.Errorf("the answer for %q is %d bytes, want %d", c.expr, got, probe.MaxExpressionInput)
		}
	}
	body := string(noiseBody())
	if n := strings.Count(body, "{}"); n != (match.MaxJSONValues-1)/2 {
		t.Errorf("%d empty objects, want %d", n, (match.MaxJSONValues-1)/2)
	}
	got, err := match.RecordedBody("size(response.json)", match.Response{StatusCode: "200", Body: body})
	if want := fmt.Sprint((match.MaxJSONValues - 1) / 2); err != nil || got != want {
		t.Errorf("size(response.json) of the noise answer = %q, %v; want %s, no error", got, err, want)
	}
}

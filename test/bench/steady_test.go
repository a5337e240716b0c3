package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// steadyResult is the writes of one steady-state window.
type steadyResult struct {
	name   string
	states int
	window time.Duration
	// readyAfter: from the first create until every state and
	// DynamicIngress showed the expected status.
	readyAfter time.Duration
	writes     requests
	// probes reached the endpoints in the window: the baseline.
	probes float64
	// changes counts the status changes of states and DynamicIngresses in
	// the window by the failure mode of the state's endpoint.
	changes map[string]int
}

// stateReady matches a probed state with a response (ProbeSucceeded);
// stateFailed one whose Ready condition says ProbeFailed.
func stateReady(o runtime.Object) (string, bool) {
	s, ok := o.(*v1beta1.DynamicIngressState)
	if !ok {
		return "", false
	}
	c := meta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionReady)
	return s.Name, c != nil && c.Status == metav1.ConditionTrue && s.Status.StatusCode == "200"
}

// stateRecorded matches a probed state with a response whose recorded
// body is body: the bodyExpression's result, not the whole answer.
func stateRecorded(body string) func(runtime.Object) (string, bool) {
	return func(o runtime.Object) (string, bool) {
		name, ready := stateReady(o)
		return name, ready && o.(*v1beta1.DynamicIngressState).Status.Body == body
	}
}

func stateFailed(o runtime.Object) (string, bool) {
	s, ok := o.(*v1beta1.DynamicIngressState)
	if !ok {
		return "", false
	}
	c := meta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionReady)
	return s.Name, c != nil && c.Reason == v1beta1.ReasonProbeFailed
}

// steadyFailSettle is how long failing states run past ProbeFailed before
// the window: the default failure threshold (3) and one more interval.
const steadyFailSettle = 4 * probeInterval

// steadyCase is one steady-state window: probed states whose endpoints
// answer in the given modes (round robin), in a namespace of their own.
type steadyCase struct {
	name, ns string
	modes    []string
	failing  bool
	// bodyExpression, when set, is every state's probe.bodyExpression and
	// the states are ready once they record body.
	bodyExpression, body string
}

// steadyCases are the windows in the order they run. Timestamped answers
// without bodyExpression write at every probe: that case runs last, so its
// writes stop before any other window counts.
var steadyCases = []steadyCase{
	{name: "probes answer 200", ns: "steady-ok", modes: []string{modeOK}},
	{name: "probes fail", ns: "steady-fail", modes: []string{modeReset, modeHang, modeTLS}, failing: true},
	{name: "timestamped answers, with bodyExpression", ns: "steady-timestamped-expr", modes: []string{modeTimestamped},
		bodyExpression: timestampedBodyExpression, body: timestampedValue},
	{name: "timestamped answers, without bodyExpression", ns: "steady-timestamped", modes: []string{modeTimestamped}},
}

// steadySuite runs every steady-state window with one manager.
func (b *bench) steadySuite(ctx context.Context) ([]steadyResult, error) {
	m, err := b.h.startManager(managerOptions{probes: true})
	if err != nil {
		return nil, err
	}
	defer m.stop()
	var out []steadyResult
	for _, c := range steadyCases {
		r, err := b.steady(ctx, m, c)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// steady creates cfg.steadyStates probed states, each driving one
// DynamicIngress, with endpoints in the case's modes, waits until all show
// their status, then counts the writes of one window.
func (b *bench) steady(ctx context.Context, m *managerProc, c steadyCase) (steadyResult, error) {
	h, n := b.h, b.cfg.steadyStates
	failing, modes, ns := c.failing, c.modes, c.ns
	res := steadyResult{name: c.name, states: n, window: b.cfg.steadyWindow}
	if err := h.ensureNamespace(ctx, ns); err != nil {
		return res, err
	}
	endpoints := map[string]*endpoint{}
	for _, mode := range modes {
		e, err := startEndpoint(mode)
		if err != nil {
			return res, err
		}
		defer e.Close()
		endpoints[mode] = e
	}
	modeOf := map[string]string{}
	stateMatch, diActive := stateReady, true
	switch {
	case failing:
		stateMatch, diActive = stateFailed, false
	case c.bodyExpression != "":
		stateMatch = stateRecorded(c.body)
	}
	stW, err := watchArrivals(ctx, states(h, ns), n, stateMatch)
	if err != nil {
		return res, err
	}
	defer stW.stop()
	diW, err := watchArrivals(ctx, dynamicIngresses(h, ns), n, diSettled(diActive))
	if err != nil {
		return res, err
	}
	defer diW.stop()
	t0 := time.Now()
	stW.startAt(t0)
	diW.startAt(t0)
	b.progress("steady state (%s): creating %d probed states and %d DynamicIngresses", res.name, n, n)
	for i := range n {
		modeOf[objName(i)] = modes[i%len(modes)]
	}
	if err := parallel(n, 16, func(i int) error {
		name := objName(i)
		mode := modeOf[name]
		st := probedState(ns, name, endpoints[mode].URL+"/state/"+name)
		if c.bodyExpression != "" {
			st.BodyExpression(c.bodyExpression)
		}
		if err := h.c.Create(ctx, st.Obj()); err != nil {
			return err
		}
		return h.c.Create(ctx, dynamicIngress(ns, name, name))
	}); err != nil {
		return res, err
	}
	if err := stW.wait(2 * time.Minute); err != nil {
		return res, fmt.Errorf("steady state (%s), states: %w", res.name, err)
	}
	if err := diW.wait(2 * time.Minute); err != nil {
		return res, fmt.Errorf("steady state (%s), DynamicIngresses: %w", res.name, err)
	}
	res.readyAfter = time.Since(t0)
	// Let the last events go out and, for failing probes, the failure
	// threshold pass (3 failures by default), so that the window sees the
	// steady state only.
	if failing {
		time.Sleep(steadyFailSettle)
	} else {
		time.Sleep(probeInterval)
	}
	if err := m.check(); err != nil {
		return res, err
	}

	changes, err := countChanges(ctx, h, ns)
	if err != nil {
		return res, err
	}
	before, err := h.apiserverMetrics(ctx)
	if err != nil {
		return res, err
	}
	probes0 := int64(0)
	for _, e := range endpoints {
		probes0 += e.count.Load()
	}
	b.progress("steady state (%s): all ready after %s; counting writes for %s", res.name, round(res.readyAfter), res.window)
	time.Sleep(res.window)
	after, err := h.apiserverMetrics(ctx)
	if err != nil {
		return res, err
	}
	probes1 := int64(0)
	for _, e := range endpoints {
		probes1 += e.count.Load()
	}
	res.writes = requestCounts(after).sub(requestCounts(before))
	res.probes = float64(probes1 - probes0)
	res.changes = map[string]int{}
	for name, c := range changes() {
		res.changes[modeOf[name]] += c
	}
	b.progress("steady state (%s): %g writes (%s) for %g probes", res.name, res.writes.writes(""), res.writes.writeSummary(), res.probes)
	if err := m.check(); err != nil {
		return res, err
	}
	return res, h.clearNamespace(ctx, ns)
}

// countChanges counts the modifications of the states and DynamicIngresses
// of a namespace by name (a DynamicIngress has its state's name here) until
// the returned function is called.
func countChanges(ctx context.Context, h *harness, ns string) (func() map[string]int, error) {
	ctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	for _, l := range []lister{states(h, ns), dynamicIngresses(h, ns)} {
		rv, _, err := l.list(ctx)
		if err != nil {
			cancel()
			return nil, err
		}
		w, err := l.watch(ctx, rv)
		if err != nil {
			cancel()
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.Stop()
			for ev := range w.ResultChan() {
				if ev.Type != watch.Modified {
					continue
				}
				if o, err := meta.Accessor(ev.Object); err == nil {
					mu.Lock()
					counts[o.GetName()]++
					mu.Unlock()
				}
			}
		}()
	}
	return func() map[string]int {
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return counts
	}, nil
}

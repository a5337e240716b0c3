package bench

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// flipRun is one flip of N Ingresses by one writer.
type flipRun struct {
	who    string
	n      int
	active bool
	// start is when the state was edited (the operator's flips).
	start time.Time
	// total is the last arrival: every Ingress shows the new shape.
	total, first, p50, p99 time.Duration
	// writerDone: a baseline's writer returned (every request answered).
	writerDone time.Duration
	// Operator only: the state's status shows the new code; every
	// DynamicIngress's status shows the new mode (statusDone), the first
	// one does (statusFirst).
	stateStatus, statusDone, statusFirst time.Duration
	// reqs are the API requests of the flip, counted by kube-apiserver
	// from the edit until the writes stopped.
	reqs requests
	// cpu is the CPU time of each process from the edit (the first
	// request) until the last status (the operator) or the last Ingress
	// (a baseline); cpuArrived until the last Ingress, for both.
	cpu, cpuArrived cpuSnapshot
}

func direction(active bool) string {
	if active {
		return "to active"
	}
	return "to passive"
}

func stateCodeFor(active bool) string {
	if active {
		return "200"
	}
	return "503"
}

// summarize fills the percentiles of a flip from its arrival times.
func (r *flipRun) summarize(arr []time.Duration) {
	sort.Slice(arr, func(i, j int) bool { return arr[i] < arr[j] })
	r.first, r.total = arr[0], arr[len(arr)-1]
	r.p50, r.p99 = percentile(arr, 0.50), percentile(arr, 0.99)
}

// arrivals is a flip's arrivals as its progress lines give them: the
// first, the median and the 99th percentile.
func (r *flipRun) arrivals() string {
	return fmt.Sprintf("first %s, p50 %s, p99 %s", round(r.first), round(r.p50), round(r.p99))
}

// flipTimeout bounds one flip generously: a timeout is a failure of the
// harness or the operator, never a measurement.
func flipTimeout(n int, perObject time.Duration) time.Duration {
	return 2*time.Minute + time.Duration(n)*perObject
}

// flipStateName names the state an operator flip edits.
const flipStateName = "flip"

// calmStateName names the second state of anyOf switches: it answers 503
// and never matches the 200 its entry expects.
const calmStateName = "calm"

// followLabel is the label of the namespaces whose switches follow the
// cluster state of a flip: its grant admits them by it.
const followLabel = "bench.dynamicingress.io/follows"

// switches are n objects named objName(i) spread over namespaces, object i
// in namespaces[i%len(namespaces)]: the DynamicIngresses of an operator
// flip and their Ingresses, or the Ingresses a baseline writes. The
// DynamicIngresses follow one fixed state named flipStateName: a
// DynamicIngressState of the one namespace, or with cluster a
// ClusterDynamicIngressState whose grant admits the namespaces by
// followLabel. With anyOf they follow `spec.anyOf` of two entries instead:
// the fixed state, and calmStateName of the one namespace. With service
// the state follows the Service serviceName of the one namespace instead
// (spec.service, both delays serviceDelay), and the switches expect 503:
// they are active while the Service has no ready endpoint.
type switches struct {
	namespaces []string
	n          int
	cluster    bool
	anyOf      bool
	service    bool
}

// inNamespace is n switches in one namespace, following its state.
func inNamespace(ns string, n int) switches {
	return switches{namespaces: []string{ns}, n: n}
}

// ns is the namespace of object i.
func (s switches) ns(i int) string { return s.namespaces[i%len(s.namespaces)] }

// in is how many of the objects namespace k holds.
func (s switches) in(k int) int {
	n := s.n / len(s.namespaces)
	if k < s.n%len(s.namespaces) {
		n++
	}
	return n
}

// String names the switches in progress lines: "N=2000" or "N=2000 in 20
// namespaces".
func (s switches) String() string {
	if len(s.namespaces) == 1 {
		return fmt.Sprintf("N=%d", s.n)
	}
	return fmt.Sprintf("N=%d in %d namespaces", s.n, len(s.namespaces))
}

// state is the state the switches follow, answering code (empty for a
// patch, which reads its kind and name only).
func (s switches) state(code string) client.Object {
	switch {
	case s.cluster:
		return builders.FixedState("", flipStateName, code, "").Cluster().
			FollowersMatching(map[string]string{followLabel: flipStateName}).Obj()
	case s.service:
		return serviceFlipState(s.namespaces[0])
	}
	return fixedState(s.namespaces[0], flipStateName, code)
}

// stateLister lists and watches the state the switches follow.
func (s switches) stateLister(h *harness) lister {
	if s.cluster {
		return clusterStates(h)
	}
	return states(h, s.namespaces[0])
}

// dynamicIngress is the DynamicIngress i, following the state.
func (s switches) dynamicIngress(i int) *v1beta1.DynamicIngress {
	di := dynamicIngress(s.ns(i), objName(i), flipStateName)
	w := &builders.DynamicIngressWrapper{DynamicIngress: *di}
	code := di.Spec.Expected.StatusCode
	switch {
	case s.cluster:
		return w.ClusterState(flipStateName).Obj()
	case s.anyOf:
		return w.AnyOf(builders.Entry(flipStateName, flipStateName, code), builders.Entry(calmStateName, calmStateName, code)).Obj()
	case s.service:
		return w.ExpectCode("503").Obj()
	}
	return di
}

// ensureNamespaces creates the namespaces, labelled for the grant of a
// cluster state.
func (b *bench) ensureNamespaces(ctx context.Context, s switches) error {
	for _, ns := range s.namespaces {
		if err := b.h.ensureNamespace(ctx, ns); err != nil {
			return err
		}
		if !s.cluster {
			continue
		}
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, followLabel, flipStateName)
		if _, err := b.h.cs.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// ingresses and switchObjects list and watch, in one namespace, the
// Ingresses and the DynamicIngresses.
func (b *bench) ingresses(ns string) lister     { return ingressLister{b.h, ns} }
func (b *bench) switchObjects(ns string) lister { return dynamicIngresses(b.h, ns) }

// setupOperator creates the fixed state answering 503 (and for anyOf the
// calm state; for service switches the state following their Service,
// which the caller created with ready endpoints) and the DynamicIngresses
// (passive) of s, and waits for every Ingress and status.
func (b *bench) setupOperator(ctx context.Context, s switches) (time.Duration, error) {
	h := b.h
	if err := b.ensureNamespaces(ctx, s); err != nil {
		return 0, err
	}
	ingW, err := s.watchArrivals(ctx, b.ingresses, ingressShape(false))
	if err != nil {
		return 0, err
	}
	defer ingW.stop()
	diW, err := s.watchArrivals(ctx, b.switchObjects, diSettled(false))
	if err != nil {
		return 0, err
	}
	defer diW.stop()
	t0 := time.Now()
	ingW.startAt(t0)
	diW.startAt(t0)
	if err := h.c.Create(ctx, s.state("503")); err != nil {
		return 0, err
	}
	if s.anyOf {
		if err := h.c.Create(ctx, fixedState(s.namespaces[0], calmStateName, "503")); err != nil {
			return 0, err
		}
	}
	n := s.n
	if err := parallel(n, 32, func(i int) error {
		return h.c.Create(ctx, s.dynamicIngress(i))
	}); err != nil {
		return 0, fmt.Errorf("creating %d DynamicIngresses: %w", n, err)
	}
	timeout := flipTimeout(n, 100*time.Millisecond)
	if err := ingW.wait(timeout); err != nil {
		return 0, fmt.Errorf("waiting for the %d Ingresses: %w", n, err)
	}
	if err := diW.wait(timeout); err != nil {
		return 0, fmt.Errorf("waiting for the %d DynamicIngresses to be Ready: %w", n, err)
	}
	return time.Since(t0), nil
}

// operatorFlip patches the state of s, as `kubectl patch dis flip --type
// merge` does, and times the Ingresses, the statuses and the requests.
func (b *bench) operatorFlip(ctx context.Context, s switches, active bool, m *managerProc) (flipRun, error) {
	h, n := b.h, s.n
	run := flipRun{who: "operator", n: n, active: active}
	ingW, err := b.watchFlip(ctx, s, active)
	if err != nil {
		return run, err
	}
	defer ingW.stop()
	diW, err := s.watchArrivals(ctx, b.switchObjects, diSettled(active))
	if err != nil {
		return run, err
	}
	defer diW.stop()
	stW, err := watchArrivals(ctx, s.stateLister(h), 1, stateCode(flipStateName, stateCodeFor(active)))
	if err != nil {
		return run, err
	}
	defer stW.stop()
	// The write counts' scrape first: the collection is the last thing
	// before the clock (collectAPIServerGarbage).
	before, err := h.apiserverMetrics(ctx)
	if err != nil {
		return run, err
	}
	if err := b.collectAPIServerGarbage(ctx); err != nil {
		return run, err
	}
	cpu0 := h.cpu(m)

	stopTrace := func() string { return "" }
	if b.tracing {
		// Before the profiles: it waits for the trace to begin.
		stopTrace = b.traceManager(m, fmt.Sprintf("manager-%d-%s", n, direction(active)))
		defer stopTrace()
	}
	stopProfile := b.profileAPIServer(ctx, fmt.Sprintf("operator-%d-%s", n, direction(active)))
	defer stopProfile()
	stopManagerProfile := b.profileManager(m, fmt.Sprintf("manager-%d-%s", n, direction(active)))
	defer stopManagerProfile()
	t0 := time.Now()
	run.start = t0
	ingW.startAt(t0)
	diW.startAt(t0)
	stW.startAt(t0)
	patch := fmt.Sprintf(`{"spec":{"fixedResponse":{"status":%q}}}`, stateCodeFor(active))
	if err := h.c.Patch(ctx, s.state(""), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return run, err
	}
	timeout := flipTimeout(n, 100*time.Millisecond)
	if err := ingW.wait(timeout); err != nil {
		return run, fmt.Errorf("operator flip %s of %d: %w (%v)", direction(active), n, err, m.check())
	}
	run.cpuArrived = h.cpu(m).sub(cpu0)
	if err := diW.wait(timeout); err != nil {
		return run, fmt.Errorf("operator flip %s of %d, statuses: %w (%v)", direction(active), n, err, m.check())
	}
	if err := stW.wait(timeout); err != nil {
		return run, err
	}
	run.cpu = h.cpu(m).sub(cpu0)
	run.summarize(ingW.durations())
	run.statusDone = maxDuration(diW.durations())
	run.statusFirst = minDuration(diW.durations())
	run.stateStatus = maxDuration(stW.durations())
	b.traced(stopTrace, t0, fmt.Sprintf("flip of %d %s: state status seen %s, Ingresses seen %s–%s, switch statuses seen %s–%s",
		n, direction(active), round(run.stateStatus), round(run.first), round(run.total), round(run.statusFirst), round(run.statusDone)))
	after, err := b.waitQuiet(ctx, b.cfg.quiet, 20*time.Second)
	if err != nil {
		return run, err
	}
	run.reqs = requestCounts(after).sub(requestCounts(before))
	return run, nil
}

// waitQuiet returns kube-apiserver's metrics once no write has reached it
// for quiet (or after longest): the requests a change caused are then
// counted.
func (b *bench) waitQuiet(ctx context.Context, quiet, longest time.Duration) (metrics, error) {
	deadline := time.Now().Add(longest)
	var last float64 = -1
	lastChange := time.Now()
	for {
		m, err := b.h.apiserverMetrics(ctx)
		if err != nil {
			return nil, err
		}
		w := requestCounts(m).writes("")
		if w != last {
			last, lastChange = w, time.Now()
		} else if time.Since(lastChange) >= quiet {
			return m, nil
		}
		if time.Now().After(deadline) {
			return m, nil
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func minDuration(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return slices.Min(ds)
}

func maxDuration(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

// flipSuite measures the flips of n Ingresses: the operator and every
// baseline, interleaved round by round so that a slow moment of the
// machine does not fall on one of them only.
func (b *bench) flipSuite(ctx context.Context, n int) (*flipSuiteResult, error) {
	h := b.h
	res := &flipSuiteResult{n: n}
	m, err := h.startManager(managerOptions{})
	if err != nil {
		return nil, err
	}
	defer func() { m.stop() }()
	opNS := fmt.Sprintf("op-%d", n)
	op := inNamespace(opNS, n)
	b.progress("flip N=%d: creating the state and %d DynamicIngresses", n, n)
	if res.setup, err = b.setupOperator(ctx, op); err != nil {
		return nil, err
	}
	b.progress("flip N=%d: all Ready after %s; creating the baselines' Ingresses", n, round(res.setup))
	floorNS := fmt.Sprintf("floor-%d", n)
	floor := inNamespace(floorNS, n)
	if err := b.setupFloor(ctx, floor); err != nil {
		return nil, err
	}
	ownedNS := fmt.Sprintf("floor-owned-%d", n)
	ownedFloor := inNamespace(ownedNS, n)
	own, err := b.setupOwnedFloor(ctx, ownedFloor)
	if err != nil {
		return nil, err
	}
	statusNS := fmt.Sprintf("floor-status-%d", n)
	statusFloor := inNamespace(statusNS, n)
	if err := b.setupStatusFloor(ctx, statusFloor); err != nil {
		return nil, err
	}
	kubectlDirs := map[string]string{}
	kubectlFlips := map[string]int{kubectlSSA: b.cfg.kubectlSSAFlips(n), kubectlCSA: b.cfg.kubectlCSAFlips(n)}
	for _, mode := range []string{kubectlSSA, kubectlCSA} {
		if kubectlFlips[mode] == 0 {
			continue
		}
		ns := fmt.Sprintf("%s-%d", mode, n)
		if kubectlDirs[mode], err = b.setupKubectl(ctx, mode, ns, n); err != nil {
			return nil, err
		}
	}
	if _, err := b.waitQuiet(ctx, 2*b.cfg.quiet, 60*time.Second); err != nil {
		return nil, err
	}
	manager429Before := m.countInLog(tooManyRequests...)
	kubectlDone := map[string]int{}
	kubectlFlip := func(mode string) error {
		active := kubectlDone[mode]%2 == 0
		kubectlDone[mode]++
		run, err := b.kubectlFlip(ctx, mode, fmt.Sprintf("%s-%d", mode, n), kubectlDirs[mode], n, active)
		if err != nil {
			return err
		}
		res.add(run)
		b.progress("flip N=%d %s: %s %s (kubectl returned after %s)", n, direction(active), mode, round(run.total), round(run.writerDone))
		return nil
	}
	for rep := range b.cfg.flipReps {
		// One round: the operator to active and back, each floor to
		// active and back, then kubectl's next flips (two per round). The
		// order rotates from round to round, and every step starts once
		// the API server has seen no write for a while, so that no writer
		// always follows the heaviest one (client-side kubectl).
		steps := []func() error{b.operatorStep(ctx, "flip", rep, op, m, res)}
		for _, w := range b.cfg.floorWorkers {
			steps = append(steps, b.floorStep(ctx, "flip", rep, floor, w, nil, res))
		}
		for _, w := range b.cfg.ownedFloorWorkers {
			steps = append(steps, b.floorStep(ctx, "flip", rep, ownedFloor, w, own, res))
		}
		if w := b.cfg.controllerFloorWorkers; w > 0 {
			steps = append(steps, b.controllerFloorStep(ctx, "flip", rep, ownedFloor, w, own, res))
		}
		steps = append(steps, b.completeFloorStep(ctx, rep, ownedFloor, own, statusFloor, res))
		for _, mode := range []string{kubectlSSA, kubectlCSA} {
			steps = append(steps, func() error {
				for range 2 {
					if kubectlDone[mode] < kubectlFlips[mode] && kubectlDone[mode] < 2*(rep+1) {
						if err := kubectlFlip(mode); err != nil {
							return err
						}
					}
				}
				return nil
			})
		}
		if err := b.runRound(ctx, rep, steps); err != nil {
			return nil, err
		}
	}
	for _, mode := range []string{kubectlSSA, kubectlCSA} {
		for kubectlDone[mode] < kubectlFlips[mode] {
			if err := kubectlFlip(mode); err != nil {
				return nil, err
			}
		}
	}
	res.managerLog429 = m.countInLog(tooManyRequests...) - manager429Before
	res.throttleLog = m.countInLog("client-side throttling")

	if n == b.cfg.breakdownN {
		m.stop()
		if res.breakdown, err = b.breakdown(ctx, opNS, n); err != nil {
			return nil, err
		}
	}
	m.stop()
	for _, ns := range []string{opNS, floorNS, ownedNS, statusNS, fmt.Sprintf("%s-%d", kubectlSSA, n), fmt.Sprintf("%s-%d", kubectlCSA, n)} {
		if err := h.clearNamespace(ctx, ns); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// operatorStep is the operator's step of round rep of a measure (what):
// the switches s flipped to active and back, the runs added to res.
func (b *bench) operatorStep(ctx context.Context, what string, rep int, s switches, m *managerProc, res *flipSuiteResult) func() error {
	return func() error {
		for k := range 2 * b.cfg.operatorFlipPairs {
			active := k%2 == 0
			b.tracing = what == "flip"
			run, err := b.operatorFlip(ctx, s, active, m)
			b.tracing = false
			if err != nil {
				return err
			}
			again := ""
			if k < 2 {
				res.add(run)
			} else {
				// BENCH_OPERATOR_FLIPS: the flips after the first pair
				// are reported here only.
				again = fmt.Sprintf(" (flip %d of the step, not counted)", k+1)
			}
			b.progress("%s %s round %d %s%s: operator %s (%s; CPU s until then %s), state status %s, statuses %s (first %s); writes: %s",
				what, s, rep+1, direction(active), again, round(run.total), run.arrivals(), run.cpuArrived,
				round(run.stateStatus), round(run.statusDone), round(run.statusFirst), run.reqs.writeSummary())
		}
		return nil
	}
}

// floorStep is a floor's step of round rep of a measure (what): the
// Ingresses of s written to active and back by workers goroutines, with
// the owners' metadata when own is set, the runs added to res.
func (b *bench) floorStep(ctx context.Context, what string, rep int, s switches, workers int, own owners, res *flipSuiteResult) func() error {
	return func() error {
		return b.flipPair(what, rep, s, res, func(active bool) (flipRun, error) {
			return b.floorFlip(ctx, s, active, workers, own)
		})
	}
}

// flipPair is a baseline's flips of a step of round rep of a measure
// (what): flip to active, then back, each run added to res and printed.
func (b *bench) flipPair(what string, rep int, s switches, res *flipSuiteResult, flip func(active bool) (flipRun, error)) error {
	for _, active := range []bool{true, false} {
		run, err := flip(active)
		if err != nil {
			return err
		}
		res.add(run)
		b.progress("%s %s round %d %s: %s %s (%s; CPU s %s)", what, s, rep+1, direction(active), run.who,
			round(run.total), run.arrivals(), run.cpuArrived)
	}
	return nil
}

// completeFloorStep is the complete floor's step of round rep: the
// Ingresses of s written to active and back with the owners' metadata,
// each time followed by the statuses of statuses, on completeFloorWorkers.
func (b *bench) completeFloorStep(ctx context.Context, rep int, s switches, own owners, statuses switches, res *flipSuiteResult) func() error {
	return func() error {
		for _, active := range []bool{true, false} {
			run, err := b.floorFlipThen(ctx, s, active, completeFloorWorkers, own, &statuses)
			if err != nil {
				return err
			}
			res.add(run)
			b.progress("flip %s round %d %s: %s Ingresses %s, statuses %s (CPU s %s)", s, rep+1, direction(active), run.who,
				round(run.total), round(run.statusDone), run.cpu)
		}
		return nil
	}
}

// completeFloorWorkers is the concurrency of the complete floor: the
// operator's reconcile workers.
const completeFloorWorkers = 32

// againstOwnedFloor flips the switches op reps times each way, interleaved
// round by round with the owned floor writing the Ingresses of floor at
// each of cfg.ownedFloorWorkers, in an order that rotates (runRound).
func (b *bench) againstOwnedFloor(ctx context.Context, what string, reps int, op, floor switches, own owners, m *managerProc) (*flipSuiteResult, error) {
	res := &flipSuiteResult{n: op.n}
	for rep := range reps {
		steps := []func() error{b.operatorStep(ctx, what, rep, op, m, res)}
		for _, w := range b.cfg.ownedFloorWorkers {
			steps = append(steps, b.floorStep(ctx, what, rep, floor, w, own, res))
		}
		if w := b.cfg.controllerFloorWorkers; w > 0 {
			steps = append(steps, b.controllerFloorStep(ctx, what, rep, floor, w, own, res))
		}
		if err := b.runRound(ctx, rep, steps); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// ownedFloorMeasure runs a measure of one kind of switch against the
// owned floor (the cluster and anyOf measures, named what): a manager of
// its own, the switches op set up, the owned floor's Ingresses floor, op
// flipped reps times each way against it (againstOwnedFloor); inspect,
// when set, reads the switches after the flips. Then it clears both. It
// returns the setup time and the flips.
func (b *bench) ownedFloorMeasure(ctx context.Context, what string, reps int, op, floor switches, inspect func() error) (time.Duration, *flipSuiteResult, error) {
	h := b.h
	m, err := h.startManager(managerOptions{})
	if err != nil {
		return 0, nil, err
	}
	defer func() { m.stop() }()
	b.progress("%s: creating the state and the DynamicIngresses, %s", what, op)
	setup, err := b.setupOperator(ctx, op)
	if err != nil {
		return 0, nil, err
	}
	b.progress("%s: all Ready after %s; creating the owned floor's Ingresses", what, round(setup))
	own, err := b.setupOwnedFloor(ctx, floor)
	if err != nil {
		return 0, nil, err
	}
	if _, err := b.waitQuiet(ctx, 2*b.cfg.quiet, 60*time.Second); err != nil {
		return 0, nil, err
	}
	flips, err := b.againstOwnedFloor(ctx, what+" flip", reps, op, floor, own, m)
	if err != nil {
		return 0, nil, err
	}
	if inspect != nil {
		if err := inspect(); err != nil {
			return 0, nil, err
		}
	}
	if err := m.check(); err != nil {
		return 0, nil, err
	}
	m.stop()
	// A cluster state lives in no namespace.
	if err := client.IgnoreNotFound(h.c.Delete(ctx, op.state(""))); err != nil {
		return 0, nil, err
	}
	for _, ns := range slices.Concat(op.namespaces, floor.namespaces) {
		if err := h.clearNamespace(ctx, ns); err != nil {
			return 0, nil, err
		}
	}
	return setup, flips, nil
}

// tooManyRequests are how a 429 reads in the manager's log.
var tooManyRequests = []string{"Too Many Requests", "TooManyRequests", "too many requests"}

// flipSuiteResult is every flip of one N.
type flipSuiteResult struct {
	n     int
	setup time.Duration
	runs  []flipRun
	// managerLog429 counts the manager's log lines about 429s during the
	// flips; throttleLog its client-side throttling messages.
	managerLog429, throttleLog int
	breakdown                  *breakdownResult
}

func (r *flipSuiteResult) add(run flipRun) { r.runs = append(r.runs, run) }

// of returns the runs of one writer in one direction ("" = both).
func (r *flipSuiteResult) of(who string, dir *bool) []flipRun {
	var out []flipRun
	for _, run := range r.runs {
		if run.who == who && (dir == nil || run.active == *dir) {
			out = append(out, run)
		}
	}
	return out
}

// median of a figure of runs.
func medianOf(runs []flipRun, f func(flipRun) time.Duration) time.Duration {
	ds := make([]time.Duration, 0, len(runs))
	for _, r := range runs {
		ds = append(ds, f(r))
	}
	return median(ds)
}

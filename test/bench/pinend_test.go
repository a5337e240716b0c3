package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// The pin end measure (BENCH_ONLY=pinend): switches of one namespace
// following one fixed state, each pinned with spec.override to the mode
// the state does not give, spec.overrideUntil one common time T a few
// whole seconds ahead. The manager wakes each switch at T (one timer per
// pin, docs/behaviour.md, "Pins that end"); the figure runs from T until
// the last Ingress is back in the state's mode, against the owned floor
// writing as many Ingresses (docs/benchmarks.md, "Pins that end at one
// time").
const (
	pinEndNS      = "pinend"
	pinEndFloorNS = "pinend-floor-owned"
	// T is pinEndLeadBase + pinEndLeadPer per switch after the pins'
	// first patch, rounded up to the second: time to pin every switch,
	// edit the state and let the API server fall quiet before it.
	pinEndLeadBase = 5 * time.Second
	pinEndLeadPer  = 30 * time.Millisecond
	// pinEndAhead is the least time before T by which the pins must be in
	// effect and the API server quiet: less, and the measure fails rather
	// than time work that began before T.
	pinEndAhead = time.Second
	// The bar: from T to the last Ingress at most pinEndBarFixed +
	// pinEndBarFactor × the owned floor, each way (read, not asserted).
	pinEndBarFixed  = time.Second
	pinEndBarFactor = 1.2
	pinEndReason    = "bench: pins that end at one time"
)

// pinEndSizes are the measure's switches and its rounds (each way, for the
// operator and each owned floor) by run (config.name).
var pinEndSizes = map[string]struct{ n, reps int }{
	"small": {n: 50, reps: 1},
	"full":  {n: 500, reps: 3},
}

// pinEndResult is the pin end measure.
type pinEndResult struct {
	// setup: from creating the state until every Ingress existed and
	// every DynamicIngress was Ready.
	setup time.Duration
	// lead: how far ahead of the pins' first patch T was set, at least.
	lead time.Duration
	// flips: the operator's expiries (who "operator", active the state's
	// mode, every figure from T: the Ingresses, and statusDone when every
	// status showed the state's mode) and the owned floor's flips.
	flips *flipSuiteResult
	// pinned, each way: from the pins' first patch until every status
	// showed its pin in effect; ahead: how long before T the API server
	// was quiet after the state's edit.
	pinned, ahead map[bool][]time.Duration
	// early, each way: how many statuses showed the state's mode before
	// the last Ingress did, at each expiry.
	early map[bool][]int
	// expiredShown: the fewest statuses, after an expiry, that showed the
	// pin Expired at T.
	expiredShown int
}

// pinEnd sets up the switches and the owned floor's Ingresses, and lets
// the pins end reps times each way, in rounds whose order rotates against
// the owned floor.
func (b *bench) pinEnd(ctx context.Context) (*pinEndResult, error) {
	h, cfg := b.h, b.cfg
	size, ok := pinEndSizes[cfg.name]
	if !ok {
		return nil, fmt.Errorf("pinend: no size for the %s run", cfg.name)
	}
	res := &pinEndResult{lead: pinEndLeadBase + time.Duration(size.n)*pinEndLeadPer, expiredShown: size.n,
		pinned: map[bool][]time.Duration{}, ahead: map[bool][]time.Duration{}, early: map[bool][]int{}}
	op := inNamespace(pinEndNS, size.n)
	floor := inNamespace(pinEndFloorNS, size.n)
	m, err := h.startManager(managerOptions{})
	if err != nil {
		return nil, err
	}
	defer func() { m.stop() }()
	b.progress("pinend: creating the state and %d DynamicIngresses", op.n)
	if res.setup, err = b.setupOperator(ctx, op); err != nil {
		return nil, err
	}
	b.progress("pinend: all Ready after %s; creating the owned floor's Ingresses", round(res.setup))
	own, err := b.setupOwnedFloor(ctx, floor)
	if err != nil {
		return nil, err
	}
	if _, err := b.waitQuiet(ctx, 2*cfg.quiet, 60*time.Second); err != nil {
		return nil, err
	}
	res.flips = &flipSuiteResult{n: op.n}
	for rep := range size.reps {
		steps := []func() error{b.pinEndStep(ctx, rep, op, m, res)}
		for _, w := range cfg.ownedFloorWorkers {
			steps = append(steps, b.floorStep(ctx, "pinend flip", rep, floor, w, own, res.flips))
		}
		if err := b.runRound(ctx, rep, steps); err != nil {
			return nil, err
		}
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	m.stop()
	for _, ns := range []string{pinEndNS, pinEndFloorNS} {
		if err := h.clearNamespace(ctx, ns); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// pinEndStep is the operator's step of round rep: pins to passive that
// end with the state answering for active, then pins to active that end
// with it answering for passive.
func (b *bench) pinEndStep(ctx context.Context, rep int, s switches, m *managerProc, res *pinEndResult) func() error {
	return func() error {
		for _, active := range []bool{true, false} {
			run, err := b.pinEndExpiry(ctx, s, active, m, res)
			if err != nil {
				return err
			}
			res.flips.add(run)
			pinned, ahead, early := res.pinned[active], res.ahead[active], res.early[active]
			b.progress("pinend %s round %d %s: every Ingress %s after overrideUntil (%s; CPU s until then %s), statuses %s (first %s, %d before the last Ingress); pins in effect after %s, quiet %s before overrideUntil; writes: %s",
				s, rep+1, pinEndDirection(active), round(run.total), run.arrivals(), run.cpuArrived,
				round(run.statusDone), round(run.statusFirst), early[len(early)-1], round(pinned[len(pinned)-1]), round(ahead[len(ahead)-1]), run.reqs.writeSummary())
		}
		return nil
	}
}

// pinEndExpiry pins every switch of s, which follows the state in the
// mode other than active, to that mode until T, then edits the state to
// answer for active: the pins hold the Ingresses. Once the API server is
// quiet it times, from T, the Ingresses taking the active shape (or the
// passive one), the statuses showing it and the requests, as operatorFlip
// does from a state's edit.
func (b *bench) pinEndExpiry(ctx context.Context, s switches, active bool, m *managerProc, res *pinEndResult) (flipRun, error) {
	h, n, ns := b.h, s.n, s.namespaces[0]
	run := flipRun{who: "operator", n: n, active: active}
	timeout := flipTimeout(n, 100*time.Millisecond)

	// T, to the second: the API stores overrideUntil so.
	start := time.Now()
	until := start.Add(res.lead + time.Second).Truncate(time.Second)
	inEffect, err := s.watchArrivals(ctx, b.switchObjects, pinHolds(!active, until))
	if err != nil {
		return run, err
	}
	defer inEffect.stop()
	inEffect.startAt(start)
	pin := pinPatch(!active, until)
	if err := parallel(n, 32, func(i int) error {
		return h.c.Patch(ctx, s.dynamicIngress(i), client.RawPatch(types.MergePatchType, pin))
	}); err != nil {
		return run, fmt.Errorf("pinning %d DynamicIngresses: %w", n, err)
	}
	if err := inEffect.wait(timeout); err != nil {
		return run, fmt.Errorf("pins to %s until %s: %w (%v)", modeOf(!active), until.Format(time.RFC3339), err, m.check())
	}
	res.pinned[active] = append(res.pinned[active], maxDuration(inEffect.durations()))

	stW, err := watchArrivals(ctx, s.stateLister(h), 1, stateCode(flipStateName, stateCodeFor(active)))
	if err != nil {
		return run, err
	}
	defer stW.stop()
	patch := fmt.Sprintf(`{"spec":{"fixedResponse":{"status":%q}}}`, stateCodeFor(active))
	if err := h.c.Patch(ctx, s.state(""), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return run, err
	}
	if err := stW.wait(timeout); err != nil {
		return run, err
	}
	ingW, err := s.watchArrivals(ctx, b.ingresses, ingressShape(active))
	if err != nil {
		return run, err
	}
	defer ingW.stop()
	diW, err := s.watchArrivals(ctx, b.switchObjects, diSettled(active))
	if err != nil {
		return run, err
	}
	defer diW.stop()
	// The write counts' scrape is the quiet one; the collection is the
	// last thing before T (collectAPIServerGarbage).
	before, err := b.waitQuiet(ctx, b.cfg.quiet, time.Until(until))
	if err != nil {
		return run, err
	}
	ahead := time.Until(until)
	res.ahead[active] = append(res.ahead[active], ahead)
	if ahead < pinEndAhead {
		return run, fmt.Errorf("pins to %s: the API server was quiet %s before overrideUntil, want at least %s: T is set too soon (pinEndLeadBase, pinEndLeadPer)",
			modeOf(!active), round(ahead), pinEndAhead)
	}
	if moved := ingW.before() + diW.before(); moved != 0 {
		return run, fmt.Errorf("pins to %s: %d Ingresses and statuses show %s mode before overrideUntil", modeOf(!active), moved, modeOf(active))
	}
	_, objs, err := b.ingresses(ns).list(ctx)
	if err != nil {
		return run, err
	}
	if held := countMatching(objs, ingressShape(!active)); held != n {
		return run, fmt.Errorf("pins to %s: %d of %d Ingresses in the pinned shape before overrideUntil", modeOf(!active), held, n)
	}
	if err := b.collectAPIServerGarbage(ctx); err != nil {
		return run, err
	}

	time.Sleep(time.Until(until))
	cpu0 := h.cpu(m)
	run.start = until
	ingW.startAt(until)
	diW.startAt(until)
	name := fmt.Sprintf("pinend-%d-%s", n, direction(active))
	defer b.profileAPIServer(ctx, "operator-"+name)()
	defer b.profileManager(m, "manager-"+name)()
	if err := ingW.wait(timeout); err != nil {
		return run, fmt.Errorf("pins to %s ending: %w (%v)", modeOf(!active), err, m.check())
	}
	run.cpuArrived = h.cpu(m).sub(cpu0)
	if err := diW.wait(timeout); err != nil {
		return run, fmt.Errorf("pins to %s ending, statuses: %w (%v)", modeOf(!active), err, m.check())
	}
	run.cpu = h.cpu(m).sub(cpu0)
	run.summarize(ingW.durations())
	run.statusDone = maxDuration(diW.durations())
	run.statusFirst = minDuration(diW.durations())
	early := 0
	for _, d := range diW.durations() {
		if d < run.total {
			early++
		}
	}
	res.early[active] = append(res.early[active], early)
	if run.first < 0 || run.statusFirst < 0 {
		return run, fmt.Errorf("pins to %s: an Ingress (%s) or a status (%s) showed %s mode before overrideUntil",
			modeOf(!active), round(-run.first), round(-run.statusFirst), modeOf(active))
	}
	after, err := b.waitQuiet(ctx, b.cfg.quiet, 20*time.Second)
	if err != nil {
		return run, err
	}
	run.reqs = requestCounts(after).sub(requestCounts(before))
	_, objs, err = b.switchObjects(ns).list(ctx)
	if err != nil {
		return run, err
	}
	res.expiredShown = min(res.expiredShown, countMatching(objs, pinExpired(until)))
	return run, nil
}

// pinPatch is the merge patch that pins a switch to a mode until a time,
// with a reason, as `kubectl dynamic override --until` sends it.
func pinPatch(active bool, until time.Time) []byte {
	return fmt.Appendf(nil, `{"spec":{"override":%q,"overrideUntil":%q,"overrideReason":%q}}`,
		modeOf(active), until.UTC().Format(time.RFC3339), pinEndReason)
}

// modeOf is the API's name of a mode.
func modeOf(active bool) v1beta1.Mode {
	if active {
		return v1beta1.ModeActive
	}
	return v1beta1.ModePassive
}

// pinHolds matches a DynamicIngress whose status shows its pin to the mode
// until the time in effect, and the mode as diSettled does.
func pinHolds(active bool, until time.Time) func(runtime.Object) (string, bool) {
	settled := diSettled(active)
	return func(o runtime.Object) (string, bool) {
		name, shows := settled(o)
		di, ok := o.(*v1beta1.DynamicIngress)
		if !ok || !shows {
			return name, false
		}
		p := di.Status.Override
		return name, p != nil && p.Phase == v1beta1.OverridePhaseInEffect && p.Mode == modeOf(active) && p.Until != nil && p.Until.Time.Equal(until)
	}
}

// pinExpired matches a DynamicIngress whose status shows its pin until the
// time Expired.
func pinExpired(until time.Time) func(runtime.Object) (string, bool) {
	return func(o runtime.Object) (string, bool) {
		di, ok := o.(*v1beta1.DynamicIngress)
		if !ok {
			return "", false
		}
		p := di.Status.Override
		return di.Name, p != nil && p.Phase == v1beta1.OverridePhaseExpired && p.Until != nil && p.Until.Time.Equal(until)
	}
}

// countMatching counts the objects match accepts.
func countMatching(objs []runtime.Object, match func(runtime.Object) (string, bool)) int {
	n := 0
	for _, o := range objs {
		if _, ok := match(o); ok {
			n++
		}
	}
	return n
}

// pinEndDirection says what an expiry is: the mode the state gives, which
// the pins to the other one end in.
func pinEndDirection(active bool) string {
	return fmt.Sprintf("%s (pins to %s end)", direction(active), strings.ToLower(string(modeOf(!active))))
}

// pinEndBar is how long after T the last Ingress may arrive, given the
// owned floor's flip.
func pinEndBar(floor time.Duration) time.Duration {
	return pinEndBarFixed + time.Duration(pinEndBarFactor*float64(floor))
}

// pinEndBarText says what the bar is.
func pinEndBarText() string {
	return fmt.Sprintf("at most %s + %.1f× the owned floor", pinEndBarFixed, pinEndBarFactor)
}

// summaryRows adds the measure's figures beside their baselines: each
// way, the last Ingress (with its bar) and the last status from T, beside
// the best owned floor.
func (r *pinEndResult) summaryRows(sum *table, workers []int) {
	for _, active := range []bool{true, false} {
		op := figures(r.flips.of("operator", &active))
		best, bf := r.flips.ownedFloorBest(workers, active)
		if best == 0 {
			continue
		}
		floor := fmt.Sprintf("%s, best of %s workers (%d, median of %d)", ownedFloorDesc, workerList(workers), best, bf.flips)
		sum.add(fmt.Sprintf("pins that end: N=%d %s, overrideUntil → every Ingress arrived (bar: %s = %s; median of %d)",
			r.flips.n, pinEndDirection(active), pinEndBarText(), round(pinEndBar(bf.total)), op.flips),
			round(op.total), floor, round(bf.total), durRatio(op.total, bf.total))
		sum.add(fmt.Sprintf("pins that end: N=%d %s, overrideUntil → every status shows it (reported; median of %d)", r.flips.n, pinEndDirection(active), op.flips),
			round(op.statusDone), floor, round(bf.total), durRatio(op.statusDone, bf.total))
	}
}

// markdown is the measure's section of the report.
func (r *pinEndResult) markdown(cfg config) string {
	var sb strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	w("#### Pins that end at one time: %d switches\n\n", r.flips.n)
	w("%d DynamicIngresses of one namespace follow one fixed DynamicIngressState; all were Ready %s after the state's create. ", r.flips.n, round(r.setup))
	w("Each way, every switch is pinned (`spec.override`, one merge patch each) to the mode it is in, with `spec.overrideUntil` one time T for all, %s + %s per switch after the first patch, rounded up to the second; ",
		pinEndLeadBase, pinEndLeadPer)
	w("once every status shows its pin in effect, the state's `spec.fixedResponse.status` is patched to the other mode, which the pins hold off. ")
	w("Once the API server is quiet (at least %s before T), the figures run from T: the last Ingress in the state's mode, and the last status showing it (Active and Ready at the switch's generation). ", pinEndAhead)
	w("The owned floor writes %d Ingresses in a namespace of its own, in rounds whose order rotates. After every expiry at least %d of %d statuses showed the pin Expired.\n\n",
		r.flips.n, r.expiredShown, r.flips.n)
	sum := &table{header: []string{"measure", "figure", "baseline", "baseline figure", "ratio"}}
	r.summaryRows(sum, cfg.ownedFloorWorkers)
	w("%s\n", sum)
	t := r.flips.ownedFloorTable(cfg.ownedFloorWorkers)
	for _, row := range t.rows {
		if row[2] == writerName("operator") {
			row[1] = pinEndDirection(row[1] == direction(true))
			row[2] = "operator (overrideUntil → Ingresses; statuses from overrideUntil)"
		}
	}
	w("%s\n", t)
	pt := &table{header: []string{"direction", "expiries", "pins in effect after the first patch: median", "max", "quiet before T: min",
		"statuses before the last Ingress", "writes by verb and resource (one expiry)"}}
	for _, active := range []bool{true, false} {
		runs := r.flips.of("operator", &active)
		if len(runs) == 0 {
			continue
		}
		pt.add(pinEndDirection(active), fmt.Sprint(len(runs)), round(median(r.pinned[active])), round(maxDuration(r.pinned[active])), round(minDuration(r.ahead[active])),
			fmt.Sprint(r.early[active]), runs[0].reqs.writeSummary())
	}
	w("%s\n", pt)
	w("%s", barTable(r.bars(cfg.ownedFloorWorkers)))
	return sb.String()
}

// bars are the measure's bars, each way, with their figures.
func (r *pinEndResult) bars(workers []int) []measureBar {
	var out []measureBar
	for _, active := range []bool{true, false} {
		op := figures(r.flips.of("operator", &active))
		if best, bf := r.flips.ownedFloorBest(workers, active); best != 0 {
			bar := pinEndBar(bf.total)
			out = append(out, measureBar{fmt.Sprintf("%s: overrideUntil → the last Ingress (median of %d)", pinEndDirection(active), op.flips),
				round(op.total), fmt.Sprintf("%s (%s + %.1f × %s)", round(bar), pinEndBarFixed, pinEndBarFactor, round(bf.total)), op.total <= bar})
		}
	}
	return out
}

// checkPinEnd asserts what the pin end measure must show whatever the
// machine: every expiry and floor flip ran, and every status showed its
// pin Expired after each. The bar is read, not asserted.
func checkPinEnd(t *testing.T, cfg config, res *pinEndResult) {
	t.Helper()
	checkOwnedFloorFlips(t, "pinend", cfg, res.flips, pinEndSizes[cfg.name].reps)
	if res.expiredShown != res.flips.n {
		t.Errorf("pinend: after an expiry %d of %d statuses showed the pin Expired", res.expiredShown, res.flips.n)
	}
}

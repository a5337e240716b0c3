package bench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
)

// report is everything one run measured.
type report struct {
	cfg                   config
	start                 time.Time
	elapsed               time.Duration
	manager               string
	loadBefore, loadAfter string
	flips                 []*flipSuiteResult
	steady                []steadyResult
	probeScale            *probeScaleResult
	webhook               *webhookResult
	memory                *memoryResult
	scale                 *scaleResult
	cluster               *clusterResult
	anyOf                 *anyOfResult
	served                *servedResult
	notify                *notifyResult
	plugin                *pluginResult
	noise                 *noiseResult
	fairness              *fairResult
	service               *serviceResult
	pinEnd                *pinEndResult
}

// table builds a Markdown table.
type table struct {
	header []string
	rows   [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) String() string {
	var sb strings.Builder
	sb.WriteString("| " + strings.Join(t.header, " | ") + " |\n")
	sep := make([]string, len(t.header))
	for i := range sep {
		sep[i] = "---"
	}
	sb.WriteString("| " + strings.Join(sep, " | ") + " |\n")
	for _, r := range t.rows {
		sb.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return sb.String()
}

func ratio(figure, baseline float64) string {
	switch {
	case figure == 0 && baseline == 0:
		return "–"
	case figure == 0:
		return "0×"
	case baseline == 0:
		return "n/a (baseline 0)"
	}
	r := figure / baseline
	switch {
	case r >= 100:
		return fmt.Sprintf("%.0f×", r)
	case r >= 10:
		return fmt.Sprintf("%.1f×", r)
	default:
		return fmt.Sprintf("%.2f×", r)
	}
}

func durRatio(figure, baseline time.Duration) string {
	return ratio(figure.Seconds(), baseline.Seconds())
}

// flipFigures are the medians of one writer's flips in one direction.
type flipFigures struct {
	flips                         int
	total, p50, p99, first, wrote time.Duration
	min, max                      time.Duration
	statusDone, stateStatus       time.Duration
	statusFirst                   time.Duration
	// cpu: median CPU seconds of each process until every Ingress arrived.
	cpu cpuSnapshot
}

// flipRow is the row of a flips table for writer who's figures f: N,
// direction, writer, flips, times, when it was done (for the operator,
// whatever else runs beside it, when the statuses were), then the ratio
// columns given and the CPU columns.
func flipRow(n int, active bool, who string, f flipFigures, ratios ...string) []string {
	done := round(f.wrote)
	if strings.HasPrefix(who, "operator") || f.statusDone > 0 {
		done = "statuses " + round(f.statusDone)
	}
	row := []string{fmt.Sprint(n), direction(active), writerName(who), fmt.Sprint(f.flips), round(f.total),
		round(f.min) + "–" + round(f.max), round(f.p50), round(f.p99), round(f.first), done}
	return append(append(row, ratios...), f.cpu.columns())
}

func figures(runs []flipRun) flipFigures {
	f := flipFigures{flips: len(runs)}
	if len(runs) == 0 {
		return f
	}
	f.total = medianOf(runs, func(r flipRun) time.Duration { return r.total })
	f.p50 = medianOf(runs, func(r flipRun) time.Duration { return r.p50 })
	f.p99 = medianOf(runs, func(r flipRun) time.Duration { return r.p99 })
	f.first = medianOf(runs, func(r flipRun) time.Duration { return r.first })
	f.wrote = medianOf(runs, func(r flipRun) time.Duration { return r.writerDone })
	f.statusDone = medianOf(runs, func(r flipRun) time.Duration { return r.statusDone })
	f.statusFirst = medianOf(runs, func(r flipRun) time.Duration { return r.statusFirst })
	f.stateStatus = medianOf(runs, func(r flipRun) time.Duration { return r.stateStatus })
	f.cpu = cpuSnapshot{}
	for k := range runs[0].cpuArrived {
		ms := medianOf(runs, func(r flipRun) time.Duration { return time.Duration(r.cpuArrived[k] * float64(time.Second)) })
		f.cpu[k] = ms.Seconds()
	}
	f.min, f.max = runs[0].total, runs[0].total
	for _, r := range runs {
		f.min, f.max = min(f.min, r.total), max(f.max, r.total)
	}
	return f
}

// floorBest is the fastest plain floor (by median of all arrived) of one
// direction, with its worker count.
func (r *flipSuiteResult) floorBest(workers []int, active bool) (int, flipFigures) {
	return r.bestOf(workers, floorName, active)
}

// ownedFloorBest is the fastest floor with the operator's metadata.
func (r *flipSuiteResult) ownedFloorBest(workers []int, active bool) (int, flipFigures) {
	return r.bestOf(workers, ownedFloorName, active)
}

func (r *flipSuiteResult) bestOf(workers []int, name func(int) string, active bool) (int, flipFigures) {
	best, bestF := 0, flipFigures{}
	for _, w := range workers {
		f := figures(r.of(name(w), &active))
		if f.flips > 0 && (best == 0 || f.total < bestF.total) {
			best, bestF = w, f
		}
	}
	return best, bestF
}

// ownedFloorRows adds to sum, each way, the median of the operator's flips
// beside the best owned floor's; what describes the operator's figure.
func (r *flipSuiteResult) ownedFloorRows(sum *table, workers []int, ctrlWorkers int, what func(active bool, flips int) string) {
	for _, active := range []bool{true, false} {
		op := figures(r.of("operator", &active))
		if best, bf := r.ownedFloorBest(workers, active); best != 0 {
			sum.add(what(active, op.flips), round(op.total),
				fmt.Sprintf("%s, best of %s workers (%d, median of %d)", ownedFloorDesc, workerList(workers), best, bf.flips),
				round(bf.total), durRatio(op.total, bf.total))
		}
		r.controllerFloorRows(sum, workers, ctrlWorkers, active, what)
	}
}

// controllerFloors are the names of the controller floors that flipped.
func (r *flipSuiteResult) controllerFloors() []string {
	var names []string
	for _, run := range r.runs {
		if strings.HasPrefix(run.who, "floor-controller-") && !slices.Contains(names, run.who) {
			names = append(names, run.who)
		}
	}
	return names
}

// controllerFloorDesc says what the controller floor is.
const controllerFloorDesc = "controller floor: the owned floor's applies from a controller-runtime controller (cache, informer, work queue), the trigger's edit → Ingresses"

// controllerFloorRows adds to sum, for one direction, the operator's flip
// beside the controller floor's of ctrlWorkers, and the controller floor's
// beside the best owned floor's: how much of the operator's ratio any
// controller pays. what describes a flip of the measure.
func (r *flipSuiteResult) controllerFloorRows(sum *table, ownedWorkers []int, ctrlWorkers int, active bool, what func(active bool, flips int) string) {
	cf := figures(r.of(controllerFloorName(ctrlWorkers), &active))
	if ctrlWorkers == 0 || cf.flips == 0 {
		return
	}
	op := figures(r.of("operator", &active))
	sum.add(what(active, op.flips), round(op.total), fmt.Sprintf("%s, %d workers (median of %d)", controllerFloorDesc, ctrlWorkers, cf.flips), round(cf.total), durRatio(op.total, cf.total))
	if best, bf := r.ownedFloorBest(ownedWorkers, active); best != 0 {
		sum.add(what(active, cf.flips)+", by the controller floor", round(cf.total),
			fmt.Sprintf("%s, best of %s workers (%d, median of %d)", ownedFloorDesc, workerList(ownedWorkers), best, bf.flips), round(bf.total), durRatio(cf.total, bf.total))
	}
}

// completeRows adds to sum, for one direction, the operator's complete
// flip (every status) beside the best owned floor and the complete floor.
func (r *flipSuiteResult) completeRows(sum *table, workers []int, active bool) {
	op := figures(r.of("operator", &active))
	what := fmt.Sprintf("flip N=%d %s: complete, every status shows it (median of %d)", r.n, direction(active), op.flips)
	if best, bf := r.ownedFloorBest(workers, active); best != 0 {
		sum.add(what, round(op.statusDone), fmt.Sprintf("%s, its Ingresses only (%d workers)", ownedFloorDesc, best), round(bf.total), durRatio(op.statusDone, bf.total))
	}
	if cf := figures(r.of(completeFloorName(completeFloorWorkers), &active)); cf.flips > 0 {
		sum.add(what, round(op.statusDone), fmt.Sprintf("complete floor: the owned floor, then the same status patches (%d workers, median of %d)", completeFloorWorkers, cf.flips),
			round(cf.statusDone), durRatio(op.statusDone, cf.statusDone))
	}
}

// ownedFloorTable is the flips table of the operator and the owned floor
// at each of workers, each way.
func (r *flipSuiteResult) ownedFloorTable(workers []int) *table {
	t := &table{header: []string{"N", "direction", "writer", "flips", "all arrived", "range", "p50 arrival", "p99 arrival", "first", "returned / statuses", "÷ best owned floor", "CPU s: manager / apiserver / etcd / bench"}}
	for _, active := range []bool{true, false} {
		_, bof := r.ownedFloorBest(workers, active)
		whos := []string{"operator"}
		for _, wk := range workers {
			whos = append(whos, ownedFloorName(wk))
		}
		whos = append(whos, r.controllerFloors()...)
		for _, who := range whos {
			f := figures(r.of(who, &active))
			if f.flips == 0 {
				continue
			}
			t.add(flipRow(r.n, active, who, f, durRatio(f.total, bof.total))...)
		}
	}
	return t
}

var writerNames = map[string]string{
	"operator": "operator (state edit → Ingresses)",
	kubectlSSA: "`kubectl apply --server-side -f dir/`",
	kubectlCSA: "`kubectl apply -f dir/` (client-side)",
}

// ownedFloorDesc says what the floor with the operator's metadata writes.
const ownedFloorDesc = "owned floor: client-go SSA + controller ownerReference + UID precondition"

func writerName(who string) string {
	if n, ok := writerNames[who]; ok {
		return n
	}
	var w int
	if _, err := fmt.Sscanf(who, "floor-complete-%d", &w); err == nil {
		return fmt.Sprintf("complete floor: the owned floor's Ingresses, then as many status patches, %d workers", w)
	}
	if _, err := fmt.Sscanf(who, "floor-controller-%d", &w); err == nil {
		return fmt.Sprintf("%s, %d workers", controllerFloorDesc, w)
	}
	if _, err := fmt.Sscanf(who, "floor-owned-%d", &w); err == nil {
		return fmt.Sprintf("%s, %d workers", ownedFloorDesc, w)
	}
	if _, err := fmt.Sscanf(who, "floor-%d", &w); err == nil {
		return fmt.Sprintf("floor: client-go SSA, %d workers", w)
	}
	return who
}

func (rep *report) markdown() string {
	var sb strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	w("### Latest run (%s)\n\n", rep.cfg.name)
	w("- **Date**: %s, took %s\n", rep.start.UTC().Format("2006-01-02 15:04 MST"), rep.elapsed.Round(time.Second))
	w("- **Command**: `%s`\n", rep.cfg.command)
	w("- **Machine**: %s\n", machine())
	w("- **Load average** (1/5/15 min, other work on the machine): %s at start, %s at end\n", rep.loadBefore, rep.loadAfter)
	w("- **Manager**: %s; %s\n", rep.manager, gitState())
	w("- **Control plane**: etcd and kube-apiserver %s on 127.0.0.1 (envtest defaults), one for the whole run\n\n", controlplane.KubernetesVersion)

	w("#### Every figure beside its baseline (ratio = figure ÷ baseline)\n\n")
	sum := &table{header: []string{"measure", "figure", "baseline", "baseline figure", "ratio"}}
	for _, fs := range rep.flips {
		for _, active := range []bool{true, false} {
			op := figures(fs.of("operator", &active))
			what := fmt.Sprintf("flip N=%d %s: every Ingress arrived (median of %d)", fs.n, direction(active), op.flips)
			if best, bf := fs.ownedFloorBest(rep.cfg.ownedFloorWorkers, active); best != 0 {
				sum.add(what, round(op.total), fmt.Sprintf("%s, best of %s workers (%d, median of %d)",
					ownedFloorDesc, workerList(rep.cfg.ownedFloorWorkers), best, bf.flips), round(bf.total), durRatio(op.total, bf.total))
			}
			if best, bf := fs.floorBest(rep.cfg.floorWorkers, active); best != 0 {
				sum.add(what, round(op.total), fmt.Sprintf("floor: client-go SSA, best of %s workers (%d, median of %d)",
					workerList(rep.cfg.floorWorkers), best, bf.flips), round(bf.total), durRatio(op.total, bf.total))
			}
			for _, mode := range []string{kubectlSSA, kubectlCSA} {
				kf := figures(fs.of(mode, &active))
				if kf.flips == 0 {
					continue
				}
				sum.add(what, round(op.total), fmt.Sprintf("%s (%s)", writerName(mode), flipsWord(kf.flips)), round(kf.total), durRatio(op.total, kf.total))
			}
			fs.controllerFloorRows(sum, rep.cfg.ownedFloorWorkers, rep.cfg.controllerFloorWorkers, active, func(active bool, flips int) string {
				return fmt.Sprintf("flip N=%d %s: every Ingress arrived (median of %d)", fs.n, direction(active), flips)
			})
			fs.completeRows(sum, rep.cfg.ownedFloorWorkers, active)
		}
	}
	for _, s := range rep.steady {
		sum.add(fmt.Sprintf("steady state, %d states, %s: writes in %s", s.states, s.name, s.window),
			fmt.Sprintf("%g", s.writes.writes("")), "probes sent in the same window", fmt.Sprintf("%g", s.probes), ratio(s.writes.writes(""), s.probes))
	}
	if w := rep.webhook; w != nil {
		for _, q := range []float64{0.5, 0.99} {
			with, without := percentile(w.with, q), percentile(w.without, q)
			sum.add(fmt.Sprintf("DynamicIngress create with webhooks, p%.0f of %d", q*100, w.n), round(with),
				"the same creates, webhook configurations removed", round(without), durRatio(with, without))
		}
	}
	if p := rep.probeScale; p != nil {
		sum.add(fmt.Sprintf("probe scale, %d states every %s: probes/s at the endpoints", p.states, probeInterval), fmt.Sprintf("%.0f", p.achieved),
			"scheduled (states ÷ interval)", fmt.Sprintf("%.0f", p.scheduled), ratio(p.achieved, p.scheduled))
		sum.add(fmt.Sprintf("probe scale, %d states: manager CPU (cores)", p.states), fmt.Sprintf("%.3f", p.cpuLoad),
			"the same manager idle, 0 states", fmt.Sprintf("%.3f", p.cpuIdle), ratio(p.cpuLoad, p.cpuIdle))
		sum.add(fmt.Sprintf("probe scale, %d states: manager RSS", p.states), mib(p.rssLoad),
			"the same manager idle, 0 states", mib(p.rssIdle), ratio(float64(p.rssLoad), float64(p.rssIdle)))
	}
	if m := rep.memory; m != nil {
		sum.add(fmt.Sprintf("manager RSS after sync, %d unrelated Ingresses", m.unrelated), mib(m.rss[1]), "0 unrelated Ingresses", mib(m.rss[0]), ratio(float64(m.rss[1]), float64(m.rss[0])))
		sum.add(fmt.Sprintf("manager Go heap_alloc after sync, %d unrelated Ingresses", m.unrelated), mib(int64(m.heap[1])), "0 unrelated Ingresses", mib(int64(m.heap[0])), ratio(m.heap[1], m.heap[0]))
		if m.live[0] > 0 {
			sum.add(fmt.Sprintf("manager live heap (after the last GC) after sync, %d unrelated Ingresses", m.unrelated), mib(int64(m.live[1])), "0 unrelated Ingresses", mib(int64(m.live[0])), ratio(m.live[1], m.live[0]))
		}
	}
	if sc := rep.scale; sc != nil {
		sc.flips.ownedFloorRows(sum, rep.cfg.ownedFloorWorkers, rep.cfg.controllerFloorWorkers, func(active bool, flips int) string {
			return fmt.Sprintf("scale: flip N=%d of %d switches %s, every Ingress arrived (median of %d)", sc.flipN, sc.switches, direction(active), flips)
		})
		sum.add(fmt.Sprintf("scale: restart with %d switches, write requests while catching up", sc.switches), fmt.Sprintf("%g", sc.restartWrites.writes("")),
			"required", "0", ratio(sc.restartWrites.writes(""), 0))
		sum.add(fmt.Sprintf("scale: restart with %d switches, until every one is reconciled (%d of %d Ready)", sc.switches, sc.readyAfterRestart, sc.switches),
			round(sc.caughtUp), "required at most", round(restartBound), durRatio(sc.caughtUp, restartBound))
		sum.add(fmt.Sprintf("scale: manager peak RSS, %d switches (converging from empty / restart)", sc.switches),
			mib(sc.peak.rss)+" / "+mib(sc.restartPk.rss), "the chart's memory limit", mib(chartMemoryLimit()), ratio(float64(max(sc.peak.rss, sc.restartPk.rss)), float64(chartMemoryLimit())))
		perSwitch := func(v float64) string { return fmt.Sprintf("%.1f KiB", v/1024/float64(sc.switches)) }
		for _, m := range []struct {
			what       string
			conv, rest float64
			bar        float64
		}{
			{"working set at rest (anonymous + file pages used)", float64(sc.rest.workingSet), float64(sc.restartRest.workingSet), restWorkingSetBar},
			{fmt.Sprintf("working set at rest, a scrape every %s", rep.cfg.settle), float64(sc.rest.workingSetScraped), float64(sc.restartRest.workingSetScraped), restWorkingSetBar},
			{"live heap at rest", sc.rest.live, sc.restartRest.live, restLiveHeapBar},
			{"VmRSS at rest", float64(sc.rest.rss), float64(sc.restartRest.rss), restWorkingSetBar},
		} {
			sum.add(fmt.Sprintf("scale: %s a switch, %d switches (converged / restarted)", m.what, sc.switches),
				perSwitch(m.conv)+" / "+perSwitch(m.rest), "bar a switch", fmt.Sprintf("%.0f KiB", m.bar/1024),
				ratio(max(m.conv, m.rest)/float64(sc.switches), m.bar))
		}
	}
	if c := rep.cluster; c != nil {
		c.flips.ownedFloorRows(sum, rep.cfg.ownedFloorWorkers, rep.cfg.controllerFloorWorkers, func(active bool, flips int) string {
			return fmt.Sprintf("cluster state: flip N=%d in %d namespaces following one ClusterDynamicIngressState %s, every Ingress arrived (median of %d)",
				c.flips.n, c.namespaces, direction(active), flips)
		})
	}
	if a := rep.anyOf; a != nil {
		a.flips.ownedFloorRows(sum, rep.cfg.ownedFloorWorkers, rep.cfg.controllerFloorWorkers, func(active bool, flips int) string {
			return fmt.Sprintf("anyOf: flip N=%d following two states (one flipped) %s, every Ingress arrived (median of %d)", a.flips.n, direction(active), flips)
		})
	}
	if rep.served != nil {
		rep.served.summaryRows(sum, rep.cfg.ownedFloorWorkers)
	}
	if rep.notify != nil {
		rep.notify.summaryRows(sum)
	}
	if rep.plugin != nil {
		rep.plugin.summaryRows(sum)
	}
	if rep.noise != nil {
		rep.noise.summaryRows(sum)
	}
	if rep.fairness != nil {
		rep.fairness.summaryRows(sum)
	}
	if rep.service != nil {
		rep.service.summaryRows(sum, rep.cfg.ownedFloorWorkers)
	}
	if rep.pinEnd != nil {
		rep.pinEnd.summaryRows(sum, rep.cfg.ownedFloorWorkers)
	}
	w("%s\n", sum)

	w("#### Flips\n\n")
	w("Time from the state edit (for the baselines: from the first request; for the controller floor, from its trigger's edit) until the watch showed an Ingress in the new shape; medians over the flips. ")
	w("The controller floor writes the owned floor's Ingresses from a controller-runtime controller in the bench's process, started before each pair of its flips: an edit of a ConfigMap queues every Ingress, and each reconcile reads the ConfigMap and its Ingress from the manager's cache (whose informer on the floor's Ingresses sees every write) and sends the owned floor's apply; its CPU counts as the bench's. ")
	w("\"returned\" is when the writer's last request was answered; \"statuses\" when every DynamicIngress's status showed the new mode.\n\n")
	w("CPU: seconds of CPU of each process from the edit until every Ingress arrived (median), from /proc.\n\n")
	ft := &table{header: []string{"N", "direction", "writer", "flips", "all arrived", "range", "p50 arrival", "p99 arrival", "first", "returned / statuses",
		"÷ best owned floor", "÷ best floor", "CPU s: manager / apiserver / etcd / bench"}}
	for _, fs := range rep.flips {
		for _, active := range []bool{true, false} {
			_, bf := fs.floorBest(rep.cfg.floorWorkers, active)
			_, bof := fs.ownedFloorBest(rep.cfg.ownedFloorWorkers, active)
			whos := []string{"operator"}
			for _, wk := range rep.cfg.floorWorkers {
				whos = append(whos, floorName(wk))
			}
			for _, wk := range rep.cfg.ownedFloorWorkers {
				whos = append(whos, ownedFloorName(wk))
			}
			if w := rep.cfg.controllerFloorWorkers; w > 0 {
				whos = append(whos, controllerFloorName(w))
			}
			whos = append(whos, completeFloorName(completeFloorWorkers), kubectlSSA, kubectlCSA)
			for _, who := range whos {
				f := figures(fs.of(who, &active))
				if f.flips == 0 {
					continue
				}
				ft.add(flipRow(fs.n, active, who, f, durRatio(f.total, bof.total), durRatio(f.total, bf.total))...)
			}
		}
	}
	w("%s\n", ft)

	w("#### The complete flip: every status\n\n")
	w("A flip is complete when every DynamicIngress's status shows the new mode (Active, and Ready True, at its generation), as `kubectl dynamic wait` waits for it. ")
	w("Beside the operator's: the owned floor (its Ingresses only), and the complete floor: %d workers write the owned floor's Ingresses, then the status merge patch the operator sends to as many DynamicIngresses of their own (which the manager watches, as it watches its own), ", completeFloorWorkers)
	w("timed until a watch shows every status: what a client needs to write both, one after the other. Medians.\n\n")
	ct := &table{header: []string{"N", "direction", "operator: targets", "operator: first status", "operator: complete", "owned floor", "complete floor: Ingresses / statuses",
		"targets ÷ owned floor", "complete ÷ owned floor", "complete ÷ complete floor"}}
	for _, fs := range rep.flips {
		for _, active := range []bool{true, false} {
			op := figures(fs.of("operator", &active))
			_, bof := fs.ownedFloorBest(rep.cfg.ownedFloorWorkers, active)
			cf := figures(fs.of(completeFloorName(completeFloorWorkers), &active))
			if op.flips == 0 || bof.flips == 0 || cf.flips == 0 {
				continue
			}
			ct.add(fmt.Sprint(fs.n), direction(active), round(op.total), round(op.statusFirst), round(op.statusDone), round(bof.total),
				round(cf.total)+" / "+round(cf.statusDone), durRatio(op.total, bof.total), durRatio(op.statusDone, bof.total), durRatio(op.statusDone, cf.statusDone))
		}
	}
	w("%s\n", ct)

	w("#### Operator writes per flip (counted by kube-apiserver, `apiserver_request_total`)\n\n")
	w("Per DynamicIngress, means over the flips of each direction, from the state edit until no write for %s. ", rep.cfg.quiet)
	w("The bench's own write is the one PATCH of the state; its watches and /metrics reads are not writes.\n\n")
	wt := &table{header: []string{"N", "direction", "Ingress writes / DI", "DI status writes / DI", "event writes / DI", "state status writes", "all writes / DI", "429s (all flips)", "writes by verb and resource (one flip)"}}
	for _, fs := range rep.flips {
		for _, active := range []bool{true, false} {
			runs := fs.of("operator", &active)
			if len(runs) == 0 {
				continue
			}
			per := func(f func(requests) float64) float64 {
				total := 0.0
				for _, r := range runs {
					total += f(r.reqs)
				}
				return total / float64(len(runs))
			}
			n := float64(fs.n)
			wt.add(fmt.Sprint(fs.n), direction(active),
				fmt.Sprintf("%.2f", per(func(r requests) float64 { return r.writes("ingresses") })/n),
				fmt.Sprintf("%.2f", per(func(r requests) float64 { return r.writes("dynamicingresses/status") })/n),
				fmt.Sprintf("%.2f", per(func(r requests) float64 { return r.writes("events") })/n),
				fmt.Sprintf("%.1f", per(func(r requests) float64 { return r.writes("dynamicingressstates/status") })),
				fmt.Sprintf("%.2f", per(func(r requests) float64 { return r.writes("") })/n),
				fmt.Sprintf("%.0f", per(func(r requests) float64 { return r.code("429") })*float64(len(runs))),
				runs[0].reqs.writeSummary())
		}
	}
	w("%s\n", wt)
	for _, fs := range rep.flips {
		w("N=%d: setup (create the state and %d DynamicIngresses until all Ready) %s; manager log lines about 429: %d; client-side throttling messages: %d.\n",
			fs.n, fs.n, round(fs.setup), fs.managerLog429, fs.throttleLog)
	}
	w("\n")

	for _, fs := range rep.flips {
		if fs.breakdown != nil {
			w("%s\n", fs.breakdown.markdown())
		}
	}

	if len(rep.steady) > 0 {
		w("#### Steady state\n\n")
		w("Probed states (interval %s), each driving one DynamicIngress; writes counted by kube-apiserver over the window, once every state showed its status (and %s more for failing ones, past the failure threshold). ", probeInterval, steadyFailSettle)
		w("Timestamped answers are shaped like a Prometheus instant query's, a new evaluation time in every answer; with bodyExpression `%s` the states record the value alone (%q), without it the whole answer. ",
			timestampedBodyExpression, timestampedValue)
		w("Status changes are seen by watching the states and DynamicIngresses, by the mode of the state's endpoint.\n\n")
		st := &table{header: []string{"case", "states", "ready after", "window", "writes", "writes by verb and resource", "probes sent", "status changes by endpoint mode"}}
		for _, s := range rep.steady {
			st.add(s.name, fmt.Sprint(s.states), round(s.readyAfter), s.window.String(), fmt.Sprintf("%g", s.writes.writes("")), s.writes.writeSummary(),
				fmt.Sprintf("%g", s.probes), changesSummary(s.changes))
		}
		w("%s\n", st)
	}
	if p := rep.probeScale; p != nil {
		w("#### Probe scale\n\n")
		w("%d states probing local endpoints every %s (four answering 200, one that never answers, probe timeout 1s); probes counted at the endpoints over %s, once every state had a status (after %s). ",
			p.states, probeInterval, p.window, round(p.readyAfter))
		w("Idle baseline: the same manager with no state, over %s. CPU from /proc/<pid>/stat (utime+stime), RSS from /proc/<pid>/status. Writes in the window: %g (%s).\n\n",
			p.idleWindow, p.writes.writes(""), p.writes.writeSummary())
	}
	if wh := rep.webhook; wh != nil {
		w("#### Webhook latency\n\n")
		wt := &table{header: []string{"", "p50", "p90", "p99", "max"}}
		for _, c := range []struct {
			name string
			lat  []time.Duration
		}{{"with webhooks", wh.with}, {"webhook configurations removed", wh.without}} {
			wt.add(c.name, round(percentile(c.lat, 0.5)), round(percentile(c.lat, 0.9)), round(percentile(c.lat, 0.99)), round(percentile(c.lat, 1)))
		}
		w("%d DynamicIngress creates, one after the other, each measured by the client; the same manager (serving its webhooks) runs in both cases.\n\n%s\n", wh.n, wt)
	}
	if sc := rep.scale; sc != nil {
		w("%s\n", sc.markdown(rep.cfg))
	}
	if c := rep.cluster; c != nil {
		w("%s\n", c.markdown(rep.cfg))
	}
	if a := rep.anyOf; a != nil {
		w("%s\n", a.markdown(rep.cfg))
	}
	if s := rep.served; s != nil {
		w("%s\n", s.markdown(rep.cfg))
	}
	if nr := rep.notify; nr != nil {
		w("%s\n", nr.markdown())
	}
	if p := rep.plugin; p != nil {
		w("%s\n", p.markdown())
	}
	if n := rep.noise; n != nil {
		w("%s\n", n.markdown())
	}
	if f := rep.fairness; f != nil {
		w("%s\n", f.markdown())
	}
	if s := rep.service; s != nil {
		w("%s\n", s.markdown(rep.cfg))
	}
	if p := rep.pinEnd; p != nil {
		w("%s\n", p.markdown(rep.cfg))
	}
	if m := rep.memory; m != nil {
		w("#### Memory\n\n")
		w("The manager after sync (a DynamicIngress created after its start is Ready), medians of five readings, with 0 and then %d Ingresses without the managed-by label (created in %s): ",
			m.unrelated, round(m.createdIn))
		w("RSS (/proc/<pid>/status VmRSS) %s → %s; `go_memstats_heap_alloc_bytes` %s → %s (moves with the GC cycle); `go_gc_heap_live_bytes` (live heap after the last GC) %s → %s. ",
			mib(m.rss[0]), mib(m.rss[1]), mib(int64(m.heap[0])), mib(int64(m.heap[1])), mib(int64(m.live[0])), mib(int64(m.live[1])))
		if m.gcSeen[0] && m.gcSeen[1] {
			w("In both cases a garbage collection ran after the sync, before the readings (the runtime forces one within two minutes).\n\n")
		} else {
			w("No garbage collection was waited for after the sync (GC after sync: %v, %v), so the heap figures include garbage from the start.\n\n", m.gcSeen[0], m.gcSeen[1])
		}
	}
	return sb.String()
}

func (r *breakdownResult) markdown() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "#### Where the time goes: N=%d under three manager configurations\n\n", r.n)
	sb.WriteString("The same flip with controller-runtime's metrics on (`--metrics-bind-address`), the defaults, then a client-side rate limit, then more workers. ")
	sb.WriteString("Queue wait and reconcile time are the manager's `workqueue_queue_duration_seconds` and `workqueue_work_duration_seconds` of the dynamicingress controller; ")
	sb.WriteString("server latencies are kube-apiserver's `apiserver_request_duration_seconds` means; CPU is seconds of CPU from the edit until every status showed the new mode.\n\n")
	t := &table{header: []string{"manager", "direction", "all arrived", "statuses", "queue wait (mean)", "reconcile (mean)", "reconciles / DI", "requeues / DI",
		"server: APPLY ingress", "server: PATCH DI status", "server: POST event", "CPU s manager / apiserver / etcd / bench"}}
	for i, v := range r.variants {
		for _, f := range r.flips[i] {
			n := float64(r.n)
			rec := f.reconciles["success"] + f.reconciles["error"] + f.reconciles["requeue"] + f.reconciles["requeue_after"]
			lat := func(k string) string {
				x := f.server[k]
				if x[1] == 0 {
					return "–"
				}
				return fmt.Sprintf("%s (%g)", seconds(x[0]), x[1])
			}
			t.add(v.name, direction(f.run.active), round(f.run.total), round(f.run.statusDone),
				seconds(f.queueWait.mean()), seconds(f.work.mean()),
				fmt.Sprintf("%.2f", rec/n), fmt.Sprintf("%.2f", (f.reconciles["requeue"]+f.reconciles["requeue_after"]+f.reconciles["error"])/n),
				lat("APPLY ingresses"), lat("PATCH dynamicingresses/status"), lat("POST events"),
				fmt.Sprintf("%.1f / %.1f / %.1f / %.1f", f.run.cpu["manager"], f.run.cpu["kube-apiserver"], f.run.cpu["etcd"], f.run.cpu["bench"]))
		}
	}
	sb.WriteString(t.String())
	return sb.String()
}

func changesSummary(c map[string]int) string {
	if len(c) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %d", k, c[k]))
	}
	return strings.Join(parts, ", ")
}

func workerList(ws []int) string {
	parts := make([]string, 0, len(ws))
	for _, w := range ws {
		parts = append(parts, fmt.Sprint(w))
	}
	return strings.Join(parts, "/")
}

func flipsWord(n int) string {
	if n == 1 {
		return "1 flip"
	}
	return fmt.Sprintf("median of %d", n)
}

// machine describes the CPU, memory and software of this machine.
func machine() string {
	model, mem := "unknown CPU", ""
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
		_ = f.Close()
	}
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				var kb int64
				_, _ = fmt.Sscan(strings.TrimSpace(rest), &kb)
				mem = fmt.Sprintf(", %.1f GiB", float64(kb)/(1<<20))
			}
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return fmt.Sprintf("nproc %d, %s%s, Linux %s, %s", runtime.NumCPU(), model, mem, strings.TrimSpace(string(kernel)), runtime.Version())
}

// gitState names the commit of the working tree and whether it has changes.
func gitState() string {
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = controlplane.RepoRoot()
		out, err := cmd.Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	commit := git("rev-parse", "--short", "HEAD")
	if commit == "" {
		return "not a git checkout"
	}
	changed := 0
	if st := git("status", "--porcelain", "--untracked-files=no"); st != "" {
		changed = len(strings.Split(st, "\n"))
	}
	if changed == 0 {
		return "working tree at " + commit
	}
	return fmt.Sprintf("working tree at %s with %d changed files", commit, changed)
}

// The generated section of docs/benchmarks.md lies between these markers;
// the rest of the file is kept as it is.
const (
	beginMarker = "<!-- BEGIN GENERATED by make bench: everything up to END GENERATED is rewritten by each run -->"
	endMarker   = "<!-- END GENERATED -->"
)

// writeGenerated replaces the generated section of path with text, adding
// the section at the end when the file has none (or creating the file).
func writeGenerated(path, text string) error {
	raw, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	out, err := replaceGenerated(string(raw), text)
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

func replaceGenerated(doc, text string) (string, error) {
	section := beginMarker + "\n\n" + strings.TrimSpace(text) + "\n\n" + endMarker
	begin := strings.Index(doc, beginMarker)
	end := strings.Index(doc, endMarker)
	switch {
	case begin < 0 && end < 0:
		if doc == "" {
			doc = "# Benchmarks\n"
		}
		return strings.TrimRight(doc, "\n") + "\n\n" + section + "\n", nil
	case begin < 0 || end < begin:
		return "", fmt.Errorf("docs/benchmarks.md: the markers %q and %q are out of order or one is missing", beginMarker, endMarker)
	}
	return doc[:begin] + section + doc[end+len(endMarker):], nil
}

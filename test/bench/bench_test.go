package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// config is the size of every measure of one run.
type config struct {
	name     string
	flipNs   []int
	flipReps int // flips each way of the operator and of the floor
	// operatorFlipPairs is how many times the operator's step of a round
	// flips to active and back (BENCH_OPERATOR_FLIPS; the first pair counts).
	operatorFlipPairs int
	// floorClientsOwn: every floor writes from a client of its own
	// (BENCH_FLOOR_CLIENTS=own).
	floorClientsOwn bool
	floorWorkers    []int
	// ownedFloorWorkers: the concurrencies of the floor with the
	// operator's metadata (ownerReference, UID precondition).
	ownedFloorWorkers []int
	// controllerFloorWorkers: the reconcile workers of the controller
	// floor (controllerfloor_test.go); 0 leaves it out.
	controllerFloorWorkers int
	// kubectl flips alternate to active and back (6 = 3 each way).
	kubectlSSAFlips, kubectlCSAFlips func(n int) int
	breakdownN, breakdownReps        int
	breakdownVariants                []breakdownVariant
	steadyStates                     int
	steadyWindow                     time.Duration
	webhookN                         int
	probeStates                      int
	probeWindow, idleWindow          time.Duration
	unrelated                        int
	// The switch scale measure: scaleSwitches DynamicIngresses following
	// scaleStates states, scaleFlipN of them on the state a flip edits.
	// scaleFlipReps: flips each way of the operator and of each owned floor.
	scaleSwitches, scaleStates, scaleFlipN, scaleFlipReps int
	// The tenant noise measure: noiseStates noisy states, a flip of
	// noiseFlipN switches, noiseFlipReps flips each way with and without
	// the noise.
	noiseStates, noiseFlipN, noiseFlipReps int
	// noiseWarm: how long the noise runs, once every noisy state has
	// probed, before the flips.
	noiseWarm time.Duration
	// The fairness measure: fairStallNamespaces namespaces of
	// fairStallStates states holding stalling 1 MiB answers (interval and
	// timeout fairStallInterval), fairSlowStates states of the slowest
	// bodyExpression, fairExpressions switches with distinct expressions,
	// and a victim's flip of fairFlipN switches, fairReps flips each way
	// with and without the noise.
	fairStallNamespaces, fairStallStates, fairSlowStates, fairExpressions, fairFlipN, fairReps int
	fairStallInterval                                                                          time.Duration
	// The cluster state measure: clusterNamespaces namespaces of
	// clusterPerNamespace DynamicIngresses following one
	// ClusterDynamicIngressState, clusterFlipReps flips each way of the
	// operator and of each owned floor.
	clusterNamespaces, clusterPerNamespace, clusterFlipReps int
	// The anyOf measure: anyOfN DynamicIngresses following spec.anyOf of
	// two states, anyOfFlipReps flips each way of the operator and of each
	// owned floor.
	anyOfN, anyOfFlipReps int
	// The served measure: flips of each of servedNs switches with
	// spec.served behind Traefik, servedReps flips each way of the
	// operator and of each owned floor.
	servedNs   []int
	servedReps int
	// servedStalling is how many switches of another namespace, each with
	// a served URL of its own that stalls and never answers as its shape, the first served N
	// flips beside once more (servedFairness; 0: not measured).
	servedStalling int
	// servedChecksOff leaves spec.served out of the served measure's
	// switches (BENCH_SERVED_CHECKS=0).
	servedChecksOff bool
	// servedSplitCores runs the served measure with Traefik and the bench
	// apart from the control plane and the manager (BENCH_SPLIT_CORES=1).
	servedSplitCores bool
	// The notifications measure: notifyN switches and three notifiers of
	// their state, notifyReps flips each way.
	notifyN, notifyReps int
	// notifyOutage: how long the sinks are down, after the flips.
	notifyOutage time.Duration
	// The service state measure: serviceFlipN switches following one
	// state that follows a Service, serviceFlipReps flips each way of the
	// operator and of each owned floor; serviceChurnStates states whose
	// Services' EndpointSlices churn for serviceChurnWindow; and
	// serviceIdleSlices EndpointSlices of serviceIdleServices Services that
	// no state follows, for the manager's memory.
	serviceFlipN, serviceFlipReps          int
	serviceChurnStates                     int
	serviceChurnWindow                     time.Duration
	serviceIdleSlices, serviceIdleServices int
	// quiet: no write for this long ends a flip's request count; settle:
	// the pause before an idle or memory reading.
	quiet, settle time.Duration
	// restWait: how long the scale measure waits for the manager to be at
	// rest before its memory readings (0: it reads at once).
	restWait time.Duration
	// gcWait: how long the memory measure waits for a garbage collection
	// after the sync (0: not at all).
	gcWait time.Duration
	// writeDocs rewrites the generated section of docs/benchmarks.md.
	writeDocs bool
	command   string
}

var smallConfig = config{
	name:   "small",
	flipNs: []int{50},
	// One round each way, one owned floor: the small run checks the
	// structure, and make test runs it every time.
	flipReps:          1,
	floorWorkers:      []int{8, 32, 64},
	ownedFloorWorkers: []int{32},
	// The operator's reconcile workers (--max-concurrent-reconciles).
	controllerFloorWorkers: 32,
	kubectlSSAFlips:        func(int) int { return 2 },
	kubectlCSAFlips:        func(int) int { return 1 },
	// No breakdown: it restarts the manager and repeats flips; make bench
	// runs it at N=500.
	breakdownN:   0,
	steadyStates: 20,
	steadyWindow: 2 * time.Second,
	webhookN:     50,
	probeStates:  100,
	probeWindow:  2 * time.Second,
	idleWindow:   time.Second,
	unrelated:    1000,
	// A few hundred switches: the structure of the scale measure, fast.
	scaleSwitches: 300,
	scaleStates:   10,
	scaleFlipN:    100,
	scaleFlipReps: 1,
	// Ten noisy states and the small flip: the structure of the noise
	// measure, in seconds.
	noiseStates:   10,
	noiseFlipN:    50,
	noiseFlipReps: 1,
	// Two probe intervals, not the full run's paced cycle of the noisy
	// states and two intervals (about 26 s): the small run checks the
	// structure.
	noiseWarm: 2 * probeInterval,
	// One namespace of stalling answers, a few slow states, 25
	// expressions (a few seconds at their namespace's share) and the small
	// flip: the structure of the fairness measure.
	fairStallNamespaces: 1,
	fairStallStates:     2,
	fairSlowStates:      5,
	fairExpressions:     25,
	fairFlipN:           50,
	fairReps:            1,
	fairStallInterval:   2 * time.Second,
	// The flip of 50 over five namespaces: the structure of the cluster
	// state measure.
	clusterNamespaces:   5,
	clusterPerNamespace: 10,
	clusterFlipReps:     1,
	anyOfN:              50,
	anyOfFlipReps:       1,
	servedNs:            []int{50},
	servedReps:          1,
	servedStalling:      100,
	notifyN:             50,
	notifyReps:          1,
	notifyOutage:        5 * time.Second,
	// The structure of the service state measure in about half a minute.
	serviceFlipN:        50,
	serviceFlipReps:     1,
	serviceChurnStates:  10,
	serviceChurnWindow:  5 * time.Second,
	serviceIdleSlices:   1000,
	serviceIdleServices: 100,
	quiet:               300 * time.Millisecond,
	settle:              time.Second,
	command:             "make bench-small",
}

var fullConfig = config{
	name:              "full",
	flipNs:            []int{50, 500, 2000},
	flipReps:          5,
	floorWorkers:      []int{8, 32, 64},
	ownedFloorWorkers: []int{32, 64},
	// The operator's reconcile workers (--max-concurrent-reconciles).
	controllerFloorWorkers: 32,
	kubectlSSAFlips:        func(int) int { return 6 },
	// Client-side apply reads and patches each object in turn: at 2000
	// one flip takes about a minute, so one flip each way there.
	kubectlCSAFlips: func(n int) int {
		if n >= 2000 {
			return 2
		}
		return 6
	},
	breakdownN:        500,
	breakdownReps:     2,
	breakdownVariants: breakdownVariants,
	steadyStates:      100,
	steadyWindow:      60 * time.Second,
	webhookN:          200,
	probeStates:       1000,
	probeWindow:       30 * time.Second,
	idleWindow:        10 * time.Second,
	unrelated:         10000,
	scaleSwitches:     10000,
	scaleStates:       100,
	scaleFlipN:        2000,
	scaleFlipReps:     3,
	noiseStates:       100,
	noiseFlipN:        500,
	noiseFlipReps:     3,
	noiseWarm:         noiseWarm,
	// Each noisy phase lasts as long as 2000 evaluations of about 80ms at
	// their namespace's quarter of a core: about 11 minutes.
	fairStallNamespaces: 5,
	fairStallStates:     8,
	fairSlowStates:      100,
	fairExpressions:     2000,
	fairFlipN:           500,
	fairReps:            2,
	fairStallInterval:   16 * time.Second,
	clusterNamespaces:   20,
	// 2000 switches, as the largest flip of one state.
	clusterPerNamespace: 100,
	clusterFlipReps:     5,
	anyOfN:              2000,
	anyOfFlipReps:       5,
	servedNs:            []int{50, 500},
	servedReps:          3,
	servedStalling:      300,
	notifyN:             2000,
	notifyReps:          2,
	notifyOutage:        2 * time.Minute,
	serviceFlipN:        500,
	serviceFlipReps:     5,
	serviceChurnStates:  100,
	serviceChurnWindow:  60 * time.Second,
	serviceIdleSlices:   10000,
	serviceIdleServices: 1000,
	quiet:               time.Second,
	settle:              3 * time.Second,
	restWait:            90 * time.Second,
	gcWait:              150 * time.Second,
	writeDocs:           true,
	command:             "make bench",
}

// TestBenchSmall runs every measure at small sizes (N=50) in about four
// minutes: `make bench-small`, or BENCH=small go test ./test/bench/ -run
// TestBenchSmall -v. It prints the table and leaves docs/benchmarks.md alone.
func TestBenchSmall(t *testing.T) {
	if os.Getenv("BENCH") == "" {
		t.Skip("set BENCH=small (make bench-small) to run the small benchmark")
	}
	runBench(t, smallConfig)
}

// TestBenchFull runs the full set (`make bench`, about 20 minutes) and
// rewrites the generated section of docs/benchmarks.md.
func TestBenchFull(t *testing.T) {
	if os.Getenv("BENCH") != "full" {
		t.Skip("set BENCH=full (make bench) to run the full benchmark")
	}
	runBench(t, fullConfig)
}

// bench is one run: the harness, its sizes and what it measured.
type bench struct {
	h       *harness
	cfg     config
	started time.Time
	report  report
	// floorClients are the floors' clients of their own
	// (BENCH_FLOOR_CLIENTS=own), by floor.
	floorClients map[string]kubernetes.Interface
	// tracing is set while the flip measure's operator flips run: those
	// are traced with BENCH_TRACE (trace_test.go).
	tracing bool
}

func (b *bench) progress(format string, args ...any) {
	fmt.Printf("[bench %6s] %s\n", round(time.Since(b.started)), fmt.Sprintf(format, args...))
}

func runBench(t *testing.T, cfg config) {
	if c := os.Getenv("BENCH_COMMAND"); c != "" {
		cfg.command = c
	}
	if ns := os.Getenv("BENCH_FLIP_N"); ns != "" {
		// Other flip sizes (of the flip and the served measures), for a
		// quick look: BENCH_FLIP_N=500,1000.
		cfg.flipNs = nil
		for _, f := range strings.Split(ns, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				t.Fatalf("BENCH_FLIP_N=%q: want sizes like 50,500", ns)
			}
			cfg.flipNs = append(cfg.flipNs, n)
		}
		cfg.servedNs = cfg.flipNs
		cfg.command += " (BENCH_FLIP_N=" + ns + ")"
		cfg.writeDocs = false
	}
	if reps := os.Getenv("BENCH_FLIP_REPS"); reps != "" {
		// More rounds of flips (of one state, of the cluster state, of
		// anyOf, served, notifications and a service state), for steadier
		// medians when comparing builds.
		r, err := strconv.Atoi(reps)
		if err != nil || r < 1 {
			t.Fatalf("BENCH_FLIP_REPS=%q: want a number of rounds like 6", reps)
		}
		cfg.flipReps, cfg.clusterFlipReps, cfg.anyOfFlipReps, cfg.servedReps, cfg.notifyReps, cfg.serviceFlipReps = r, r, r, r, r, r
		cfg.command += " (BENCH_FLIP_REPS=" + reps + ")"
		cfg.writeDocs = false
	}
	if os.Getenv("BENCH_SERVED_CHECKS") == "0" {
		// The served measure's switches without spec.served: what the
		// checks cost a flip through Traefik.
		cfg.servedChecksOff = true
		cfg.command += " (BENCH_SERVED_CHECKS=0)"
		cfg.writeDocs = false
	}
	if os.Getenv("BENCH_SPLIT_CORES") == "1" {
		cfg.servedSplitCores = true
		cfg.command += " (BENCH_SPLIT_CORES=1)"
		cfg.writeDocs = false
	}
	cfg.operatorFlipPairs = 1
	if pairs := os.Getenv("BENCH_OPERATOR_FLIPS"); pairs != "" {
		// A diagnostic: the operator's step of a round (of the flip,
		// cluster, anyOf and scale measures) makes this many flips, to
		// active and back in turn; the first pair counts, the later ones,
		// right after its own, are only reported: whether a flip is
		// slower for its direction or for following the floors.
		p, err := strconv.Atoi(pairs)
		if err != nil || p < 2 || p%2 != 0 {
			t.Fatalf("BENCH_OPERATOR_FLIPS=%q: want an even number of flips like 4", pairs)
		}
		cfg.operatorFlipPairs = p / 2
		cfg.command += " (BENCH_OPERATOR_FLIPS=" + pairs + ")"
		cfg.writeDocs = false
	}
	switch fc := os.Getenv("BENCH_FLOOR_CLIENTS"); fc {
	case "":
	case "own":
		// A diagnostic: every owned and plain floor writes from a
		// client on a connection of its own (floorClient).
		cfg.floorClientsOwn = true
		cfg.command += " (BENCH_FLOOR_CLIENTS=own)"
		cfg.writeDocs = false
	default:
		t.Fatalf("BENCH_FLOOR_CLIENTS=%q: want own (or nothing)", fc)
	}
	if os.Getenv("BENCH_QUICK") != "" {
		// The operator against the floor only: no kubectl and no breakdown,
		// for a quick comparison of two builds.
		cfg.kubectlSSAFlips = func(int) int { return 0 }
		cfg.kubectlCSAFlips = func(int) int { return 0 }
		cfg.breakdownN = 0
		cfg.command += " (BENCH_QUICK=1)"
		cfg.writeDocs = false
	}
	// BENCH_ONLY=memory (or a list of flip, steady, probes, webhook,
	// memory, scale, cluster, anyof, served, notify, plugin, noise, fairness,
	// service, pinend) runs some measures only, without touching the docs.
	run := map[string]bool{"flip": true, "steady": true, "probes": true, "webhook": true, "memory": true, "scale": true, "cluster": true, "anyof": true, "served": true, "notify": true, "plugin": true, "noise": true, "fairness": true, "service": true, "pinend": true}
	if only := os.Getenv("BENCH_ONLY"); only != "" {
		for k := range run {
			run[k] = false
		}
		for _, f := range strings.Split(only, ",") {
			f = strings.TrimSpace(f)
			if _, ok := run[f]; !ok {
				t.Fatalf("BENCH_ONLY=%q: want a list of flip, steady, probes, webhook, memory, scale, cluster, anyof, served, notify, plugin, noise, fairness, service, pinend", only)
			}
			run[f] = true
		}
		cfg.command += " (BENCH_ONLY=" + only + ")"
		cfg.writeDocs = false
	}
	suite.SetTestLogger()
	b := &bench{cfg: cfg, started: time.Now()}
	b.report.cfg = cfg
	b.report.start = time.Now()
	b.report.loadBefore = loadAverage()
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "dynamic-ingress-bench-")
	if err != nil {
		t.Fatal(err)
	}
	keep := os.Getenv("BENCH_KEEP") != ""
	defer func() {
		if t.Failed() || keep {
			fmt.Printf("bench work directory (manager logs, kubeconfig): %s\n", dir)
		} else {
			_ = os.RemoveAll(dir)
		}
	}()
	bin, how, err := managerBinary(dir)
	if err != nil {
		t.Fatal(err)
	}
	b.report.manager = how
	b.progress("manager: %s; starting the control plane", how)
	b.h, err = startHarness(ctx, dir)
	if b.h != nil {
		defer b.h.stop()
	}
	if err != nil {
		t.Fatal(err)
	}
	b.h.managerBin = bin
	if b.h.managerFlags, err = flagsOf(bin); err != nil {
		t.Fatal(err)
	}

	for _, n := range cfg.flipNs {
		if !run["flip"] {
			break
		}
		res, err := b.flipSuite(ctx, n)
		if err != nil {
			t.Fatalf("flip N=%d: %v", n, err)
		}
		b.report.flips = append(b.report.flips, res)
		checkFlips(t, cfg, res)
	}
	if run["steady"] {
		steady, err := b.steadySuite(ctx)
		if err != nil {
			t.Fatalf("steady state: %v", err)
		}
		b.report.steady = steady
		for _, s := range steady {
			if s.probes == 0 {
				t.Errorf("steady state (%s): no probe reached the endpoints in %s", s.name, s.window)
			}
		}
	}
	if run["probes"] {
		if b.report.probeScale, err = b.probeScale(ctx); err != nil {
			t.Fatalf("probe scale: %v", err)
		}
		if b.report.probeScale.achieved == 0 {
			t.Errorf("probe scale: no probe reached the endpoints")
		}
	}
	if run["webhook"] {
		if b.report.webhook, err = b.webhookLatency(ctx); err != nil {
			t.Fatalf("webhook: %v", err)
		}
	}
	if run["memory"] {
		if b.report.memory, err = b.memory(ctx); err != nil {
			t.Fatalf("memory: %v", err)
		}
		if m := b.report.memory; m.rss[0] == 0 || m.rss[1] == 0 || m.heap[0] == 0 || m.heap[1] == 0 {
			t.Errorf("memory: a reading is missing: %+v (is go_memstats_heap_alloc_bytes still served?)", *m)
		}
	}
	if run["scale"] {
		if b.report.scale, err = b.switchScale(ctx); err != nil {
			t.Fatalf("scale: %v", err)
		}
		checkScale(t, cfg, b.report.scale)
	}
	if run["cluster"] {
		if b.report.cluster, err = b.clusterFlip(ctx); err != nil {
			t.Fatalf("cluster: %v", err)
		}
		checkAgainstFloors(t, "cluster", cfg.ownedFloorWorkers, cfg.controllerFloorWorkers, b.report.cluster.flips, cfg.clusterFlipReps)
	}
	if run["anyof"] {
		if b.report.anyOf, err = b.anyOfFlip(ctx); err != nil {
			t.Fatalf("anyof: %v", err)
		}
		checkAnyOf(t, cfg, b.report.anyOf)
	}
	if run["served"] {
		if b.report.served, err = b.servedFlips(ctx); err != nil {
			t.Fatalf("served: %v", err)
		}
		checkServedFlips(t, cfg, b.report.served)
	}
	if run["notify"] {
		if b.report.notify, err = b.notifyFlips(ctx); err != nil {
			t.Fatalf("notify: %v", err)
		}
		checkNotify(t, cfg, b.report.notify)
	}
	if run["plugin"] {
		if b.report.plugin, err = b.pluginMeasure(ctx); err != nil {
			t.Fatalf("plugin: %v", err)
		}
	}
	if run["noise"] {
		if b.report.noise, err = b.tenantNoise(ctx); err != nil {
			t.Fatalf("noise: %v", err)
		}
		checkNoise(t, cfg, b.report.noise)
	}
	if run["fairness"] {
		if b.report.fairness, err = b.fairness(ctx); err != nil {
			t.Fatalf("fairness: %v", err)
		}
		checkFairness(t, cfg, b.report.fairness)
	}
	if run["service"] {
		if b.report.service, err = b.serviceMeasure(ctx); err != nil {
			t.Fatalf("service: %v", err)
		}
		checkService(t, cfg, b.report.service)
	}
	if run["pinend"] {
		if b.report.pinEnd, err = b.pinEnd(ctx); err != nil {
			t.Fatalf("pinend: %v", err)
		}
		checkPinEnd(t, cfg, b.report.pinEnd)
	}
	b.report.elapsed = time.Since(b.started)
	b.report.loadAfter = loadAverage()

	text := b.report.markdown()
	fmt.Println()
	fmt.Println(text)
	if err := os.WriteFile(filepath.Join(dir, "benchmarks.md"), []byte(text), 0o644); err != nil {
		t.Error(err)
	}
	if cfg.writeDocs {
		path := filepath.Join(controlplane.RepoRoot(), "docs", "benchmarks.md")
		if err := writeGenerated(path, text); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("wrote the generated section of %s\n", path)
	}
	b.progress("done")
}

// checkFlips asserts what a flip suite must have done, never how fast.
func checkFlips(t *testing.T, cfg config, res *flipSuiteResult) {
	t.Helper()
	for _, active := range []bool{true, false} {
		if got := len(res.of("operator", &active)); got != cfg.flipReps {
			t.Errorf("N=%d: %d operator flips %s, want %d", res.n, got, direction(active), cfg.flipReps)
		}
		for _, w := range cfg.floorWorkers {
			if got := len(res.of(floorName(w), &active)); got != cfg.flipReps {
				t.Errorf("N=%d: %d floor flips with %d workers %s, want %d", res.n, got, w, direction(active), cfg.flipReps)
			}
		}
		for _, w := range cfg.ownedFloorWorkers {
			if got := len(res.of(ownedFloorName(w), &active)); got != cfg.flipReps {
				t.Errorf("N=%d: %d owned-floor flips with %d workers %s, want %d", res.n, got, w, direction(active), cfg.flipReps)
			}
		}
		if w := cfg.controllerFloorWorkers; w > 0 {
			if got := len(res.of(controllerFloorName(w), &active)); got != cfg.flipReps {
				t.Errorf("N=%d: %d controller-floor flips %s, want %d", res.n, got, direction(active), cfg.flipReps)
			}
		}
	}
	for _, run := range res.runs {
		if run.who == "operator" && run.reqs.writes("ingresses") < float64(run.n) {
			t.Errorf("N=%d: the API server counted %g Ingress writes in an operator flip of %d Ingresses: is apiserver_request_total still served?",
				run.n, run.reqs.writes("ingresses"), run.n)
		}
	}
}

// checkScale asserts what the scale measure must show whatever the
// machine: a restart writes nothing and leaves every switch Ready, and
// every flip ran.
func checkScale(t *testing.T, cfg config, res *scaleResult) {
	t.Helper()
	if w := res.restartWrites.writes(""); w != 0 {
		t.Errorf("scale: the restarted manager wrote %g times while it caught up with %d switches (%s), want 0",
			w, res.switches, res.restartWrites.writeSummary())
	}
	if res.readyAfterRestart != res.switches {
		t.Errorf("scale: %d of %d DynamicIngresses Ready after the restart", res.readyAfterRestart, res.switches)
	}
	if res.peak.rss == 0 || res.rest.rss == 0 || res.rest.heap == 0 || res.restartPk.rss == 0 {
		t.Errorf("scale: a memory reading is missing: %+v %+v %+v", res.peak, res.rest, res.restartPk)
	}
	checkAgainstFloors(t, "scale", cfg.ownedFloorWorkers, cfg.controllerFloorWorkers, res.flips, cfg.scaleFlipReps)
}

// checkOwnedFloorFlips asserts that a measure (what) flipped reps times
// each way, the operator and the owned floor at each concurrency.
func checkOwnedFloorFlips(t *testing.T, what string, cfg config, res *flipSuiteResult, reps int) {
	t.Helper()
	checkAgainstFloors(t, what, cfg.ownedFloorWorkers, 0, res, reps)
}

// checkAgainstFloors asserts that the operator and each floor flipped reps
// times each way: the owned floor at each of owned workers and, with
// ctrlWorkers, the controller floor (againstOwnedFloor).
func checkAgainstFloors(t *testing.T, what string, owned []int, ctrlWorkers int, res *flipSuiteResult, reps int) {
	t.Helper()
	for _, active := range []bool{true, false} {
		if got := len(res.of("operator", &active)); got != reps {
			t.Errorf("%s: %d operator flips %s, want %d", what, got, direction(active), reps)
		}
		for _, w := range owned {
			if got := len(res.of(ownedFloorName(w), &active)); got != reps {
				t.Errorf("%s: %d owned-floor flips with %d workers %s, want %d", what, got, w, direction(active), reps)
			}
		}
		if ctrlWorkers > 0 {
			if got := len(res.of(controllerFloorName(ctrlWorkers), &active)); got != reps {
				t.Errorf("%s: %d controller-floor flips %s, want %d", what, got, direction(active), reps)
			}
		}
	}
}

// checkNotify asserts what the notifications measure must show whatever
// the machine: every flip ran, each notifier got one StateChanged and one
// FlipCompleted per flip and nothing else, and the notifiers wrote their
// status a few times per flip, never per follower.
func checkNotify(t *testing.T, cfg config, res *notifyResult) {
	t.Helper()
	if got := len(res.runs); got != 2*cfg.notifyReps {
		t.Errorf("notify: %d flips, want %d", got, 2*cfg.notifyReps)
	}
	if !res.exact() {
		for _, run := range res.runs {
			t.Errorf("notify: %s: notifications per notifier %v, want one StateChanged and one FlipCompleted each", direction(run.flip.active), run.counts)
		}
	}
	if !res.inOrder {
		t.Errorf("notify: after the outage the sinks received the changes out of order")
	}
	if w := res.maxNotifierWrites(); w > 4*notifiersPerFlip {
		t.Errorf("notify: %g writes of the notifiers' status in one flip of %d switches, want a few per notifier", w, res.n)
	}
}

// checkAnyOf asserts what the anyOf measure must show whatever the
// machine: every flip ran, and every switch's status showed both of its
// entries.
func checkAnyOf(t *testing.T, cfg config, res *anyOfResult) {
	t.Helper()
	checkAgainstFloors(t, "anyof", cfg.ownedFloorWorkers, cfg.controllerFloorWorkers, res.flips, cfg.anyOfFlipReps)
	if res.entriesShown != res.flips.n {
		t.Errorf("anyof: %d of %d statuses showed the flip and calm entries NotMatched after the last flip", res.entriesShown, res.flips.n)
	}
}

// percentile of sorted or unsorted durations (nearest rank).
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(math.Ceil(q*float64(len(s)))) - 1
	rank = max(0, min(rank, len(s)-1))
	return s[rank]
}

// median is the middle value (the mean of the two middle ones when even).
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// round prints a duration with three significant digits.
func round(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	case d < 100*time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond))
	case d < 10*time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d < 100*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	default:
		return fmt.Sprintf("%.0fs", d.Seconds())
	}
}

func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "?"
	}
	return f[0] + " " + f[1] + " " + f[2]
}

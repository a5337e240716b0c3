package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// The service state measure (BENCH_ONLY=service): states that follow a
// Service's ready endpoints. A local control plane has no kubelet and no
// EndpointSlice controller, so the bench writes the EndpointSlices itself,
// with 10.x addresses (the API server refuses loopback) that nothing ever
// requests. Three parts, each read against the bar the product sets for it
// (docs/benchmarks.md, "Service states"):
//
//   - the flip: the switches of one service state flipped by one update of
//     its Service's EndpointSlice, less the state's delay, against the
//     owned floor writing as many Ingresses;
//   - churn: states whose Services' slices churn without ever crossing
//     minReady, and the manager's write requests meanwhile (must be 0);
//   - memory: the manager with and without EndpointSlices that no state
//     follows.
const (
	serviceFlipNS  = "service-flip"
	serviceFloorNS = "service-floor-owned"
	serviceChurnNS = "service-churn"
	// serviceIdleNS holds the Services and EndpointSlices no state follows.
	serviceIdleNS = "service-unfollowed"
	// serviceName is the Service the flip's state follows, and each memory
	// phase's.
	serviceName = "app"
	// serviceDelay is the flip state's unavailableAfter and availableAfter:
	// short, so that a flip is mostly the operator's work, and taken off
	// every figure of the operator's flips.
	serviceDelay = 2 * time.Second
	// serviceFlipBar is the factor of the owned floor the flip, less the
	// delay, is to stay within each way (read, not asserted).
	serviceFlipBar = 1.2
	// serviceStatusSlack is how long after the delay the state's
	// lastUpdateTime may be, from the slice update.
	serviceStatusSlack = time.Second
	// serviceMemoryPerSlice is what each EndpointSlice no state follows may
	// add to the manager's memory: 10 MiB for 10 000 slices.
	serviceMemoryPerSlice = float64(10<<20) / 10000
	// serviceIdleEndpoints is how many ready endpoints each of those holds.
	serviceIdleEndpoints = 10
	// A churning Service's slice is rewritten after a pause of
	// churnPauseShortest up to churnPauseLongest.
	churnPauseShortest = 200 * time.Millisecond
	churnPauseLongest  = 500 * time.Millisecond
	// serviceReadings is how many memory readings (each after a garbage
	// collection) a phase's figure is the median of.
	serviceReadings = 5
)

// serviceResult is the service state measure.
type serviceResult struct {
	// The flip: setup from creating the state until every Ingress existed
	// and every DynamicIngress was Ready; the flips, the operator's less
	// serviceDelay (who "operator"), against the owned floor; and, each
	// way (active: the last ready endpoint gone), the state's
	// lastUpdateTime less each slice update's start, the delay included.
	setup       time.Duration
	flips       *flipSuiteResult
	statusAfter map[bool][]time.Duration
	churn       serviceChurnResult
	// memory: the manager without [0] and with [1] the slices no state
	// follows, created in idleCreated.
	memory      [2]serviceMemory
	idleCreated time.Duration
	idleSlices  int
	idleSvcs    int
}

// serviceMemory is one phase of the memory part: the manager at rest
// (each reading right after a garbage collection, once its RSS has
// settled in the full run), and its RSS right after the sync and at its
// peak (VmHWM), which hold for a while what the initial list of every
// Service and slice cost.
type serviceMemory struct {
	rest         memReading
	atSync, peak int64
	// settled: how long the bench asked for collections until the RSS
	// stopped falling (settleRSS).
	settled time.Duration
}

// serviceChurnResult is the churn part: what the bench wrote and what the
// manager did meanwhile.
type serviceChurnResult struct {
	states int
	window time.Duration
	// setup: from creating the Services until every state answered 200
	// and every switch was Ready (passive).
	setup time.Duration
	// updates: the slice updates the bench sent; minReady and maxReady:
	// the fewest and most ready endpoints a Service had after one.
	updates            int64
	minReady, maxReady int
	// managerWrites: the manager's own write requests by method and code
	// (rest_client_requests_total), from before the churn until no write
	// for a while after it; apiserver: every request kube-apiserver
	// counted over the same span (the bench's slice updates among them).
	managerWrites map[string]float64
	apiserver     requests
	// reconciles: the state controller's reconciles over the churn (the
	// manager did see the counts move); cores: its CPU over the window.
	reconciles float64
	cores      float64
	// unchanged: the states still answering 200, Ready EndpointsCounted,
	// with the lastUpdateTime and history they had before the churn.
	unchanged int
}

// writes sums the manager's write requests.
func (c serviceChurnResult) writes() float64 {
	total := 0.0
	for _, v := range c.managerWrites {
		total += v
	}
	return total
}

// writeSummary lists the manager's write requests as "PATCH 200: n".
func (c serviceChurnResult) writeSummary() string {
	if len(c.managerWrites) == 0 {
		return "none"
	}
	var parts []string
	for k, v := range c.managerWrites {
		parts = append(parts, fmt.Sprintf("%s: %g", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// serviceMeasure runs the three parts, each with a manager of its own.
func (b *bench) serviceMeasure(ctx context.Context) (*serviceResult, error) {
	res := &serviceResult{statusAfter: map[bool][]time.Duration{}, idleSlices: b.cfg.serviceIdleSlices, idleSvcs: b.cfg.serviceIdleServices}
	if err := b.serviceFlips(ctx, res); err != nil {
		return nil, err
	}
	if err := b.serviceChurn(ctx, res); err != nil {
		return nil, err
	}
	if err := b.serviceMemory(ctx, res); err != nil {
		return nil, err
	}
	return res, nil
}

// lastAddress is the last endpoint address handed out (freshAddresses).
var lastAddress atomic.Uint32

// freshAddresses returns n endpoint addresses not used before in the run,
// 10.x.y.z: the API server refuses loopback, and nothing ever requests
// them.
func freshAddresses(n int) []string {
	out := make([]string, n)
	for i := range out {
		a := lastAddress.Add(1)
		out[i] = fmt.Sprintf("10.%d.%d.%d", byte(a>>16), byte(a>>8), byte(a))
	}
	return out
}

// sliceName names the EndpointSlice k of a Service.
func sliceName(service string, k int) string { return fmt.Sprintf("%s-%02d", service, k) }

// createService creates the Service ns/name and one EndpointSlice per
// entry of ready, with that many ready endpoints at fresh addresses; it
// returns the slices as created.
func (b *bench) createService(ctx context.Context, ns, name string, ready ...int) ([]*discoveryv1.EndpointSlice, error) {
	if _, err := b.h.cs.CoreV1().Services(ns).Create(ctx, builders.Service(ns, name), metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	out := make([]*discoveryv1.EndpointSlice, 0, len(ready))
	for k, n := range ready {
		es := builders.EndpointSlice(ns, sliceName(name, k), name).Ready(freshAddresses(n)...).Obj()
		created, err := b.h.cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, es, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		out = append(out, created)
	}
	return out, nil
}

// deleteServices deletes a namespace's EndpointSlices and Services (there
// is no garbage collector here; Services have no deletecollection).
func (b *bench) deleteServices(ctx context.Context, ns string) error {
	if err := b.h.cs.DiscoveryV1().EndpointSlices(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return err
	}
	svcs, err := b.h.cs.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	return parallel(len(svcs.Items), 32, func(i int) error {
		return client.IgnoreNotFound(b.h.cs.CoreV1().Services(ns).Delete(ctx, svcs.Items[i].Name, metav1.DeleteOptions{}))
	})
}

// serviceFlipState is the state the flip's switches follow: the Service
// serviceName of ns, both delays serviceDelay.
func serviceFlipState(ns string) *v1beta1.DynamicIngressState {
	return builders.ServiceState(ns, flipStateName, serviceName).UnavailableAfter(serviceDelay).AvailableAfter(serviceDelay).Obj()
}

// serviceFlips sets up cfg.serviceFlipN switches following the flip's
// service state, its Service with two ready endpoints, and flips them
// cfg.serviceFlipReps times each way against the owned floor, in rounds
// whose order rotates.
func (b *bench) serviceFlips(ctx context.Context, res *serviceResult) error {
	h, cfg := b.h, b.cfg
	op := switches{namespaces: []string{serviceFlipNS}, n: cfg.serviceFlipN, service: true}
	floor := inNamespace(serviceFloorNS, cfg.serviceFlipN)
	m, err := h.startManager(managerOptions{})
	if err != nil {
		return err
	}
	defer func() { m.stop() }()
	if err := h.ensureNamespace(ctx, serviceFlipNS); err != nil {
		return err
	}
	if _, err := b.createService(ctx, serviceFlipNS, serviceName, 2); err != nil {
		return err
	}
	b.progress("service: creating the state following Service %s and %d DynamicIngresses", serviceName, op.n)
	if res.setup, err = b.setupOperator(ctx, op); err != nil {
		return err
	}
	b.progress("service: all Ready after %s; creating the owned floor's Ingresses", round(res.setup))
	own, err := b.setupOwnedFloor(ctx, floor)
	if err != nil {
		return err
	}
	if _, err := b.waitQuiet(ctx, 2*cfg.quiet, 60*time.Second); err != nil {
		return err
	}
	res.flips = &flipSuiteResult{n: op.n}
	for rep := range cfg.serviceFlipReps {
		steps := []func() error{b.serviceOperatorStep(ctx, rep, op, m, res)}
		for _, w := range cfg.ownedFloorWorkers {
			steps = append(steps, b.floorStep(ctx, "service flip", rep, floor, w, own, res.flips))
		}
		if err := b.runRound(ctx, rep, steps); err != nil {
			return err
		}
	}
	if err := m.check(); err != nil {
		return err
	}
	m.stop()
	for _, ns := range []string{serviceFlipNS, serviceFloorNS} {
		if err := h.clearNamespace(ctx, ns); err != nil {
			return err
		}
	}
	return b.deleteServices(ctx, serviceFlipNS)
}

// serviceOperatorStep is the operator's step of round rep: the last ready
// endpoint taken away (to active) and ready endpoints back (to passive).
func (b *bench) serviceOperatorStep(ctx context.Context, rep int, s switches, m *managerProc, res *serviceResult) func() error {
	return func() error {
		for _, active := range []bool{true, false} {
			run, statusAfter, err := b.serviceFlip(ctx, s, active, m)
			if err != nil {
				return err
			}
			res.flips.add(run)
			res.statusAfter[active] = append(res.statusAfter[active], statusAfter)
			b.progress("service flip %s round %d %s: operator %s less the %s delay (%s; CPU s until then %s), state's lastUpdateTime %s after the update, statuses %s; writes: %s",
				s, rep+1, direction(active), round(run.total), serviceDelay, run.arrivals(), run.cpuArrived,
				round(statusAfter), round(run.statusDone), run.reqs.writeSummary())
		}
		return nil
	}
}

// serviceFlip updates the flip's EndpointSlice once: to active its two
// endpoints turn not ready (the Service's last ready endpoints gone, so
// the state answers 503, which the switches expect), to passive two ready
// endpoints at fresh addresses replace them. It times the Ingresses, the
// statuses and the requests from the update as operatorFlip does from its
// edit, every figure less serviceDelay, and returns besides how long after
// the update's start the state's lastUpdateTime is (the delay included).
func (b *bench) serviceFlip(ctx context.Context, s switches, active bool, m *managerProc) (flipRun, time.Duration, error) {
	h, n, ns := b.h, s.n, s.namespaces[0]
	run := flipRun{who: "operator", n: n, active: active}
	esClient := h.cs.DiscoveryV1().EndpointSlices(ns)
	slice, err := esClient.Get(ctx, sliceName(serviceName, 0), metav1.GetOptions{})
	if err != nil {
		return run, 0, err
	}
	w := builders.EndpointSlice(ns, slice.Name, serviceName)
	if active {
		for _, ep := range slice.Endpoints {
			w.NotReady(ep.Addresses...)
		}
	} else {
		w.Ready(freshAddresses(2)...)
	}
	slice.Endpoints = w.Obj().Endpoints

	ingW, err := b.watchFlip(ctx, s, active)
	if err != nil {
		return run, 0, err
	}
	defer ingW.stop()
	diW, err := s.watchArrivals(ctx, b.switchObjects, diSettled(active))
	if err != nil {
		return run, 0, err
	}
	defer diW.stop()
	stW, err := watchArrivals(ctx, states(h, ns), 1, stateCode(flipStateName, stateCodeFor(!active)))
	if err != nil {
		return run, 0, err
	}
	defer stW.stop()
	before, err := h.apiserverMetrics(ctx)
	if err != nil {
		return run, 0, err
	}
	if err := b.collectAPIServerGarbage(ctx); err != nil {
		return run, 0, err
	}
	cpu0 := h.cpu(m)
	t0 := time.Now()
	run.start = t0
	ingW.startAt(t0)
	diW.startAt(t0)
	stW.startAt(t0)
	if _, err := esClient.Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
		return run, 0, err
	}
	if os.Getenv("BENCH_PROFILE") != "" {
		// The profiles cover the flip's work, after the delay: the
		// watches time the arrivals meanwhile.
		time.Sleep(time.Until(t0.Add(serviceDelay)))
		name := fmt.Sprintf("service-%d-%s", n, direction(active))
		defer b.profileAPIServer(ctx, "operator-"+name)()
		defer b.profileManager(m, "manager-"+name)()
	}
	timeout := flipTimeout(n, 100*time.Millisecond)
	if err := ingW.wait(timeout); err != nil {
		return run, 0, fmt.Errorf("service flip %s of %d: %w (%v)", direction(active), n, err, m.check())
	}
	run.cpuArrived = h.cpu(m).sub(cpu0)
	if err := diW.wait(timeout); err != nil {
		return run, 0, fmt.Errorf("service flip %s of %d, statuses: %w (%v)", direction(active), n, err, m.check())
	}
	if err := stW.wait(timeout); err != nil {
		return run, 0, err
	}
	run.cpu = h.cpu(m).sub(cpu0)
	run.summarize(lessDelay(ingW.durations()))
	run.statusDone = maxDuration(diW.durations()) - serviceDelay
	run.statusFirst = minDuration(diW.durations()) - serviceDelay
	run.stateStatus = maxDuration(stW.durations()) - serviceDelay
	var st v1beta1.DynamicIngressState
	if err := h.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: flipStateName}, &st); err != nil {
		return run, 0, err
	}
	if st.Status.LastUpdateTime == nil {
		return run, 0, fmt.Errorf("service flip %s: the state's status has no lastUpdateTime", direction(active))
	}
	statusAfter := st.Status.LastUpdateTime.Sub(t0)
	after, err := b.waitQuiet(ctx, b.cfg.quiet, 20*time.Second)
	if err != nil {
		return run, 0, err
	}
	run.reqs = requestCounts(after).sub(requestCounts(before))
	return run, statusAfter, nil
}

// lessDelay takes serviceDelay off every arrival.
func lessDelay(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d - serviceDelay
	}
	return out
}

// churnService is one churning Service: its name, its two slices as last
// written and their ready endpoints.
type churnService struct {
	name   string
	slices [2]*discoveryv1.EndpointSlice
	ready  [2]int
}

func churnServiceName(i int) string { return fmt.Sprintf("app-%03d", i) }
func churnStateName(i int) string   { return fmt.Sprintf("state-%03d", i) }

// stateAnswers matches any state of the namespace whose status answers
// code, Ready with EndpointsCounted.
func stateAnswers(code string) func(runtime.Object) (string, bool) {
	return func(o runtime.Object) (string, bool) {
		s, ok := o.(*v1beta1.DynamicIngressState)
		if !ok {
			return "", false
		}
		c := meta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionReady)
		return s.Name, s.Status.StatusCode == code && c != nil && c.Reason == v1beta1.ReasonEndpointsCounted
	}
}

// serviceChurn creates cfg.serviceChurnStates states, each following a
// Service of its own with minReady 1 and both delays 0s (so that any dip
// the manager counted below minReady would write at once), and a switch
// following each; then every Service's two slices are rewritten in turn
// for cfg.serviceChurnWindow, one every 200-500 ms per Service, each time
// with 1-3 ready endpoints (2-6 for the Service) and up to one not ready,
// all at fresh addresses. It counts the manager's write requests from
// before the churn until no write for a while after it.
func (b *bench) serviceChurn(ctx context.Context, res *serviceResult) error {
	h, cfg := b.h, b.cfg
	k, ns := cfg.serviceChurnStates, serviceChurnNS
	c := &res.churn
	c.states, c.window = k, cfg.serviceChurnWindow
	m, err := h.startManager(managerOptions{metrics: true})
	if err != nil {
		return err
	}
	defer func() { m.stop() }()
	if err := h.ensureNamespace(ctx, ns); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	svcs := make([]*churnService, k)
	for i := range svcs {
		svcs[i] = &churnService{name: churnServiceName(i), ready: [2]int{1 + rng.IntN(3), 1 + rng.IntN(3)}}
	}
	ingW, err := watchArrivals(ctx, b.ingresses(ns), k, ingressShape(false))
	if err != nil {
		return err
	}
	defer ingW.stop()
	diW, err := watchArrivals(ctx, b.switchObjects(ns), k, diSettled(false))
	if err != nil {
		return err
	}
	defer diW.stop()
	stW, err := watchArrivals(ctx, states(h, ns), k, stateAnswers("200"))
	if err != nil {
		return err
	}
	defer stW.stop()
	t0 := time.Now()
	b.progress("service churn: creating %d Services of two EndpointSlices, a state following each and a switch following each state", k)
	if err := parallel(k, 16, func(i int) error {
		sv := svcs[i]
		created, err := b.createService(ctx, ns, sv.name, sv.ready[0], sv.ready[1])
		if err != nil {
			return err
		}
		sv.slices = [2]*discoveryv1.EndpointSlice{created[0], created[1]}
		st := builders.ServiceState(ns, churnStateName(i), sv.name).MinReady(1).UnavailableAfter(0).AvailableAfter(0).Obj()
		if err := h.c.Create(ctx, st); err != nil {
			return err
		}
		return h.c.Create(ctx, (&builders.DynamicIngressWrapper{DynamicIngress: *dynamicIngress(ns, objName(i), churnStateName(i))}).ExpectCode("503").Obj())
	}); err != nil {
		return fmt.Errorf("service churn: creating the Services, states and switches: %w", err)
	}
	timeout := flipTimeout(k, 100*time.Millisecond)
	for what, a := range map[string]*arrivals{"states answering 200": stW, "Ingresses": ingW, "switches Ready": diW} {
		if err := a.wait(timeout); err != nil {
			return fmt.Errorf("service churn: waiting for the %s: %w (%v)", what, err, m.check())
		}
	}
	c.setup = time.Since(t0)
	if _, err := b.waitQuiet(ctx, 2*cfg.quiet, 60*time.Second); err != nil {
		return err
	}
	var list v1beta1.DynamicIngressStateList
	if err := h.c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return err
	}
	before := map[string]v1beta1.DynamicIngressStateStatus{}
	for _, s := range list.Items {
		before[s.Name] = s.Status
	}
	mBefore, err := scrapeURL(ctx, m.metricsURL, []string{"rest_client_requests_total", "controller_runtime_reconcile_total"})
	if err != nil {
		return err
	}
	aBefore, err := h.apiserverMetrics(ctx)
	if err != nil {
		return err
	}
	b.progress("service churn: %d states answering 200 after %s; churning their slices for %s", k, round(c.setup), c.window)
	cpu0, w0 := cpuSeconds(m.Pid()), time.Now()
	deadline := w0.Add(c.window)
	var updates atomic.Int64
	var mu sync.Mutex
	c.minReady, c.maxReady = 1<<30, 0
	esClient := h.cs.DiscoveryV1().EndpointSlices(ns)
	if err := parallel(k, k, func(i int) error {
		sv := svcs[i]
		rng := rand.New(rand.NewPCG(uint64(i), 3))
		for {
			pause := churnPauseShortest + time.Duration(rng.Int64N(int64(churnPauseLongest-churnPauseShortest)))
			if time.Now().Add(pause).After(deadline) {
				return nil
			}
			time.Sleep(pause)
			j, ready := rng.IntN(2), 1+rng.IntN(3)
			w := builders.EndpointSlice(ns, sv.slices[j].Name, sv.name).Ready(freshAddresses(ready)...).NotReady(freshAddresses(rng.IntN(2))...)
			es := sv.slices[j].DeepCopy()
			es.Endpoints = w.Obj().Endpoints
			updated, err := esClient.Update(ctx, es, metav1.UpdateOptions{})
			if err != nil {
				return err
			}
			sv.slices[j], sv.ready[j] = updated, ready
			updates.Add(1)
			total := sv.ready[0] + sv.ready[1]
			mu.Lock()
			c.minReady, c.maxReady = min(c.minReady, total), max(c.maxReady, total)
			mu.Unlock()
		}
	}); err != nil {
		return fmt.Errorf("service churn: updating the slices: %w", err)
	}
	c.cores = (cpuSeconds(m.Pid()) - cpu0) / time.Since(w0).Seconds()
	c.updates = updates.Load()
	aAfter, err := b.waitQuiet(ctx, 2*cfg.quiet, 30*time.Second)
	if err != nil {
		return err
	}
	mAfter, err := scrapeURL(ctx, m.metricsURL, []string{"rest_client_requests_total", "controller_runtime_reconcile_total"})
	if err != nil {
		return err
	}
	c.apiserver = requestCounts(aAfter).sub(requestCounts(aBefore))
	c.managerWrites = managerWrites(mBefore, mAfter)
	st := map[string]string{"controller": "dynamicingressstate"}
	c.reconciles = mAfter.sum("controller_runtime_reconcile_total", st) - mBefore.sum("controller_runtime_reconcile_total", st)
	if err := h.c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return err
	}
	for _, s := range list.Items {
		was := before[s.Name]
		if _, ok := stateAnswers("200")(&s); ok && s.Status.LastUpdateTime.Equal(was.LastUpdateTime) && len(s.Status.History) == len(was.History) {
			c.unchanged++
		}
	}
	b.progress("service churn: %d slice updates (ready endpoints per Service %d-%d); manager writes %g (%s), state reconciles %.0f, CPU %.2f cores; %d of %d states unchanged",
		c.updates, c.minReady, c.maxReady, c.writes(), c.writeSummary(), c.reconciles, c.cores, c.unchanged, k)
	if err := m.check(); err != nil {
		return err
	}
	m.stop()
	if err := h.clearNamespace(ctx, ns); err != nil {
		return err
	}
	return b.deleteServices(ctx, ns)
}

// managerWrites is the manager's write requests between two scrapes of
// its metrics, by "METHOD code" (client-go's rest_client_requests_total:
// every client of the process, the reflectors' included).
func managerWrites(before, after metrics) map[string]float64 {
	out := map[string]float64{}
	add := func(m metrics, sign float64) {
		for _, s := range m {
			if s.name == "rest_client_requests_total" && writeVerbs[s.labels["method"]] {
				out[s.labels["method"]+" "+s.labels["code"]] += sign * s.value
			}
		}
	}
	add(after, 1)
	add(before, -1)
	for k, v := range out {
		if v == 0 {
			delete(out, k)
		}
	}
	return out
}

// forceGC has the manager collect its garbage: its heap profile with gc=1,
// thrown away.
func forceGC(ctx context.Context, m *managerProc) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.pprofURL+"/heap?gc=1", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s/heap?gc=1: %s", m.pprofURL, resp.Status)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// serviceMemory reads the manager's memory after sync without, then with,
// cfg.serviceIdleSlices EndpointSlices of cfg.serviceIdleServices Services
// (each existing) that no state follows. Each phase is a manager of its
// own with one switch following a service state of its own, as the flip
// measure's: it is Ready only once the manager has listed every Service
// and slice. The figures are medians of serviceReadings readings, each
// right after a garbage collection the bench asks for.
func (b *bench) serviceMemory(ctx context.Context, res *serviceResult) error {
	h, cfg := b.h, b.cfg
	sample := func(phase int) (serviceMemory, error) {
		var out serviceMemory
		m, err := h.startManager(managerOptions{metrics: true, pprof: true})
		if err != nil {
			return out, err
		}
		defer m.stop()
		if m.pprofURL == "" {
			return out, fmt.Errorf("the manager has no --pprof-bind-address: no garbage collection on demand")
		}
		ns := fmt.Sprintf("service-memory-%d", phase)
		if err := h.ensureNamespace(ctx, ns); err != nil {
			return out, err
		}
		if _, err := b.createService(ctx, ns, serviceName, 2); err != nil {
			return out, err
		}
		if _, err := b.setupOperator(ctx, switches{namespaces: []string{ns}, n: 1, service: true}); err != nil {
			return out, err
		}
		out = serviceMemory{atSync: rssBytes(m.Pid()), peak: procStatusBytes(m.Pid(), "VmHWM:")}
		// What the sync freed goes back to the system over the
		// collections that follow: in the full run, wait until the RSS
		// stops falling before the readings.
		if out.settled, err = settleRSS(ctx, m, cfg.gcWait); err != nil {
			return out, err
		}
		time.Sleep(cfg.settle)
		var rss, heap, live []float64
		for range serviceReadings {
			if err := forceGC(ctx, m); err != nil {
				return out, err
			}
			mm, err := scrapeURL(ctx, m.metricsURL, []string{"go_memstats_heap_alloc_bytes", "go_gc_heap_live_bytes"})
			if err != nil {
				return out, err
			}
			rss = append(rss, float64(rssBytes(m.Pid())))
			heap = append(heap, mm.sum("go_memstats_heap_alloc_bytes", nil))
			live = append(live, mm.sum("go_gc_heap_live_bytes", nil))
			time.Sleep(cfg.settle / serviceReadings)
		}
		out.rest = memReading{rss: int64(medianFloat(rss)), heap: medianFloat(heap), live: medianFloat(live)}
		if err := m.check(); err != nil {
			return out, err
		}
		b.heapProfile(m, fmt.Sprintf("heap-service-memory-%d", phase))
		m.stop()
		if err := h.clearNamespace(ctx, ns); err != nil {
			return out, err
		}
		return out, b.deleteServices(ctx, ns)
	}
	var err error
	if res.memory[0], err = sample(0); err != nil {
		return err
	}
	b.progress("service memory: without the slices: %s", res.memory[0])
	if err := h.ensureNamespace(ctx, serviceIdleNS); err != nil {
		return err
	}
	per := max(1, res.idleSlices/res.idleSvcs)
	t0 := time.Now()
	if err := parallel(res.idleSvcs, 64, func(i int) error {
		// Headless: envtest's Service range holds a few hundred cluster IPs.
		svc := builders.Service(serviceIdleNS, fmt.Sprintf("svc-%05d", i))
		svc.Spec.ClusterIP = corev1.ClusterIPNone
		_, err := h.cs.CoreV1().Services(serviceIdleNS).Create(ctx, svc, metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("service memory: creating %d Services: %w", res.idleSvcs, err)
	}
	if err := parallel(res.idleSlices, 64, func(i int) error {
		svc := fmt.Sprintf("svc-%05d", i/per)
		es := builders.EndpointSlice(serviceIdleNS, sliceName(svc, i%per), svc).Ready(freshAddresses(serviceIdleEndpoints)...).Obj()
		_, err := h.cs.DiscoveryV1().EndpointSlices(serviceIdleNS).Create(ctx, es, metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("service memory: creating %d EndpointSlices: %w", res.idleSlices, err)
	}
	res.idleCreated = time.Since(t0)
	b.progress("service memory: created %d Services and %d EndpointSlices in %s", res.idleSvcs, res.idleSlices, round(res.idleCreated))
	if res.memory[1], err = sample(1); err != nil {
		return err
	}
	b.progress("service memory: with %d slices no state follows: %s", res.idleSlices, res.memory[1])
	return b.deleteServices(ctx, serviceIdleNS)
}

// settleRSS asks for a collection every rssSettleGCEvery, up to limit
// (0: none), until the RSS has fallen by at most rssSettleBand over the
// last rssSettleCycles collections: the runtime returns freed memory to
// the system only pages that stayed free over collections, so what a
// sync freed leaves the RSS over a few of them. It returns how long that
// took.
func settleRSS(ctx context.Context, m *managerProc, limit time.Duration) (time.Duration, error) {
	if limit == 0 {
		return 0, nil
	}
	start := time.Now()
	var rss []int64
	for time.Since(start) < limit {
		if err := forceGC(ctx, m); err != nil {
			return 0, err
		}
		time.Sleep(rssSettleGCEvery)
		rss = append(rss, rssBytes(m.Pid()))
		if n := len(rss); n > rssSettleCycles && rss[n-1-rssSettleCycles]-rss[n-1] <= rssSettleBand {
			break
		}
	}
	return time.Since(start), nil
}

// How settleRSS waits for the RSS to settle.
const (
	rssSettleGCEvery = 5 * time.Second
	rssSettleCycles  = 3
	rssSettleBand    = 512 << 10
)

// String is the phase's figures for the progress lines.
func (m serviceMemory) String() string {
	return fmt.Sprintf("live heap %s, heap_alloc %s, RSS %s at rest (after %s of collections), %s right after the sync, peak %s",
		mib(int64(m.rest.live)), mib(int64(m.rest.heap)), mib(m.rest.rss), round(m.settled), mib(m.atSync), mib(m.peak))
}

// memoryBar is what the slices no state follows may add to the manager's
// memory.
func (r *serviceResult) memoryBar() int64 {
	return int64(float64(r.idleSlices) * serviceMemoryPerSlice)
}

// statusBar is how long after the slice update the state's lastUpdateTime
// may be.
const statusBar = serviceDelay + serviceStatusSlack

// delta prints a difference of memory as "+1.2 MiB".
func delta(with, without int64) string {
	return fmt.Sprintf("%+.1f MiB", float64(with-without)/(1<<20))
}

// measureBar is one bar of a measure: what it holds, the figure, the bar
// and whether the figure met it.
type measureBar struct {
	what, figure, bar string
	met               bool
}

// bars are the measure's bars, each with its figure.
func (r *serviceResult) bars(workers []int) []measureBar {
	var out []measureBar
	for _, active := range []bool{true, false} {
		op := figures(r.flips.of("operator", &active))
		if best, bf := r.flips.ownedFloorBest(workers, active); best != 0 {
			q := op.total.Seconds() / bf.total.Seconds()
			out = append(out, measureBar{fmt.Sprintf("flip %s, less the delay, ÷ the owned floor (medians of %d)", serviceDirection(active), op.flips),
				durRatio(op.total, bf.total), fmt.Sprintf("at most %.1f×", serviceFlipBar), q <= serviceFlipBar})
		}
		worst := maxDuration(r.statusAfter[active])
		out = append(out, measureBar{fmt.Sprintf("flip %s: the state's lastUpdateTime after the slice update (max of %d)", serviceDirection(active), len(r.statusAfter[active])),
			round(worst), "at most " + round(statusBar), worst <= statusBar})
	}
	out = append(out, measureBar{fmt.Sprintf("churn of %d Services' slices for %s: the manager's write requests", r.churn.states, r.churn.window),
		fmt.Sprintf("%g", r.churn.writes()), "0", r.churn.writes() == 0})
	bar := fmt.Sprintf("at most +%.1f MiB", float64(r.memoryBar())/(1<<20))
	without, with := r.memory[0], r.memory[1]
	for _, x := range []struct {
		what       string
		with, base int64
	}{
		{"the manager's live heap after a GC", int64(with.rest.live), int64(without.rest.live)},
		{"the manager's RSS at rest", with.rest.rss, without.rest.rss},
		{"the manager's peak RSS (VmHWM)", with.peak, without.peak},
	} {
		out = append(out, measureBar{fmt.Sprintf("%d EndpointSlices no state follows: %s", r.idleSlices, x.what), delta(x.with, x.base), bar, x.with-x.base <= r.memoryBar()})
	}
	return out
}

// serviceDirection says what a direction of the flip is.
func serviceDirection(active bool) string {
	if active {
		return "to active (the last ready endpoint gone)"
	}
	return "to passive (ready endpoints back)"
}

// summaryRows adds the measure's figures beside their baselines.
func (r *serviceResult) summaryRows(sum *table, workers []int) {
	// No controller floor here: a slice update and its delay start this flip.
	r.flips.ownedFloorRows(sum, workers, 0, func(active bool, flips int) string {
		return fmt.Sprintf("service state: flip N=%d %s, slice update → every Ingress arrived, less the %s delay (bar: within %.1f×; median of %d)",
			r.flips.n, serviceDirection(active), serviceDelay, serviceFlipBar, flips)
	})
	for _, active := range []bool{true, false} {
		worst := maxDuration(r.statusAfter[active])
		sum.add(fmt.Sprintf("service state: flip N=%d %s, slice update → the state's lastUpdateTime, max of %d", r.flips.n, serviceDirection(active), len(r.statusAfter[active])),
			round(worst), fmt.Sprintf("required at most (the %s delay + %s)", serviceDelay, serviceStatusSlack), round(statusBar), durRatio(worst, statusBar))
	}
	c := r.churn
	sum.add(fmt.Sprintf("service state: %d states, their Services' slices churning for %s (%d updates, %d-%d ready endpoints, minReady 1): the manager's write requests", c.states, c.window, c.updates, c.minReady, c.maxReady),
		fmt.Sprintf("%g", c.writes()), "required", "0", ratio(c.writes(), 0))
	bar := mib(r.memoryBar())
	without, with := r.memory[0], r.memory[1]
	for _, x := range []struct {
		what       string
		with, base int64
	}{
		{"live heap after a GC", int64(with.rest.live), int64(without.rest.live)},
		{"RSS at rest", with.rest.rss, without.rest.rss},
		{"peak RSS (VmHWM)", with.peak, without.peak},
	} {
		sum.add(fmt.Sprintf("service state: manager %s, %d EndpointSlices of %d Services no state follows (bar: at most +%s)", x.what, r.idleSlices, r.idleSvcs, bar),
			mib(x.with), "the same manager without them", mib(x.base), ratio(float64(x.with), float64(x.base))+" ("+delta(x.with, x.base)+")")
	}
}

// markdown is the measure's section of the report.
func (r *serviceResult) markdown(cfg config) string {
	var sb strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	w("#### Service states: a flip by an EndpointSlice, churn, and slices no state follows\n\n")
	w("The bench writes the EndpointSlices itself (no kubelet and no EndpointSlice controller here), with 10.x addresses nothing requests. ")
	w("**Flip**: %d DynamicIngresses expecting 503 follow one state whose `spec.service` follows a Service with one slice of two ready endpoints (unavailableAfter and availableAfter %s); all were Ready %s after the state's create. ",
		r.flips.n, serviceDelay, round(r.setup))
	w("To active, one update of the slice turns both endpoints not ready; to passive, one update puts two ready endpoints at new addresses in their place. ")
	w("The operator's figures run from the update's start, less the %s delay; the owned floor writes %d Ingresses in a namespace of its own, in rounds whose order rotates. ", serviceDelay, r.flips.n)
	w("CPU includes the delay.\n\n")
	t := r.flips.ownedFloorTable(cfg.ownedFloorWorkers)
	for _, row := range t.rows {
		if row[2] == writerName("operator") {
			row[2] = fmt.Sprintf("operator (slice update → Ingresses, less %s)", serviceDelay)
		}
	}
	w("%s\n", t)
	st := &table{header: []string{"direction", "flips", "slice update → the state's lastUpdateTime: median", "max", "required at most"}}
	for _, active := range []bool{true, false} {
		d := r.statusAfter[active]
		st.add(serviceDirection(active), fmt.Sprint(len(d)), round(median(d)), round(maxDuration(d)), round(statusBar))
	}
	w("%s\n", st)
	c := r.churn
	w("**Churn**: %d states of one namespace, each following a Service of its own with minReady 1 and both delays 0s (so that a count below minReady would write at once), a switch following each; all answered 200 %s after the Services' create. ",
		c.states, round(c.setup))
	w("Each Service has two slices; for %s each Service's slices are rewritten, one at a time, every %s-%s, each time with 1-3 ready endpoints and up to one not ready, all at new addresses: %d updates, %d-%d ready endpoints per Service. ",
		c.window, churnPauseShortest, churnPauseLongest, c.updates, c.minReady, c.maxReady)
	w("The manager's write requests are its own `rest_client_requests_total` (every client of its process) from before the churn until no write for %s after it: %g (%s). ", 2*cfg.quiet, c.writes(), c.writeSummary())
	w("kube-apiserver counted over the same span: %s. The state controller reconciled %.0f times (the counts moved; the answers did not), the manager used %.2f cores; %d of %d states kept their lastUpdateTime and history.\n\n",
		c.apiserver.writeSummary(), c.reconciles, c.cores, c.unchanged, c.states)
	w("**Memory**: the manager after sync (one switch following a service state of its own is Ready, so every Service and slice was listed), with 0, then %d EndpointSlices of %d ready endpoints each in %d Services that exist and no state follows (headless: envtest's Service range holds a few hundred cluster IPs; created in %s). ",
		r.idleSlices, serviceIdleEndpoints, r.idleSvcs, round(r.idleCreated))
	w("RSS (VmRSS) right after the sync and the peak (VmHWM) come first. Then, in the full run, the bench asks for a garbage collection (`/debug/pprof/heap?gc=1`, `--pprof-bind-address`) every %s until the RSS has fallen by at most %s over %d of them, %s at most (the runtime returns to the system only pages that stayed free over collections, so what the sync freed leaves over a few), ",
		rssSettleGCEvery, mib(rssSettleBand), rssSettleCycles, cfg.gcWait)
	w("and takes %d readings, each right after a collection: `go_gc_heap_live_bytes`, `go_memstats_heap_alloc_bytes` and RSS at rest, medians.\n\n", serviceReadings)
	mt := &table{header: []string{"", "live heap after a GC", "heap_alloc", "RSS at rest", "collections until the RSS settled", "RSS right after the sync", "peak RSS (VmHWM)"}}
	for i, name := range []string{"without the slices", fmt.Sprintf("with %d slices", r.idleSlices)} {
		m := r.memory[i]
		mt.add(name, mib(int64(m.rest.live)), mib(int64(m.rest.heap)), mib(m.rest.rss), round(m.settled), mib(m.atSync), mib(m.peak))
	}
	without, with := r.memory[0], r.memory[1]
	mt.add("difference", delta(int64(with.rest.live), int64(without.rest.live)), delta(int64(with.rest.heap), int64(without.rest.heap)), delta(with.rest.rss, without.rest.rss),
		"", delta(with.atSync, without.atSync), delta(with.peak, without.peak))
	w("%s\n", mt)
	w("%s", barTable(r.bars(cfg.ownedFloorWorkers)))
	return sb.String()
}

// barTable is a measure's bars as the report shows them: each figure, its
// bar and whether it was met.
func barTable(bars []measureBar) *table {
	t := &table{header: []string{"bar", "figure", "required", "met"}}
	for _, b := range bars {
		met := "yes"
		if !b.met {
			met = "**no**"
		}
		t.add(b.what, b.figure, b.bar, met)
	}
	return t
}

// checkService asserts what the service state measure must show whatever
// the machine: every flip ran and timed the state's status, the churn
// churned and the manager wrote nothing meanwhile (as a restart must
// write nothing, checkScale), the states kept their answer, and every
// memory reading is there. The flip's and the memory's bars are read, not
// asserted.
func checkService(t *testing.T, cfg config, res *serviceResult) {
	t.Helper()
	checkOwnedFloorFlips(t, "service", cfg, res.flips, cfg.serviceFlipReps)
	for _, active := range []bool{true, false} {
		if got := len(res.statusAfter[active]); got != cfg.serviceFlipReps {
			t.Errorf("service: %d state status times %s, want %d", got, direction(active), cfg.serviceFlipReps)
		}
	}
	c := res.churn
	if c.updates == 0 || c.reconciles == 0 {
		t.Errorf("service: the churn sent %d slice updates and the manager reconciled its states %g times, want some of each", c.updates, c.reconciles)
	}
	if c.writes() != 0 {
		t.Errorf("service: the manager wrote %g times while %d Services' slices churned (%s), want 0", c.writes(), c.states, c.writeSummary())
	}
	if c.unchanged != c.states {
		t.Errorf("service: %d of %d states kept their answer, lastUpdateTime and history through the churn", c.unchanged, c.states)
	}
	for i, m := range res.memory {
		if m.rest.rss == 0 || m.rest.live == 0 || m.rest.heap == 0 || m.atSync == 0 || m.peak == 0 {
			t.Errorf("service: memory reading %d is missing: %+v", i, m)
		}
	}
}

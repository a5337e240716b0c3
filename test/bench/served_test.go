package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// The served measure (BENCH_ONLY=served): switches with spec.served, one
// host each, behind a real Traefik on loopback. A flip is timed from the
// state's edit until an outside client, requesting every host through
// Traefik, gets the new shape from the last one; beside it the owned floor
// writes the same Ingress changes and the same client waits for the same
// Traefik, which is the proxy's own floor (its reload throttle included).
// Each switch's Served condition is timed from when the client saw its host
// served.

// The two shapes of a served switch's host: passive goes to a backend
// answering 200 "open", active to one answering 503 "maintenance". Both
// are LoopbackServices (ExternalName 127.0.0.1) of the switch's namespace.
const (
	servedOpenService  = "open"
	servedSorryService = "sorry"
	servedOpenBody     = "open"
	servedSorryBody    = "maintenance"
)

// traefikThrottle is Traefik's default providersThrottleDuration: after it
// applies a configuration it takes the next one no sooner than this.
const traefikThrottle = 2 * time.Second

// servedConditionBar is how long after its host is served a switch's
// Served condition should be True.
const servedConditionBar = 1500 * time.Millisecond

// servedRun is one served flip of n hosts by one writer.
type servedRun struct {
	who    string
	n      int
	active bool
	// served: from the edit (a floor: its first request) until the outside
	// client saw the last host answer with the new shape; firstServed the
	// first host.
	served, firstServed time.Duration
	// firstWrite and lastWrite: when an Ingress watch saw the first and
	// the last target in the new shape.
	firstWrite, lastWrite time.Duration
	// reloads are the groups of hosts Traefik began serving together
	// (reloadGroups).
	reloads []reloadGroup
	// missedFrom: the earliest write of a host served after the main
	// reload (the one that served the most hosts; 0 when none was), and
	// caughtTo the latest write of a host served by it or before: the
	// main reload's snapshot of the Ingresses was taken in between.
	missedFrom, caughtTo time.Duration
	// cpu is the CPU time of each process, Traefik's too, from the edit
	// (the first request) until the last host was served.
	cpu cpuSnapshot
	// Operator only: from each host served (client-seen) until its
	// switch's Served condition was True for the new mode (watch-seen);
	// split in two at when the manager's check saw the host served (its
	// target's write, watch-seen, plus status.served.after): from the host
	// served until the check saw it (detectDelays), then until the
	// condition was True (statusDelays).
	conditionDelays, detectDelays, statusDelays []time.Duration
	// reqs: the operator's writes of the flip, from the edit until no
	// write for a while after the last Served condition (each switch's
	// status patches among them: one a switch when its status waited for
	// its check, two when it was written Checking first).
	reqs requests
}

// reloadGroup is a reload of Traefik as the outside client saw it: the
// first host it served and how many hosts it served.
type reloadGroup struct {
	at    time.Duration
	hosts int
}

// reloadWindow is how long after a reload's first host the client may see
// its last: Traefik takes a configuration at most every traefikThrottle,
// and the client sees one reload's hosts within a sweep of them all (a
// few hundred milliseconds for 500 hosts on a busy machine).
const reloadWindow = traefikThrottle - 500*time.Millisecond

// reloadGroups groups the hosts' served times by reload: a host served
// reloadWindow or more after the current group's first host begins the
// next group.
func reloadGroups(served []time.Duration) []reloadGroup {
	s := slices.Clone(served)
	slices.Sort(s)
	var out []reloadGroup
	for _, d := range s {
		if len(out) == 0 || d-out[len(out)-1].at >= reloadWindow {
			out = append(out, reloadGroup{at: d})
		}
		out[len(out)-1].hosts++
	}
	return out
}

// reloadsString is "0.11s: 4, 2.11s: 496".
func reloadsString(groups []reloadGroup) string {
	parts := make([]string, 0, len(groups))
	for _, g := range groups {
		parts = append(parts, fmt.Sprintf("%s: %d", round(g.at), g.hosts))
	}
	return strings.Join(parts, ", ")
}

// missed says, when hosts waited past the main reload, from which write on
// they did: "; after the main reload: written from 1.71s (served by it:
// written up to 1.62s)".
func (r servedRun) missed() string {
	if r.missedFrom == 0 {
		return ""
	}
	return fmt.Sprintf("; after the main reload: written from %s (served by it or before: written up to %s)", round(r.missedFrom), round(r.caughtTo))
}

// servedCPU is "manager 0.21 / kube-apiserver 1.10 / etcd 0.20 / bench
// 0.10 / traefik 0.90".
func servedCPU(c cpuSnapshot) string {
	return fmt.Sprintf("%s / traefik %.2f", c, c["traefik"])
}

// servedSuite is every served flip of one N.
type servedSuite struct {
	n     int
	setup time.Duration
	runs  []servedRun
	// stalling is how many stalling checks of another namespace the flips
	// beside them had (besideStalling; 0 when not measured), and
	// stallingMost the most requests of theirs in flight at once.
	stalling     int
	stallingMost int64
}

// servedResult is the served measure.
type servedResult struct {
	traefik string
	// checksOff: the switches had no spec.served (BENCH_SERVED_CHECKS=0).
	checksOff bool
	// splitCores: Traefik and the bench on half the CPUs, the control
	// plane and the manager on the other half (BENCH_SPLIT_CORES=1).
	splitCores bool
	suites     []*servedSuite
}

func (s *servedSuite) of(who string, active bool) []servedRun {
	var out []servedRun
	for _, r := range s.runs {
		if r.who == who && r.active == active {
			out = append(out, r)
		}
	}
	return out
}

// servedFloorName names the owned floor of the served measure.
func servedFloorName(workers int) string { return fmt.Sprintf("served-floor-%d", workers) }

// servedBackends are the two local servers every host's shapes go to.
type servedBackends struct {
	open, sorry *httptest.Server
}

func startServedBackends() *servedBackends {
	answer := func(code int, body string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(code)
			_, _ = io.WriteString(w, body)
		}))
	}
	return &servedBackends{open: answer(http.StatusOK, servedOpenBody), sorry: answer(http.StatusServiceUnavailable, servedSorryBody)}
}

func (b *servedBackends) close() {
	b.open.Close()
	b.sorry.Close()
}

// servedHost is the host of switch i of a namespace: every namespace's
// hosts differ, as Traefik serves them all at once.
func servedHost(ns string, i int) string { return objName(i) + "." + ns + ".example.com" }

// servedShape is the Ingress spec of host i in a mode.
func (b *servedBackends) servedShape(ns string, i int, active bool) *builders.IngressShape {
	if active {
		return builders.IngressTo(servedHost(ns, i), servedSorryService).Port(suite.ServerPort(b.sorry))
	}
	return builders.IngressTo(servedHost(ns, i), servedOpenService).Port(suite.ServerPort(b.open))
}

// servedShapeOf matches an Ingress whose backend is the mode's service.
func servedShapeOf(active bool) func(runtime.Object) (string, bool) {
	want := servedOpenService
	if active {
		want = servedSorryService
	}
	return func(o runtime.Object) (string, bool) {
		ing, ok := o.(*networkingv1.Ingress)
		if !ok || len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].HTTP == nil || len(ing.Spec.Rules[0].HTTP.Paths) != 1 {
			return "", false
		}
		svc := ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service
		return ing.Name, svc != nil && svc.Name == want
	}
}

// servedFor matches a DynamicIngress whose Served condition is True for
// the mode, at its generation.
func servedFor(active bool) func(runtime.Object) (string, bool) {
	mode := v1beta1.ModePassive
	if active {
		mode = v1beta1.ModeActive
	}
	return func(o runtime.Object) (string, bool) {
		di, ok := o.(*v1beta1.DynamicIngress)
		if !ok {
			return "", false
		}
		c := meta.FindStatusCondition(di.Status.Conditions, v1beta1.ConditionServed)
		return di.Name, c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == di.Generation &&
			di.Status.Served != nil && di.Status.Served.Mode == mode
	}
}

// outsideClient requests hosts through Traefik as a user would: a GET of
// "/" with the host's Host header.
type outsideClient struct {
	address string
	c       *http.Client
}

// outsideWorkers request the hosts in parallel, each its share in turn;
// sweepPeriod is the least time between two requests of one host.
const (
	outsideWorkers = 16
	sweepPeriod    = 20 * time.Millisecond
)

// newOutsideClient requests through Traefik at address on at most conns
// connections, each kept for the next request.
func newOutsideClient(address string, conns int) *outsideClient {
	return &outsideClient{address: address, c: &http.Client{Timeout: 2 * time.Second,
		Transport: &http.Transport{Proxy: nil, MaxConnsPerHost: conns, MaxIdleConnsPerHost: conns, DisableCompression: true}}}
}

// answers tells whether host answers with the shape of the mode, and
// what it answered (or the request's error).
func (o *outsideClient) answers(ctx context.Context, host string, active bool) (bool, string) {
	ok, answer, err := o.answer(ctx, host, active)
	if err != nil {
		return false, err.Error()
	}
	return ok, answer
}

// answer is answers with the request's error apart: no answer at all.
func (o *outsideClient) answer(ctx context.Context, host string, active bool) (bool, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+o.address+"/", nil)
	if err != nil {
		return false, "", err
	}
	req.Host = host
	resp, err := o.c.Do(req)
	if err != nil {
		return false, "", err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	_ = resp.Body.Close()
	code, want := http.StatusOK, servedOpenBody
	if active {
		code, want = http.StatusServiceUnavailable, servedSorryBody
	}
	return resp.StatusCode == code && string(body) == want, fmt.Sprintf("%d %q", resp.StatusCode, body), nil
}

// await requests every host until it answers with the shape of the mode
// and returns when each did, from t0; it fails after timeout. onServed,
// when set, is told each host's index as soon as it is served.
func (o *outsideClient) await(ctx context.Context, hosts []string, active bool, t0 time.Time, timeout time.Duration, onServed func(i int)) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	at := make([]time.Duration, len(hosts))
	last := make([]string, len(hosts))
	var wg sync.WaitGroup
	for w := range outsideWorkers {
		wg.Go(func() {
			var pending []int
			for i := w; i < len(hosts); i += outsideWorkers {
				pending = append(pending, i)
			}
			for len(pending) > 0 && ctx.Err() == nil {
				began := time.Now()
				left := pending[:0]
				for _, i := range pending {
					ok, answer := o.answers(ctx, hosts[i], active)
					if ok {
						at[i] = time.Since(t0)
						if onServed != nil {
							onServed(i)
						}
						continue
					}
					last[i] = answer
					left = append(left, i)
				}
				pending = left
				if len(pending) > 0 {
					select {
					case <-ctx.Done():
					case <-time.After(time.Until(began.Add(sweepPeriod))):
					}
				}
			}
		})
	}
	wg.Wait()
	for i, d := range at {
		if d == 0 {
			return nil, fmt.Errorf("%s through Traefik at %s did not answer as the %s shape within %s (last answer: %s)",
				hosts[i], o.address, shapeDir(active), timeout, last[i])
		}
	}
	return at, nil
}

// servedNamespace is one namespace of served hosts: the operator's
// switches, or the floor's Ingresses.
type servedNamespace struct {
	ns    string
	n     int
	hosts []string
}

func newServedNamespace(ns string, n int) servedNamespace {
	s := servedNamespace{ns: ns, n: n}
	for i := range n {
		s.hosts = append(s.hosts, servedHost(ns, i))
	}
	return s
}

// servedMeasure is the served measure's harness: Traefik, the backends
// and the outside client.
type servedMeasure struct {
	b        *bench
	traefik  *controlplane.Traefik
	backends *servedBackends
	client   *outsideClient
	// traefikPID is Traefik's process, for its CPU time.
	traefikPID int
	// checksOff leaves spec.served out of the switches, to tell what the
	// checks cost a flip from what the rest of it does.
	checksOff bool
	// profileSuffix ends the names of the operator's flips' profiles
	// (BENCH_PROFILE): "-beside-stalling" for the flips beside another
	// namespace's stalling checks.
	profileSuffix string
	// split pins the manager with the control plane (BENCH_SPLIT_CORES=1;
	// nil otherwise).
	split *coreSplit
	// quietSince is when the last flip's last host was served or its
	// last Ingress written: a flip starts once Traefik has had no change
	// for longer than its throttle, so that every flip finds it alike.
	quietSince time.Time
}

// servedFlips is the served measure: Traefik started beside the control
// plane, then for each N the operator's switches and the owned floor's
// Ingresses flipped each way in rounds.
func (b *bench) servedFlips(ctx context.Context) (*servedResult, error) {
	h := b.h
	kubeconfig, err := h.cluster.AddUser("traefik")
	if err != nil {
		return nil, err
	}
	traefik, err := controlplane.StartTraefik(controlplane.TraefikOptions{Dir: filepath.Join(h.dir, "traefik"), Kubeconfig: kubeconfig})
	if err != nil {
		return nil, err
	}
	defer traefik.Stop()
	backends := startServedBackends()
	defer backends.close()
	sm := &servedMeasure{b: b, traefik: traefik, backends: backends, client: newOutsideClient(traefik.Address, outsideWorkers), traefikPID: childPID(processName(controlplane.TraefikBinary())), checksOff: b.cfg.servedChecksOff}
	res := &servedResult{traefik: controlplane.TraefikVersion, checksOff: b.cfg.servedChecksOff, splitCores: b.cfg.servedSplitCores}
	if b.cfg.servedSplitCores {
		split, err := newCoreSplit()
		if err != nil {
			return nil, err
		}
		restore, err := pinApart(b, split, []int{os.Getpid(), sm.traefikPID}, []int{h.apiserverPID, h.etcdPID})
		defer restore()
		if err != nil {
			return nil, err
		}
		sm.split = split
	}
	for _, n := range b.cfg.servedNs {
		suite, err := sm.suite(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("N=%d: %w (Traefik's log: %s)", n, err, traefik.Log)
		}
		res.suites = append(res.suites, suite)
	}
	return res, nil
}

// suite sets up n switches and the floor's n Ingresses, flips both
// cfg.servedReps times each way, and clears them.
func (sm *servedMeasure) suite(ctx context.Context, n int) (*servedSuite, error) {
	b, h := sm.b, sm.b.h
	res := &servedSuite{n: n}
	m, err := h.startManager(managerOptions{probes: true})
	if err != nil {
		return nil, err
	}
	defer func() { m.stop() }()
	if sm.split != nil {
		if err := pin(m.Pid(), &sm.split.control); err != nil {
			return nil, err
		}
	}
	op := newServedNamespace(fmt.Sprintf("served-%d", n), n)
	floor := newServedNamespace(fmt.Sprintf("served-floor-%d", n), n)
	b.progress("served N=%d: creating the state and %d DynamicIngresses with spec.served behind Traefik", n, n)
	if res.setup, err = sm.setupOperator(ctx, op); err != nil {
		return nil, err
	}
	b.progress("served N=%d: every host served and every Served True after %s; creating the floor's Ingresses", n, round(res.setup))
	own, err := sm.setupFloor(ctx, floor)
	if err != nil {
		return nil, err
	}
	var sf *statusFloor
	if !sm.checksOff {
		if sf, err = sm.setupStatusFloor(ctx, floor, op); err != nil {
			return nil, err
		}
	}
	if _, err := b.waitQuiet(ctx, 2*b.cfg.quiet, 60*time.Second); err != nil {
		return nil, err
	}
	for rep := range b.cfg.servedReps {
		steps := []func() error{func() error {
			for _, active := range []bool{true, false} {
				run, err := sm.operatorFlip(ctx, op, active, m)
				if err != nil {
					return err
				}
				res.runs = append(res.runs, run)
				if sf != nil {
					if err := sf.record(ctx, op, active); err != nil {
						return err
					}
				}
				b.progress("served N=%d round %d %s: operator: last host served %s (first %s); Ingresses written %s–%s; reloads seen (at: hosts) %s%s; Served True after the host max %s, p50 %s (the check saw it after max %s, p50 %s; the condition True after that max %s, p50 %s); CPU s %s; writes: %s",
					n, rep+1, direction(active), round(run.served), round(run.firstServed), round(run.firstWrite), round(run.lastWrite),
					reloadsString(run.reloads), run.missed(), round(maxDuration(run.conditionDelays)), round(percentile(run.conditionDelays, 0.5)),
					round(maxDuration(run.detectDelays)), round(percentile(run.detectDelays, 0.5)), round(maxDuration(run.statusDelays)), round(percentile(run.statusDelays, 0.5)), servedCPU(run.cpu), run.reqs.writeSummary())
			}
			return m.check()
		}}
		for _, w := range b.cfg.ownedFloorWorkers {
			steps = append(steps, func() error {
				for _, active := range []bool{true, false} {
					run, err := sm.floorFlip(ctx, floor, active, w, own, nil)
					if err != nil {
						return err
					}
					res.runs = append(res.runs, run)
					b.progress("served N=%d round %d %s: %s: last host served %s (first %s); Ingresses written %s–%s; reloads seen (at: hosts) %s%s; CPU s %s",
						n, rep+1, direction(active), run.who, round(run.served), round(run.firstServed), round(run.firstWrite), round(run.lastWrite),
						reloadsString(run.reloads), run.missed(), servedCPU(run.cpu))
				}
				return nil
			})
		}
		if err := b.runRound(ctx, rep, steps); err != nil {
			return nil, err
		}
	}
	// The status floor's flips come after every round, so that its status
	// patches never precede the operator's flips nor the owned floor's.
	if sf != nil {
		if err := sm.statusFloorFlips(ctx, sf, floor, own, res); err != nil {
			return nil, err
		}
	}
	if !sm.checksOff && b.cfg.servedStalling > 0 && n == b.cfg.servedNs[0] {
		if err := sm.besideStalling(ctx, op, m, res); err != nil {
			return nil, err
		}
	}
	m.stop()
	if sf != nil {
		if err := sf.delete(ctx); err != nil {
			return nil, err
		}
	}
	for _, ns := range []string{op.ns, floor.ns} {
		if err := h.clearNamespace(ctx, ns); err != nil {
			return nil, err
		}
		for _, name := range []string{servedOpenService, servedSorryService} {
			if err := h.cs.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

// loopbackServices creates the two backends' Services in ns.
func (sm *servedMeasure) loopbackServices(ctx context.Context, ns string) error {
	if err := sm.b.h.ensureNamespace(ctx, ns); err != nil {
		return err
	}
	for name, srv := range map[string]*httptest.Server{servedOpenService: sm.backends.open, servedSorryService: sm.backends.sorry} {
		if err := sm.b.h.c.Create(ctx, builders.LoopbackService(ns, name, suite.ServerPort(srv))); err != nil {
			return err
		}
	}
	return nil
}

// servedSwitch is switch i of s: active (the sorry page) while the flip
// state answers 200, its host checked through Traefik with the defaults
// of spec.served.
func (sm *servedMeasure) servedSwitch(s servedNamespace, i int) *v1beta1.DynamicIngress {
	check := builders.Served("http://"+sm.traefik.Address+"/", "503", "200").Header("Host", s.hosts[i])
	check.Active.Body, check.Passive.Body = ptr.To(servedSorryBody), ptr.To(servedOpenBody)
	w := builders.DynamicIngress(s.ns, objName(i)).State(flipStateName).ExpectCode("200").
		Passive(sm.backends.servedShape(s.ns, i, false)).Active(sm.backends.servedShape(s.ns, i, true))
	if sm.checksOff {
		return w.Obj()
	}
	return w.Served(check).Obj()
}

// setupOperator creates the services, the state answering 503 and the
// switches (passive), and waits until every host is served and every
// Served condition True.
func (sm *servedMeasure) setupOperator(ctx context.Context, s servedNamespace) (time.Duration, error) {
	h := sm.b.h
	if err := sm.loopbackServices(ctx, s.ns); err != nil {
		return 0, err
	}
	servedW, err := watchArrivals(ctx, dynamicIngresses(h, s.ns), s.n, servedFor(false))
	if err != nil {
		return 0, err
	}
	defer servedW.stop()
	t0 := time.Now()
	if err := h.c.Create(ctx, fixedState(s.ns, flipStateName, "503")); err != nil {
		return 0, err
	}
	if err := parallel(s.n, 32, func(i int) error { return h.c.Create(ctx, sm.servedSwitch(s, i)) }); err != nil {
		return 0, fmt.Errorf("creating %d DynamicIngresses: %w", s.n, err)
	}
	timeout := flipTimeout(s.n, 100*time.Millisecond)
	if _, err := sm.client.await(ctx, s.hosts, false, t0, timeout, nil); err != nil {
		return 0, err
	}
	if !sm.checksOff {
		if err := servedW.wait(timeout); err != nil {
			return 0, fmt.Errorf("waiting for every Served condition: %w", err)
		}
	}
	sm.quietSince = time.Now()
	return time.Since(t0), nil
}

// setupFloor creates the services, an owner, and the floor's Ingresses
// (passive), and waits until every host is served. It returns the owner.
func (sm *servedMeasure) setupFloor(ctx context.Context, s servedNamespace) (*metav1.OwnerReference, error) {
	h := sm.b.h
	if err := sm.loopbackServices(ctx, s.ns); err != nil {
		return nil, err
	}
	cm, err := h.cs.CoreV1().ConfigMaps(s.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	own := &metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	t0 := time.Now()
	if err := parallel(s.n, 64, func(i int) error {
		ac := sm.floorApply(s, i, false, own, "")
		_, err := h.cs.NetworkingV1().Ingresses(s.ns).Apply(ctx, ac, metav1.ApplyOptions{FieldManager: floorFieldManager, Force: true})
		return err
	}); err != nil {
		return nil, err
	}
	if _, err := sm.client.await(ctx, s.hosts, false, t0, flipTimeout(s.n, 100*time.Millisecond), nil); err != nil {
		return nil, err
	}
	sm.quietSince = time.Now()
	return own, nil
}

// floorApply is what the operator applies to target i in a mode (the
// template, a controller ownerReference, the UID as a precondition when
// set), with the baselines' label so that the manager's cache never holds
// it.
func (sm *servedMeasure) floorApply(s servedNamespace, i int, active bool, owner *metav1.OwnerReference, uid types.UID) *networkingv1ac.IngressApplyConfiguration {
	shape := sm.backends.servedShape(s.ns, i, active).Obj().Template.Spec
	rule := shape.Rules[0]
	path := rule.HTTP.Paths[0]
	ac := networkingv1ac.Ingress(objName(i), s.ns).
		WithLabels(map[string]string{v1beta1.LabelManagedBy: baselineLabel}).
		WithOwnerReferences(metav1ac.OwnerReference().WithAPIVersion(owner.APIVersion).WithKind(owner.Kind).
			WithName(owner.Name).WithUID(owner.UID).WithController(true).WithBlockOwnerDeletion(true)).
		WithSpec(networkingv1ac.IngressSpec().WithRules(networkingv1ac.IngressRule().WithHost(rule.Host).
			WithHTTP(networkingv1ac.HTTPIngressRuleValue().WithPaths(networkingv1ac.HTTPIngressPath().
				WithPath(path.Path).WithPathType(*path.PathType).
				WithBackend(networkingv1ac.IngressBackend().WithService(networkingv1ac.IngressServiceBackend().
					WithName(path.Backend.Service.Name).
					WithPort(networkingv1ac.ServiceBackendPort().WithNumber(path.Backend.Service.Port.Number))))))))
	if uid != "" {
		ac.WithUID(uid)
	}
	return ac
}

// waitQuiet returns once Traefik has had no change for longer than
// its throttle, so that the next flip's first change is applied at once,
// as after any quiet time.
//
// Then it waits until the API server has had no write for the bench's
// quiet time (at most 20 s): the last flip's trailing writes (the
// operator's events) are done, so that no flip starts beside another's.
func (sm *servedMeasure) waitQuiet(ctx context.Context) error {
	time.Sleep(time.Until(sm.quietSince.Add(traefikThrottle + 500*time.Millisecond)))
	_, err := sm.b.waitQuiet(ctx, sm.b.cfg.quiet, 20*time.Second)
	return err
}

// operatorFlip patches the state and times the Ingresses, the hosts as the
// ingressArrivals watches the Ingresses of s arrive at the shape of mode
// active; none may have it before the flip.
func (sm *servedMeasure) ingressArrivals(ctx context.Context, s servedNamespace, active bool) (*arrivals, error) {
	w, err := watchArrivals(ctx, sm.b.ingresses(s.ns), s.n, servedShapeOf(active))
	if err != nil {
		return nil, err
	}
	if w.before != 0 {
		w.stop()
		return nil, fmt.Errorf("%d Ingresses already have the new shape before the flip", w.before)
	}
	return w, nil
}

// outside client sees them, and the Served conditions.
func (sm *servedMeasure) operatorFlip(ctx context.Context, s servedNamespace, active bool, m *managerProc) (servedRun, error) {
	h := sm.b.h
	run := servedRun{who: "operator", n: s.n, active: active}
	ingW, err := sm.ingressArrivals(ctx, s, active)
	if err != nil {
		return run, err
	}
	defer ingW.stop()
	servedW, err := watchArrivals(ctx, dynamicIngresses(h, s.ns), s.n, servedFor(active))
	if err != nil {
		return run, err
	}
	defer servedW.stop()
	if err := sm.waitQuiet(ctx); err != nil {
		return run, err
	}
	// The write counts' scrape first: the collection is the last thing
	// before the clock (collectAPIServerGarbage).
	before, err := h.apiserverMetrics(ctx)
	if err != nil {
		return run, err
	}
	if err := sm.b.collectAPIServerGarbage(ctx); err != nil {
		return run, err
	}
	// Before the profiles: it waits for the trace to begin.
	stopTrace := sm.b.traceManager(m, fmt.Sprintf("served-manager-%d-%s%s", s.n, direction(active), sm.profileSuffix))
	defer stopTrace()
	stopProfile := sm.b.profileAPIServer(ctx, fmt.Sprintf("served-operator-%d-%s%s", s.n, direction(active), sm.profileSuffix))
	defer stopProfile()
	stopManagerProfile := sm.b.profileManager(m, fmt.Sprintf("served-manager-%d-%s%s", s.n, direction(active), sm.profileSuffix))
	defer stopManagerProfile()
	cpu0 := sm.cpu(m)
	t0 := time.Now()
	ingW.startAt(t0)
	servedW.startAt(t0)
	patch := fmt.Sprintf(`{"spec":{"fixedResponse":{"status":%q}}}`, stateCodeFor(active))
	if err := h.c.Patch(ctx, fixedState(s.ns, flipStateName, ""), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return run, err
	}
	timeout := flipTimeout(s.n, 100*time.Millisecond)
	at, err := sm.client.await(ctx, s.hosts, active, t0, timeout, nil)
	if err != nil {
		return run, fmt.Errorf("operator flip %s: %w (%v)", direction(active), err, m.check())
	}
	run.cpu = sm.cpu(m).sub(cpu0)
	if err := ingW.wait(timeout); err != nil {
		return run, err
	}
	sm.summarize(&run, at, ingW)
	sm.b.traced(stopTrace, t0, fmt.Sprintf("served flip of %d %s: hosts served %s–%s, Ingresses written %s–%s, reloads seen (at: hosts) %s",
		s.n, direction(active), round(run.firstServed), round(run.served), round(run.firstWrite), round(run.lastWrite), reloadsString(run.reloads)))
	countWrites := func() error {
		after, err := sm.b.waitQuiet(ctx, sm.b.cfg.quiet, 20*time.Second)
		run.reqs = requestCounts(after).sub(requestCounts(before))
		return err
	}
	if sm.checksOff {
		err := countWrites()
		return run, err
	}
	if err := servedW.wait(timeout); err != nil {
		return run, fmt.Errorf("operator flip %s, Served conditions: %w (%v)", direction(active), err, m.check())
	}
	conditions, writes := servedW.byName(), ingW.byName()
	var list v1beta1.DynamicIngressList
	if err := h.c.List(ctx, &list, client.InNamespace(s.ns)); err != nil {
		return run, err
	}
	after := map[string]time.Duration{}
	for _, di := range list.Items {
		if di.Status.Served != nil {
			if secs, err := strconv.ParseFloat(strings.TrimSuffix(di.Status.Served.After, "s"), 64); err == nil {
				after[di.Name] = time.Duration(secs * float64(time.Second))
			}
		}
	}
	for i, d := range at {
		name := objName(i)
		run.conditionDelays = append(run.conditionDelays, conditions[name]-d)
		if a, ok := after[name]; ok {
			seen := writes[name] + a
			run.detectDelays = append(run.detectDelays, seen-d)
			run.statusDelays = append(run.statusDelays, conditions[name]-seen)
		}
	}
	err = countWrites()
	return run, err
}

// floorFlip applies the floor's Ingresses in the new shape, as the
// operator would, from workers goroutines, and times them and the hosts.
// With sf it is the status floor's flip: each host's status is patched
// onto its switch's copy as soon as the outside client sees it served,
// and timed as the operator's Served conditions are.
func (sm *servedMeasure) floorFlip(ctx context.Context, s servedNamespace, active bool, workers int, own *metav1.OwnerReference, sf *statusFloor) (servedRun, error) {
	h := sm.b.h
	run := servedRun{who: servedFloorName(workers), n: s.n, active: active}
	var (
		statusW  *arrivals
		writes   *statusWrites
		onServed func(int)
	)
	if sf != nil {
		run.who = statusFloorName
		var err error
		if statusW, err = watchArrivals(ctx, sf.copies(), s.n, copyServedFor(active)); err != nil {
			return run, err
		}
		defer statusW.stop()
		if statusW.before != 0 {
			return run, fmt.Errorf("%d copies already have the new status before the status floor's flip", statusW.before)
		}
		if writes, err = sf.start(ctx, active); err != nil {
			return run, err
		}
		defer func() { _ = writes.finish() }()
		onServed = writes.served
	}
	list, err := h.cs.NetworkingV1().Ingresses(s.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return run, err
	}
	uids := map[string]types.UID{}
	for _, ing := range list.Items {
		uids[ing.Name] = ing.UID
	}
	ingW, err := sm.ingressArrivals(ctx, s, active)
	if err != nil {
		return run, err
	}
	defer ingW.stop()
	if err := sm.waitQuiet(ctx); err != nil {
		return run, err
	}
	if err := sm.b.collectAPIServerGarbage(ctx); err != nil {
		return run, err
	}
	stopProfile := sm.b.profileAPIServer(ctx, fmt.Sprintf("%s-%d-%s", run.who, s.n, direction(active)))
	defer stopProfile()
	cpu0 := sm.cpu(nil)
	t0 := time.Now()
	ingW.startAt(t0)
	if statusW != nil {
		statusW.startAt(t0)
	}
	type served struct {
		at  []time.Duration
		err error
	}
	done := make(chan served, 1)
	go func() {
		at, err := sm.client.await(ctx, s.hosts, active, t0, flipTimeout(s.n, 100*time.Millisecond), onServed)
		done <- served{at, err}
	}()
	if err := parallel(s.n, workers, func(i int) error {
		ac := sm.floorApply(s, i, active, own, uids[objName(i)])
		_, err := h.cs.NetworkingV1().Ingresses(s.ns).Apply(ctx, ac, metav1.ApplyOptions{FieldManager: floorFieldManager, Force: true})
		return err
	}); err != nil {
		<-done
		return run, err
	}
	r := <-done
	if r.err != nil {
		return run, fmt.Errorf("floor flip %s: %w", direction(active), r.err)
	}
	run.cpu = sm.cpu(nil).sub(cpu0)
	if err := ingW.wait(flipTimeout(s.n, 10*time.Millisecond)); err != nil {
		return run, err
	}
	sm.summarize(&run, r.at, ingW)
	if sf == nil {
		return run, nil
	}
	if err := writes.finish(); err != nil {
		return run, fmt.Errorf("status floor flip %s: %w", direction(active), err)
	}
	if err := statusW.wait(flipTimeout(s.n, 10*time.Millisecond)); err != nil {
		return run, fmt.Errorf("status floor flip %s, Served conditions: %w", direction(active), err)
	}
	conditions := statusW.byName()
	for i, d := range r.at {
		run.conditionDelays = append(run.conditionDelays, conditions[objName(i)]-d)
	}
	return run, nil
}

// summarize fills the times of a flip from the hosts' served times and the
// Ingresses' arrivals, and marks Traefik busy from now.
func (sm *servedMeasure) summarize(run *servedRun, at []time.Duration, ingW *arrivals) {
	run.firstServed, run.served = slices.Min(at), slices.Max(at)
	writes := ingW.byName()
	for _, d := range writes {
		if run.firstWrite == 0 || d < run.firstWrite {
			run.firstWrite = d
		}
		run.lastWrite = max(run.lastWrite, d)
	}
	run.reloads = reloadGroups(at)
	largest := 0
	for k, g := range run.reloads {
		if g.hosts > run.reloads[largest].hosts {
			largest = k
		}
	}
	if largest < len(run.reloads)-1 {
		// A host served before the next reload's first was served by the
		// main reload or before.
		next := run.reloads[largest+1].at
		for i, d := range at {
			w := writes[objName(i)]
			if d < next {
				run.caughtTo = max(run.caughtTo, w)
			} else if run.missedFrom == 0 || w < run.missedFrom {
				run.missedFrom = w
			}
		}
	}
	sm.quietSince = time.Now()
}

// processName is the command name Linux gives a program's process: its
// file name, cut to 15 bytes.
func processName(path string) string {
	name := filepath.Base(path)
	if len(name) > 15 {
		name = name[:15]
	}
	return name
}

// cpu is the CPU time of the processes of a served flip: the manager's
// (when m is set), the control plane's, the bench's and Traefik's.
func (sm *servedMeasure) cpu(m *managerProc) cpuSnapshot {
	s := sm.b.h.cpu(m)
	s["traefik"] = cpuSeconds(sm.traefikPID)
	return s
}

// byName returns each object's arrival time.
func (a *arrivals) byName() map[string]time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]time.Duration, len(a.times))
	for k, v := range a.times {
		out[k] = v
	}
	return out
}

// servedFigures are the medians of one writer's served flips one way.
type servedFigures struct {
	flips                         int
	served, min, max, first       time.Duration
	firstWrite, lastWrite         time.Duration
	conditionMax, conditionMedian time.Duration
	detectMax, detectMedian       time.Duration
	statusMax, statusMedian       time.Duration
	reloads                       []string
	// missed lists, for each flip where hosts waited past the main reload,
	// the latest write served by it and the earliest that was not.
	missed []string
	// cpu: median CPU seconds of each process until the last host.
	cpu cpuSnapshot
}

func figuresOfServed(runs []servedRun) servedFigures {
	f := servedFigures{flips: len(runs)}
	if len(runs) == 0 {
		return f
	}
	med := func(g func(servedRun) time.Duration) time.Duration {
		ds := make([]time.Duration, 0, len(runs))
		for _, r := range runs {
			ds = append(ds, g(r))
		}
		return median(ds)
	}
	f.served = med(func(r servedRun) time.Duration { return r.served })
	f.first = med(func(r servedRun) time.Duration { return r.firstServed })
	f.firstWrite = med(func(r servedRun) time.Duration { return r.firstWrite })
	f.lastWrite = med(func(r servedRun) time.Duration { return r.lastWrite })
	f.min, f.max = runs[0].served, runs[0].served
	var delays, detect, status []time.Duration
	for _, r := range runs {
		f.min, f.max = min(f.min, r.served), max(f.max, r.served)
		delays = append(delays, r.conditionDelays...)
		detect = append(detect, r.detectDelays...)
		status = append(status, r.statusDelays...)
		hosts := make([]string, 0, len(r.reloads))
		for _, g := range r.reloads {
			hosts = append(hosts, fmt.Sprint(g.hosts))
		}
		f.reloads = append(f.reloads, strings.Join(hosts, "+"))
		if r.missedFrom != 0 {
			f.missed = append(f.missed, round(r.caughtTo)+" / "+round(r.missedFrom))
		}
	}
	f.cpu = cpuSnapshot{}
	for k := range runs[0].cpu {
		f.cpu[k] = med(func(r servedRun) time.Duration { return time.Duration(r.cpu[k] * float64(time.Second)) }).Seconds()
	}
	f.conditionMax, f.conditionMedian = maxDuration(delays), percentile(delays, 0.5)
	f.detectMax, f.detectMedian = maxDuration(detect), percentile(detect, 0.5)
	f.statusMax, f.statusMedian = maxDuration(status), percentile(status, 0.5)
	return f
}

// floorBest is the fastest owned floor one way (by median), with its
// worker count.
func (s *servedSuite) floorBest(workers []int, active bool) (int, servedFigures) {
	best, bestF := 0, servedFigures{}
	for _, w := range workers {
		f := figuresOfServed(s.of(servedFloorName(w), active))
		if f.flips > 0 && (best == 0 || f.served < bestF.served) {
			best, bestF = w, f
		}
	}
	return best, bestF
}

// summaryRows adds the measure's figures beside their baselines.
func (r *servedResult) summaryRows(sum *table, workers []int) {
	for _, s := range r.suites {
		for _, active := range []bool{true, false} {
			op := figuresOfServed(s.of("operator", active))
			if best, bf := s.floorBest(workers, active); best != 0 {
				sum.add(fmt.Sprintf("served flip N=%d %s: state edit → the last host served through Traefik (median of %d)", s.n, direction(active), op.flips), round(op.served),
					fmt.Sprintf("%s, then the same Traefik, best of %s workers (%d, median of %d)", ownedFloorDesc, workerList(workers), best, bf.flips),
					round(bf.served), durRatio(op.served, bf.served))
			}
			sum.add(fmt.Sprintf("served flip N=%d %s: host served → its Served condition True, max over %d flips", s.n, direction(active), op.flips),
				round(op.conditionMax), "required at most", round(servedConditionBar), durRatio(op.conditionMax, servedConditionBar))
			if sf := figuresOfServed(s.of(statusFloorName, active)); sf.flips > 0 {
				sum.add(fmt.Sprintf("served flip N=%d %s: host served → its Served condition True, max over %d flips", s.n, direction(active), op.flips),
					round(op.conditionMax), fmt.Sprintf("status floor: a plain client requests each host once and patches its status as the outside client sees it served (%d workers), max over %d flips", statusFloorWorkers, sf.flips),
					round(sf.conditionMax), durRatio(op.conditionMax, sf.conditionMax))
			}
		}
		s.fairnessRows(sum)
	}
}

func (r *servedResult) markdown(cfg config) string {
	var sb strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	w("#### Served: flips seen through Traefik\n\n")
	if r.checksOff {
		w("**BENCH_SERVED_CHECKS=0: the switches have no spec.served**, so that the flips show what the rest of the operator's flip costs; otherwise as below. ")
	}
	w("Each switch has spec.served (the defaults: a request every %s, Host header naming its host) and its own host, behind Traefik %s on loopback (the Kubernetes Ingress provider, its default %s reload throttle); ",
		time.Second, r.traefik, traefikThrottle)
	w("the shapes go to two local servers through ExternalName Services (passive: 200 %q, active: 503 %q). ", servedOpenBody, servedSorryBody)
	w("An outside client requests every host through Traefik (%d workers, each host at most every %s) until it answers with the new shape. ", outsideWorkers, sweepPeriod)
	w("The operator's flip runs from the state's edit; the owned floor applies the same Ingress changes (the template, a controller ownerReference, the UID precondition) from a plain client, timed from its first request, for the same client and the same Traefik. ")
	if r.splitCores {
		w("**BENCH_SPLIT_CORES=1: Traefik and the bench's process (the outside client, the floors' writers) on half the CPUs, kube-apiserver, etcd and the manager on the other half**, as a proxy on nodes of its own; otherwise as below. ")
	}
	w("Every flip starts once Traefik has had no change for %s and the API server no write for %s, waited for at most 20 s (the last flip's events written). ", traefikThrottle+500*time.Millisecond, cfg.quiet)
	w("\"Ingresses written\" is when an Ingress watch saw the first and the last target in the new shape; \"hosts per reload\" groups the hosts the client saw served within %s of a group's first, one group per Traefik reload, one entry per flip. ", reloadWindow)
	w("When hosts waited past the main reload (the one that served the most hosts), the latest write of a host it served (or one before it) and the earliest of one it did not bound when its snapshot of the Ingresses was taken. ")
	w("\"Served True\" is from the client seeing a host served until a watch saw its switch's Served condition True for the new mode (all switches of all flips), split at when the manager's check saw the host served (the target's write, watch-seen, plus its status.served.after, to 10 ms). ")
	w("The status floor (with spec.served) is the owned floor's flip (%d workers) by a plain client that also, the moment the outside client sees a host served, requests that host once through Traefik itself (as a served check must at least; %d in flight at most, as a namespace's checks) and patches the status the manager wrote in its last flip that way onto a copy of the switch (an object of a copy of the DynamicIngress CRD in a group of the bench's own, which the manager does not watch; %d workers): what the Served bar asks of this machine. ", statusFloorWorkers, statusFloorChecksInFlight, statusFloorWorkers)
	w("CPU: medians, from the edit until the last host was served.\n\n")
	t := &table{header: []string{"N", "direction", "writer", "flips", "last host served", "range", "first host served", "Ingresses written (first–last)", "hosts per reload",
		"past the main reload: last write it served / first it did not", "÷ best owned floor", "Served True after the host: max / p50", "of which until the check saw it: max / p50", "then until the condition: max / p50", "CPU s: manager / apiserver / etcd / bench / traefik"}}
	for _, s := range r.suites {
		for _, active := range []bool{true, false} {
			_, bf := s.floorBest(cfg.ownedFloorWorkers, active)
			whos := []string{"operator"}
			for _, wk := range cfg.ownedFloorWorkers {
				whos = append(whos, servedFloorName(wk))
			}
			whos = append(whos, statusFloorName)
			for _, who := range whos {
				f := figuresOfServed(s.of(who, active))
				if f.flips == 0 {
					continue
				}
				name := "operator (state edit → hosts served)"
				cond := round(f.conditionMax) + " / " + round(f.conditionMedian)
				detect := round(f.detectMax) + " / " + round(f.detectMedian)
				status := round(f.statusMax) + " / " + round(f.statusMedian)
				switch {
				case who == statusFloorName:
					name, detect, status = fmt.Sprintf("status floor: owned floor, %d workers, and a request and a status patch at each host served", statusFloorWorkers), "–", "–"
				case who != "operator":
					var wk int
					_, _ = fmt.Sscanf(who, "served-floor-%d", &wk)
					name, cond, detect, status = fmt.Sprintf("owned floor, %d workers", wk), "–", "–", "–"
				}
				missed := "none"
				if len(f.missed) > 0 {
					missed = strings.Join(f.missed, "; ")
				}
				t.add(fmt.Sprint(s.n), direction(active), name, fmt.Sprint(f.flips), round(f.served), round(f.min)+"–"+round(f.max), round(f.first),
					round(f.firstWrite)+"–"+round(f.lastWrite), strings.Join(f.reloads, "; "), missed, durRatio(f.served, bf.served), cond, detect, status,
					f.cpu.columns()+fmt.Sprintf(" / %.2f", f.cpu["traefik"]))
			}
		}
	}
	w("%s\n", t)
	for _, s := range r.suites {
		w("N=%d: setup (the state and %d switches created until every host was served and every Served True) %s.\n", s.n, s.n, round(s.setup))
	}
	return sb.String()
}

// checkServedFlips asserts what the served measure must have done, never
// how fast: every flip ran, and each operator flip timed every switch's
// Served condition (a host or a condition that never arrived fails the
// measure itself).
func checkServedFlips(t *testing.T, cfg config, res *servedResult) {
	t.Helper()
	if len(res.suites) != len(cfg.servedNs) {
		t.Errorf("served: %d sizes measured, want %d", len(res.suites), len(cfg.servedNs))
	}
	for _, s := range res.suites {
		for _, active := range []bool{true, false} {
			whos := []string{"operator"}
			for _, w := range cfg.ownedFloorWorkers {
				whos = append(whos, servedFloorName(w))
			}
			for _, who := range whos {
				if got := len(s.of(who, active)); got != cfg.servedReps {
					t.Errorf("served N=%d: %d %s flips %s, want %d", s.n, got, who, direction(active), cfg.servedReps)
				}
			}
			if !res.checksOff {
				if got := len(s.of(statusFloorName, active)); got != cfg.servedReps {
					t.Errorf("served N=%d: %d status floor flips %s, want %d", s.n, got, direction(active), cfg.servedReps)
				}
				for _, r := range s.of(statusFloorName, active) {
					// A status is patched only once its host is served: one
					// seen before (or never seen) was no status of the flip.
					if d := slices.Min(r.conditionDelays); d < 0 {
						t.Errorf("served N=%d %s: a status floor status seen %s before its host was served", s.n, direction(active), round(-d))
					}
				}
			}
			for _, r := range s.of("operator", active) {
				if !res.checksOff && len(r.conditionDelays) != s.n {
					t.Errorf("served N=%d %s: %d Served conditions timed, want %d", s.n, direction(active), len(r.conditionDelays), s.n)
				}
			}
		}
	}
}

package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/match"
	opmetrics "github.com/dynamicingress/dynamic-ingress-operator/internal/metrics"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// The fairness measure (BENCH_ONLY=fairness): namespaces that take all the
// manager's shared resources they can, and what that does to another
// namespace. Several namespaces hold stalling 1 MiB answers (answer
// memory), one probes the slowest admitted bodyExpression and one holds
// switches with distinct slow expected expressions (evaluation time); a
// victim namespace flips its own switches, and its probed state and a
// cluster state's probe go on. The bar it is read against: the victim's
// flip stays within 1.5× of the same flip without the noise, and its
// probes and the cluster state's keep succeeding (docs/benchmarks.md).
const (
	// fairVictimNS holds the flip's state, its switches and a probed state
	// of its own; fairSlowNS the slow body expressions; fairExprNS the
	// switches with distinct expressions; fairStallNS(i) the stalling
	// answers.
	fairVictimNS = "fair-victim"
	fairSlowNS   = "fair-slow"
	fairExprNS   = "fair-expressions"
	// fairWho names the victim's flips while the noise runs.
	fairWho = "operator, with the noisy namespaces"
	// fairVictimProbe is the victim's probed state; fairClusterState the
	// cluster state whose grant admits the victim's namespace by
	// fairGrantLabel.
	fairVictimProbe  = "victim-probe"
	fairClusterState = "fair-cluster"
	fairGrantLabel   = "bench.dynamicingress.io/fair"
	// fairCheapExpression is the bodyExpression of the victim's probed
	// state and of the cluster state, over {"ok": true}.
	fairCheapExpression = "response.json.ok"
	// fairSlowExpression over fairSlowBody runs its whole evaluation
	// budget (match.EvaluationBudget) and fails: a loop over sixteen
	// thousand numbers, the slowest bodyExpression the webhook admits per
	// byte of answer.
	fairSlowExpression = "response.json.exists(x, x == 1)"
	// fairSlowZeros is how many numbers fairSlowBody holds.
	fairSlowZeros = 16000
	// fairStallShort is how much of its announced 1 MiB the stalling
	// server leaves unsent.
	fairStallShort = 1 << 10
	// fairExprLead is how long after the expression namespace's flip the
	// victim's first flip begins: the 2000 reconciles that the edit causes
	// (each leaving its evaluation to the namespace's turns) are done, and
	// the evaluations run.
	fairExprLead = 2 * time.Second
	// fairRatioBar is the factor the victim's flip must stay within (read,
	// not asserted: no figure is a pass mark).
	fairRatioBar = 1.5
	// fairSampleEvery is how often the states' Ready conditions are read
	// during a phase.
	fairSampleEvery = time.Second
)

// fairStallNS names the i-th namespace of stalling answers.
func fairStallNS(i int) string { return fmt.Sprintf("fair-stall-%d", i+1) }

// fairExpression is the i-th switch's expected expression: five levels of
// map around response.code + i (distinct for every i, so that no verdict
// is shared), stopped at its runtime cost limit after about 80ms of CPU.
func fairExpression(i int) string {
	return fmt.Sprintf("size(%s) == 7", builders.NestedMaps(5, fmt.Sprintf("response.code + %d", i)))
}

// fairSlowBody is the slow namespace's answer: a JSON array of
// fairSlowZeros zeros, about 32 KiB.
func fairSlowBody() []byte {
	return []byte("[" + strings.TrimSuffix(strings.Repeat("0,", fairSlowZeros), ",") + "]")
}

// stallServer announces a 1 MiB JSON answer, sends all of it but
// fairStallShort bytes and holds the connection until the client gives up
// (its probe's timeout), on 127.0.0.1 only.
type stallServer struct {
	*endpoint
	// held counts the answers being held now and the most at once.
	held suite.InFlight
	stop chan struct{}
}

func startStallServer() (*stallServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &stallServer{endpoint: &endpoint{mode: "stalling 1 MiB answer"}, stop: make(chan struct{})}
	body := make([]byte, probe.MaxExpressionInput-fairStallShort)
	body[0] = '['
	for i := 1; i < len(body); i++ {
		body[i] = ' '
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.count.Add(1)
		defer s.held.Enter()()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(probe.MaxExpressionInput))
		if _, err := w.Write(body); err == nil {
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		}
		select {
		case <-r.Context().Done():
		case <-s.stop:
		}
	}))
	_ = srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	s.URL = srv.URL
	s.close = func() {
		close(s.stop)
		srv.CloseClientConnections()
		srv.Close()
	}
	return s, nil
}

// stallPacing says how often a stalling state probes: the manager paces a
// state by the answer its expression read (probe.ExpressionBytesPerSecond),
// and skips no tick when that pause is within the interval.
func stallPacing(interval time.Duration) string {
	pause := time.Duration(probe.MaxExpressionInput-fairStallShort) * time.Second / probe.ExpressionBytesPerSecond
	if pause <= interval {
		return fmt.Sprintf("reading that answer paces a state by %s, within its interval, so each probes at every tick and holds its memory nearly all the time", round(pause))
	}
	return fmt.Sprintf("reading that answer paces a state by %s and up to half as much again, so each holds its memory for its timeout in every such pause", round(pause))
}

// fairServers are the endpoints the measure's states probe.
type fairServers struct {
	stall *stallServer
	slow  *endpoint
	ok    *endpoint
}

// Close stops the servers that were started.
func (s *fairServers) Close() {
	if s.stall != nil {
		s.stall.Close()
	}
	for _, e := range []*endpoint{s.slow, s.ok} {
		if e != nil {
			e.Close()
		}
	}
}

// probeTally is what the manager's metrics say of some states' probes
// (dynamicingressstate_probe_duration_seconds_count and
// dynamicingressstate_probe_failures_total): how many were done, and the
// failed ones by reason.
type probeTally struct {
	probes   float64
	failures map[string]float64
}

func (t probeTally) failed() float64 {
	n := 0.0
	for _, v := range t.failures {
		n += v
	}
	return n
}

func (t probeTally) sub(before probeTally) probeTally {
	out := probeTally{probes: t.probes - before.probes, failures: map[string]float64{}}
	for k, v := range t.failures {
		if d := v - before.failures[k]; d != 0 {
			out.failures[k] = d
		}
	}
	return out
}

// String reads "120 probes: 30 answered, 90 failed (timeout 90)".
func (t probeTally) String() string {
	if t.probes == 0 {
		return "no probe"
	}
	s := fmt.Sprintf("%.0f probes: %.0f answered", t.probes, t.probes-t.failed())
	if t.failed() == 0 {
		return s + ", none failed"
	}
	reasons := make([]string, 0, len(t.failures))
	for k := range t.failures {
		reasons = append(reasons, k)
	}
	sort.Strings(reasons)
	parts := make([]string, 0, len(reasons))
	for _, k := range reasons {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, t.failures[k]))
	}
	return fmt.Sprintf("%s, %.0f failed (%s)", s, t.failed(), strings.Join(parts, ", "))
}

// probeTallyOf sums the probes of the states that match (namespace and
// name; an empty name is every state of the namespace, and "" is the
// namespace of cluster states).
func probeTallyOf(m metrics, namespaces []string, name string) probeTally {
	t := probeTally{failures: map[string]float64{}}
	for _, ns := range namespaces {
		sel := map[string]string{"namespace": ns}
		if name != "" {
			sel["name"] = name
		}
		t.probes += m.sum(opmetrics.ProbeDurationName+"_count", sel)
		for _, reason := range opmetrics.FailureReasons {
			sel := map[string]string{"namespace": ns, "reason": reason}
			if name != "" {
				sel["name"] = name
			}
			if v := m.sum(opmetrics.ProbeFailuresName, sel); v != 0 {
				t.failures[reason] += v
			}
		}
	}
	return t
}

// probeHealth is what a probed state that must keep succeeding showed
// over a phase: its probes by the manager's metrics, and its Ready
// condition read every fairSampleEvery.
type probeHealth struct {
	tally             probeTally
	samples, notReady int
	// messages of the samples whose Ready was not ProbeSucceeded.
	messages map[string]int
}

// String reads "60 probes: 60 answered, none failed; Ready 60 of 60 samples".
func (p probeHealth) String() string {
	s := fmt.Sprintf("%s; Ready (ProbeSucceeded) in %d of %d samples", p.tally, p.samples-p.notReady, p.samples)
	if p.notReady > 0 {
		s += " (otherwise: " + noiseConditionSummary(p.messages) + ")"
	}
	return s
}

// fairPhase is one phase of the measure.
type fairPhase struct {
	noisePhase
	// victim: the victim's probed state; cluster: the cluster state.
	victim, cluster probeHealth
	// The noisy phase only. warm: from creating the noisy states until
	// every slow state showed a probe's outcome and every stalling state
	// had sent its first request.
	warm time.Duration
	// decided: from the expression namespace's state edit until every one
	// of its switches showed a decision on the new response; verdicts
	// tallies those decisions.
	decided  time.Duration
	verdicts map[string]int
	// stalling and slow: the probes of the noisy states over the phase;
	// their Ready conditions sampled during it (state-samples by reason
	// and message) and at its end.
	stalling, slow              probeTally
	stallSampled, slowSampled   map[string]int
	stallAtEnd, slowAtEnd       map[string]int
	stallRequests, slowRequests int64
	// stallHeld: the most stalling answers the server held at once.
	stallHeld int64
}

// fairResult is the fairness measure.
type fairResult struct {
	cfg config
	// exprEval and slowEval: one evaluation of a switch's expression and
	// of the slow bodyExpression in the bench's own process.
	exprEval, slowEval time.Duration
	exprOutcome        string
	slowOutcome        string
	flips              *flipSuiteResult
	quiet, noisy       []fairPhase
	limit              int64
}

func (r *fairResult) stallStates() int { return r.cfg.fairStallNamespaces * r.cfg.fairStallStates }

// expectedDecide is how long the expression namespace's evaluations take
// at its share of a core: each one's time ÷ probe.NamespaceEvaluationShare.
func (r *fairResult) expectedDecide() time.Duration {
	return time.Duration(float64(r.cfg.fairExpressions) * float64(r.exprEval) / probe.NamespaceEvaluationShare)
}

func (r *fairResult) peak(phases []fairPhase) int64 {
	var p int64
	for _, ph := range phases {
		p = max(p, ph.peakRSS)
	}
	return p
}

// measureFairEvaluations times one evaluation of three of the switches'
// expressions and of the slow bodyExpression, in the bench's process.
func measureFairEvaluations(res *fairResult) {
	var took []time.Duration
	for i := range 3 {
		got := match.Response{StatusCode: "200", Body: fmt.Sprintf("bench-%d", time.Now().UnixNano())}
		t0 := time.Now()
		res.exprOutcome = match.EvaluateVerdict(fairExpression(1_000_000+i), got)
		took = append(took, time.Since(t0))
	}
	res.exprEval = median(took)
	took = took[:0]
	body := string(fairSlowBody())
	for range 3 {
		t0 := time.Now()
		_, err := match.RecordedBody(fairSlowExpression, match.Response{StatusCode: "200", Body: body})
		took = append(took, time.Since(t0))
		res.slowOutcome = "recorded"
		if err != nil {
			res.slowOutcome = strings.TrimPrefix(err.Error(), "bodyExpression failed: ")
		}
	}
	res.slowEval = median(took)
}

// fairness sets up the victim's cfg.fairFlipN switches following one fixed
// state, its probed state, the cluster state and the expression
// namespace's cfg.fairExpressions switches, then runs cfg.fairReps rounds,
// each of a quiet phase (the victim's flip each way) and a noisy phase
// (the noise on, the same flips, the expression namespace decided, the
// noise off), in an order that rotates from round to round, with one
// manager throughout.
func (b *bench) fairness(ctx context.Context) (*fairResult, error) {
	h, cfg := b.h, b.cfg
	res := &fairResult{cfg: cfg, flips: &flipSuiteResult{n: cfg.fairFlipN}, limit: chartMemoryLimit()}
	measureFairEvaluations(res)
	b.progress("fairness: one expected expression takes %s here (%s), the slow bodyExpression %s (%s)",
		round(res.exprEval), res.exprOutcome, round(res.slowEval), res.slowOutcome)
	srv := &fairServers{}
	defer srv.Close()
	var err error
	if srv.stall, err = startStallServer(); err != nil {
		return nil, err
	}
	if srv.slow, err = startNoiseServer(fairSlowBody()); err != nil {
		return nil, err
	}
	if srv.ok, err = startEndpoint(modeOK); err != nil {
		return nil, err
	}
	m, err := h.startManager(managerOptions{probes: true, metrics: true})
	if err != nil {
		return nil, err
	}
	defer func() { m.stop() }()
	victim := inNamespace(fairVictimNS, cfg.fairFlipN)
	b.progress("fairness: creating the victim's state and %d DynamicIngresses, its probed state and the cluster state", victim.n)
	if _, err := b.setupOperator(ctx, victim); err != nil {
		return nil, err
	}
	if err := b.fairProbedStates(ctx, m, srv.ok.URL); err != nil {
		return nil, err
	}
	b.progress("fairness: creating %d DynamicIngresses with distinct expressions", cfg.fairExpressions)
	if err := b.fairExpressionSwitches(ctx); err != nil {
		return nil, err
	}
	for _, ns := range append(fairStallNamespaces(cfg), fairSlowNS) {
		if err := h.ensureNamespace(ctx, ns); err != nil {
			return nil, err
		}
	}
	flips := func(rep int, who string) error {
		for _, active := range []bool{true, false} {
			run, err := b.operatorFlip(ctx, victim, active, m)
			if err != nil {
				return err
			}
			run.who = who
			res.flips.add(run)
			b.progress("fairness flip N=%d round %d %s, %s: %s (p50 %s), statuses %s; CPU s until then %s",
				victim.n, rep+1, direction(active), who, round(run.total), round(run.p50), round(run.statusDone), run.cpuArrived)
		}
		return nil
	}
	for rep := range cfg.fairReps {
		quiet := func() error {
			ph, err := b.fairPhaseRun(ctx, m, func(*fairPhase) error { return flips(rep, "operator") })
			if err != nil {
				return err
			}
			res.quiet = append(res.quiet, ph)
			b.progress("fairness round %d, without the noise: peak RSS %s, manager %.2f cores; victim's probe: %s; cluster state: %s",
				rep+1, mib(ph.peakRSS), ph.cores, ph.victim, ph.cluster)
			return nil
		}
		noisy := func() error {
			ph, err := b.fairPhaseRun(ctx, m, func(ph *fairPhase) error {
				return b.fairNoisy(ctx, m, srv, rep, ph, func() error { return flips(rep, fairWho) })
			})
			if err != nil {
				return err
			}
			res.noisy = append(res.noisy, ph)
			b.progress("fairness round %d, with the noise: peak RSS %s of the limit %s, manager %.2f cores; %d expressions decided after %s (at the namespace's share: %s); victim's probe: %s; cluster state: %s",
				rep+1, mib(ph.peakRSS), mib(res.limit), ph.cores, cfg.fairExpressions, round(ph.decided), round(res.expectedDecide()), ph.victim, ph.cluster)
			b.progress("fairness round %d: stalling states: %s; held at most %d answers at once; Ready sampled: %s", rep+1, ph.stalling, ph.stallHeld, noiseConditionSummary(ph.stallSampled))
			b.progress("fairness round %d: slow states: %s; Ready sampled: %s", rep+1, ph.slow, noiseConditionSummary(ph.slowSampled))
			return nil
		}
		if err := b.runRound(ctx, rep, []func() error{quiet, noisy}); err != nil {
			return nil, err
		}
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	m.stop()
	if err := client.IgnoreNotFound(h.c.Delete(ctx, &v1beta1.ClusterDynamicIngressState{ObjectMeta: metav1.ObjectMeta{Name: fairClusterState}})); err != nil {
		return nil, err
	}
	for _, ns := range append(fairStallNamespaces(cfg), fairSlowNS, fairExprNS, fairVictimNS) {
		if err := h.clearNamespace(ctx, ns); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func fairStallNamespaces(cfg config) []string {
	out := make([]string, 0, cfg.fairStallNamespaces)
	for i := range cfg.fairStallNamespaces {
		out = append(out, fairStallNS(i))
	}
	return out
}

// fairProbedStates creates the victim's probed state and the cluster
// state (its grant admitting the victim's namespace), both probing url
// every probeInterval through fairCheapExpression, and waits until both
// succeed.
func (b *bench) fairProbedStates(ctx context.Context, m *managerProc, url string) error {
	h := b.h
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"victim"}}}`, fairGrantLabel)
	if _, err := h.cs.CoreV1().Namespaces().Patch(ctx, fairVictimNS, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return err
	}
	own := probedState(fairVictimNS, fairVictimProbe, url+"/victim").BodyExpression(fairCheapExpression)
	if err := h.c.Create(ctx, own.Obj()); err != nil {
		return err
	}
	cluster := probedState("", fairClusterState, url+"/cluster").BodyExpression(fairCheapExpression).Cluster().
		FollowersMatching(map[string]string{fairGrantLabel: "victim"})
	if err := h.c.Create(ctx, cluster.Obj()); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		v, c, err := b.fairProbedReady(ctx)
		if err != nil {
			return err
		}
		if v == "" && c == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("fairness: the probed states did not succeed within a minute: victim %q, cluster %q (%v)", v, c, m.check())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// fairProbedReady reads the Ready conditions of the victim's probed state
// and of the cluster state: "" for each that shows ProbeSucceeded, else
// its reason and message.
func (b *bench) fairProbedReady(ctx context.Context) (victim, cluster string, err error) {
	why := func(conds []metav1.Condition) string {
		c := meta.FindStatusCondition(conds, v1beta1.ConditionReady)
		switch {
		case c == nil:
			return "no condition"
		case c.Reason == v1beta1.ReasonProbeSucceeded:
			return ""
		}
		return c.Reason + " (" + c.Message + ")"
	}
	s := &v1beta1.DynamicIngressState{}
	if err := b.h.c.Get(ctx, client.ObjectKey{Namespace: fairVictimNS, Name: fairVictimProbe}, s); err != nil {
		return "", "", err
	}
	cs := &v1beta1.ClusterDynamicIngressState{}
	if err := b.h.c.Get(ctx, client.ObjectKey{Name: fairClusterState}, cs); err != nil {
		return "", "", err
	}
	return why(s.Status.Conditions), why(cs.Status.Conditions), nil
}

// fairExpressionSwitches creates the expression namespace's fixed state
// answering 503 and its switches, each expecting 200 and its own
// fairExpression (the status code is checked first: at 503 no expression
// is evaluated), and waits until every one is Ready and passive.
func (b *bench) fairExpressionSwitches(ctx context.Context) error {
	h, n := b.h, b.cfg.fairExpressions
	s := inNamespace(fairExprNS, n)
	if err := b.ensureNamespaces(ctx, s); err != nil {
		return err
	}
	w, err := s.watchArrivals(ctx, b.switchObjects, diSettled(false))
	if err != nil {
		return err
	}
	defer w.stop()
	w.startAt(time.Now())
	if err := h.c.Create(ctx, s.state("503")); err != nil {
		return err
	}
	if err := parallel(n, 32, func(i int) error {
		di := s.dynamicIngress(i)
		di.Spec.Expected.Expression = fairExpression(i)
		return h.c.Create(ctx, di)
	}); err != nil {
		return fmt.Errorf("creating %d DynamicIngresses with expressions: %w", n, err)
	}
	return w.wait(flipTimeout(n, 100*time.Millisecond))
}

// decidedOn matches a DynamicIngress whose Active condition, at its
// generation, is the decision on its state's response code: "State "flip"
// responded 200, which does not match spec.expected: <the verdict>".
func decidedOn(code string) func(k8sruntime.Object) (string, bool) {
	return func(o k8sruntime.Object) (string, bool) {
		di, ok := o.(*v1beta1.DynamicIngress)
		if !ok {
			return "", false
		}
		c := meta.FindStatusCondition(di.Status.Conditions, v1beta1.ConditionActive)
		return di.Name, c != nil && c.ObservedGeneration == di.Generation && strings.Contains(c.Message, " responded "+code+",")
	}
}

// fairPhaseRun runs one phase from a fresh peak (noisePhaseRun), reading
// the victim's probed state and the cluster state throughout.
func (b *bench) fairPhaseRun(ctx context.Context, m *managerProc, run func(*fairPhase) error) (fairPhase, error) {
	var ph fairPhase
	before, err := scrapeURL(ctx, m.metricsURL, []string{"dynamicingressstate_probe_"})
	if err != nil {
		return ph, err
	}
	smp := b.startSampler(ctx)
	ph.noisePhase, err = b.noisePhaseRun(m, func() error { return run(&ph) })
	smp.stop()
	if err != nil {
		return ph, err
	}
	after, err := scrapeURL(ctx, m.metricsURL, []string{"dynamicingressstate_probe_"})
	if err != nil {
		return ph, err
	}
	ph.victim = smp.victim
	ph.victim.tally = probeTallyOf(after, []string{fairVictimNS}, fairVictimProbe).sub(probeTallyOf(before, []string{fairVictimNS}, fairVictimProbe))
	ph.cluster = smp.cluster
	ph.cluster.tally = probeTallyOf(after, []string{""}, fairClusterState).sub(probeTallyOf(before, []string{""}, fairClusterState))
	ph.stallSampled, ph.slowSampled = smp.stall, smp.slow
	return ph, nil
}

// sampler reads, every fairSampleEvery until stop, the Ready conditions of
// the victim's probed state, the cluster state and the noisy states.
type sampler struct {
	cancel          context.CancelFunc
	done            chan struct{}
	victim, cluster probeHealth
	stall, slow     map[string]int
}

func (b *bench) startSampler(ctx context.Context) *sampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &sampler{cancel: cancel, done: make(chan struct{}), stall: map[string]int{}, slow: map[string]int{},
		victim: probeHealth{messages: map[string]int{}}, cluster: probeHealth{messages: map[string]int{}}}
	stallNS := map[string]bool{}
	for _, ns := range fairStallNamespaces(b.cfg) {
		stallNS[ns] = true
	}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(fairSampleEvery)
		defer tick.Stop()
		for {
			if v, c, err := b.fairProbedReady(ctx); err == nil {
				for _, x := range []struct {
					h   *probeHealth
					why string
				}{{&s.victim, v}, {&s.cluster, c}} {
					x.h.samples++
					if x.why != "" {
						x.h.notReady++
						x.h.messages[x.why]++
					}
				}
			}
			list := &v1beta1.DynamicIngressStateList{}
			if err := b.h.c.List(ctx, list); err == nil {
				for _, st := range list.Items {
					switch {
					case stallNS[st.Namespace]:
						s.stall[readySummary(&st)]++
					case st.Namespace == fairSlowNS:
						s.slow[readySummary(&st)]++
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *sampler) stop() {
	s.cancel()
	<-s.done
}

// readySummary is a state's Ready condition as "reason (message)", its URL
// left out.
func readySummary(s *v1beta1.DynamicIngressState) string {
	c := meta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionReady)
	if c == nil {
		return "no condition"
	}
	msg := c.Message
	if s.Spec.Probe != nil {
		msg = strings.ReplaceAll(msg, s.Spec.Probe.URL, "<url>")
	}
	return c.Reason + " (" + msg + ")"
}

// readyTally tallies the Ready conditions of the states of namespaces.
func (b *bench) readyTally(ctx context.Context, namespaces ...string) (map[string]int, error) {
	out := map[string]int{}
	for _, ns := range namespaces {
		list := &v1beta1.DynamicIngressStateList{}
		if err := b.h.c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		for _, s := range list.Items {
			out[readySummary(&s)]++
		}
	}
	return out, nil
}

// fairNoisy is the noisy phase: the stalling and slow states created and
// probing, the expression namespace's state flipped to 200 with a body of
// this round (a response none of its verdicts was evaluated on), then the
// victim's flips, then the wait until every expression switch is decided;
// then the noise is taken off again: the noisy states deleted, the
// expression state back to 503.
func (b *bench) fairNoisy(ctx context.Context, m *managerProc, srv *fairServers, rep int, ph *fairPhase, flips func() error) error {
	h, cfg := b.h, b.cfg
	stallNS := fairStallNamespaces(cfg)
	slowW, err := watchArrivals(ctx, states(h, fairSlowNS), cfg.fairSlowStates, stateProbed)
	if err != nil {
		return err
	}
	defer slowW.stop()
	stall0, slow0 := srv.stall.count.Load(), srv.slow.count.Load()
	srv.stall.held.ResetPeak()
	t0 := time.Now()
	slowW.startAt(t0)
	stallTimeout := cfg.fairStallInterval
	if err := parallel(len(stallNS)*cfg.fairStallStates, 16, func(i int) error {
		ns, k := stallNS[i/cfg.fairStallStates], i%cfg.fairStallStates
		s := builders.ProbedState(ns, noiseStateName(k), fmt.Sprintf("%s/%s/%d", srv.stall.URL, ns, k)).
			Interval(cfg.fairStallInterval).Timeout(stallTimeout).BodyExpression(fairCheapExpression).Obj()
		return h.c.Create(ctx, s)
	}); err != nil {
		return fmt.Errorf("creating the stalling states: %w", err)
	}
	if err := parallel(cfg.fairSlowStates, 16, func(i int) error {
		s := probedState(fairSlowNS, noiseStateName(i), fmt.Sprintf("%s/slow/%d", srv.slow.URL, i)).
			Timeout(probeInterval).BodyExpression(fairSlowExpression).Obj()
		return h.c.Create(ctx, s)
	}); err != nil {
		return fmt.Errorf("creating the slow states: %w", err)
	}
	if err := slowW.wait(2 * time.Minute); err != nil {
		return fmt.Errorf("fairness: waiting for every slow state to probe: %w (%v)", err, m.check())
	}
	// Every stalling state's first probe comes within its interval (the
	// scheduler's start delay).
	deadline := time.Now().Add(cfg.fairStallInterval + time.Minute)
	for srv.stall.count.Load()-stall0 < int64(len(stallNS)*cfg.fairStallStates) {
		if time.Now().After(deadline) {
			return fmt.Errorf("fairness: %d of %d stalling states probed within %s", srv.stall.count.Load()-stall0, len(stallNS)*cfg.fairStallStates, cfg.fairStallInterval+time.Minute)
		}
		time.Sleep(100 * time.Millisecond)
	}
	ph.warm = time.Since(t0)
	b.progress("fairness round %d: the noise runs after %s (%d answers held now); flipping the expression namespace", rep+1, round(ph.warm), srv.stall.held.Now())

	exprs := inNamespace(fairExprNS, cfg.fairExpressions)
	decided, err := exprs.watchArrivals(ctx, b.switchObjects, decidedOn("200"))
	if err != nil {
		return err
	}
	defer decided.stop()
	te := time.Now()
	decided.startAt(te)
	patch := fmt.Sprintf(`{"spec":{"fixedResponse":{"status":"200","body":"round-%d"}}}`, rep+1)
	if err := h.c.Patch(ctx, exprs.state(""), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return err
	}
	time.Sleep(fairExprLead)
	if err := flips(); err != nil {
		return err
	}
	bound := 3*time.Duration(float64(cfg.fairExpressions)*float64(100*time.Millisecond)/probe.NamespaceEvaluationShare) + 2*time.Minute
	if err := decided.wait(bound); err != nil {
		return fmt.Errorf("fairness: the expression namespace's decisions: %w (%v)", err, m.check())
	}
	ph.decided = maxDuration(decided.durations())
	if ph.verdicts, err = b.verdictTally(ctx); err != nil {
		return err
	}
	ph.stallHeld = srv.stall.held.Peak()

	after, err := scrapeURL(ctx, m.metricsURL, []string{"dynamicingressstate_probe_"})
	if err != nil {
		return err
	}
	ph.stalling = probeTallyOf(after, stallNS, "")
	ph.slow = probeTallyOf(after, []string{fairSlowNS}, "")
	if ph.stallAtEnd, err = b.readyTally(ctx, stallNS...); err != nil {
		return err
	}
	if ph.slowAtEnd, err = b.readyTally(ctx, fairSlowNS); err != nil {
		return err
	}
	ph.stallRequests, ph.slowRequests = srv.stall.count.Load()-stall0, srv.slow.count.Load()-slow0

	// The noise off: the states gone, the expression state at 503 (its
	// switches decide on the status code alone).
	for _, ns := range append(stallNS, fairSlowNS) {
		if err := h.c.DeleteAllOf(ctx, &v1beta1.DynamicIngressState{}, client.InNamespace(ns)); err != nil {
			return err
		}
	}
	back, err := exprs.watchArrivals(ctx, b.switchObjects, decidedOn("503"))
	if err != nil {
		return err
	}
	defer back.stop()
	back.startAt(time.Now())
	if err := h.c.Patch(ctx, exprs.state(""), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"fixedResponse":{"status":"503","body":""}}}`))); err != nil {
		return err
	}
	if err := back.wait(flipTimeout(cfg.fairExpressions, 100*time.Millisecond)); err != nil {
		return fmt.Errorf("fairness: the expression namespace back to 503: %w", err)
	}
	return b.fairNoiseGone(ctx, srv, append(stallNS, fairSlowNS))
}

// verdictTally tallies the expression namespace's decisions by what
// follows "spec.expected: " in their Active condition.
func (b *bench) verdictTally(ctx context.Context) (map[string]int, error) {
	list := &v1beta1.DynamicIngressList{}
	if err := b.h.c.List(ctx, list, client.InNamespace(fairExprNS)); err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, di := range list.Items {
		c := meta.FindStatusCondition(di.Status.Conditions, v1beta1.ConditionActive)
		if c == nil {
			out["no condition"]++
			continue
		}
		_, detail, ok := strings.Cut(c.Message, "spec.expected: ")
		if !ok {
			detail = c.Message
		}
		out[c.Reason+": "+detail]++
	}
	return out, nil
}

// fairNoiseGone waits until the noisy states are gone and no probe has
// reached the noise servers for a stalling state's timeout and an
// interval.
func (b *bench) fairNoiseGone(ctx context.Context, srv *fairServers, namespaces []string) error {
	deadline := time.Now().Add(time.Minute + b.cfg.fairStallInterval)
	count := func() int64 { return srv.stall.count.Load() + srv.slow.count.Load() }
	last, since := count(), time.Now()
	for {
		left := 0
		for _, ns := range namespaces {
			list := &v1beta1.DynamicIngressStateList{}
			if err := b.h.c.List(ctx, list, client.InNamespace(ns)); err != nil {
				return err
			}
			left += len(list.Items)
		}
		if c := count(); c != last {
			last, since = c, time.Now()
		} else if left == 0 && srv.stall.held.Now() == 0 && time.Since(since) > probeInterval+time.Second {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("fairness: %d noisy states left, or probes still reaching the servers (%d answers held), after deleting them", left, srv.stall.held.Now())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkFairness asserts what the fairness measure must have done, never
// how fast: every flip ran in both phases, the noise reached its servers,
// every expression switch was decided, and every reading is there.
func checkFairness(t *testing.T, cfg config, res *fairResult) {
	t.Helper()
	for _, who := range []string{"operator", fairWho} {
		for _, active := range []bool{true, false} {
			if got := len(res.flips.of(who, &active)); got != cfg.fairReps {
				t.Errorf("fairness: %d flips %s by %q, want %d", got, direction(active), who, cfg.fairReps)
			}
		}
	}
	if len(res.quiet) != cfg.fairReps || len(res.noisy) != cfg.fairReps {
		t.Errorf("fairness: %d quiet and %d noisy phases, want %d of each", len(res.quiet), len(res.noisy), cfg.fairReps)
	}
	for _, ph := range res.noisy {
		if ph.stallRequests == 0 || ph.slowRequests == 0 {
			t.Errorf("fairness: no probe reached a noise server (stalling %d, slow %d)", ph.stallRequests, ph.slowRequests)
		}
		if ph.slow.probes == 0 || ph.stalling.probes == 0 {
			t.Errorf("fairness: the manager's metrics counted no probe of the noisy states (stalling %v, slow %v)", ph.stalling, ph.slow)
		}
		if ph.decided == 0 {
			t.Errorf("fairness: no decision time for the expression namespace")
		}
	}
	for _, ph := range append(append([]fairPhase(nil), res.quiet...), res.noisy...) {
		if ph.victim.samples == 0 || ph.cluster.samples == 0 || ph.victim.tally.probes == 0 || ph.cluster.tally.probes == 0 {
			t.Errorf("fairness: a reading of the victim's probed state or of the cluster state is missing: %v / %v", ph.victim, ph.cluster)
		}
	}
	if res.peak(res.quiet) == 0 || res.peak(res.noisy) == 0 || res.limit == 0 {
		t.Errorf("fairness: a memory reading is missing: peak RSS %d / %d, limit %d", res.peak(res.quiet), res.peak(res.noisy), res.limit)
	}
}

// noiseDesc says what the noise is, for the report's rows.
func (r *fairResult) noiseDesc() string {
	return fmt.Sprintf("%d namespace(s) of %d stalling 1 MiB answers, %d slow bodyExpressions, %d distinct expressions",
		r.cfg.fairStallNamespaces, r.cfg.fairStallStates, r.cfg.fairSlowStates, r.cfg.fairExpressions)
}

// sumHealth adds the phases' probe figures of the victim's probed state or
// of the cluster state.
func sumHealth(phases []fairPhase, pick func(fairPhase) probeHealth) probeHealth {
	out := probeHealth{tally: probeTally{failures: map[string]float64{}}, messages: map[string]int{}}
	for _, ph := range phases {
		p := pick(ph)
		out.tally.probes += p.tally.probes
		for k, v := range p.tally.failures {
			out.tally.failures[k] += v
		}
		out.samples += p.samples
		out.notReady += p.notReady
		for k, v := range p.messages {
			out.messages[k] += v
		}
	}
	return out
}

// summaryRows adds the measure's figures beside their baselines.
func (r *fairResult) summaryRows(sum *table) {
	for _, active := range []bool{true, false} {
		with, without := figures(r.flips.of(fairWho, &active)), figures(r.flips.of("operator", &active))
		sum.add(fmt.Sprintf("fair shares: flip N=%d %s with %s (bar: within %.1f×), every Ingress arrived (median of %d)",
			r.cfg.fairFlipN, direction(active), r.noiseDesc(), fairRatioBar, with.flips),
			round(with.total), fmt.Sprintf("the same flip without the noise (median of %d)", without.flips), round(without.total), durRatio(with.total, without.total))
	}
	sum.add(fmt.Sprintf("fair shares: manager peak RSS with %s", r.noiseDesc()),
		mib(r.peak(r.noisy)), "the chart's memory limit", mib(r.limit), ratio(float64(r.peak(r.noisy)), float64(r.limit)))
	for _, x := range []struct {
		what string
		pick func(fairPhase) probeHealth
	}{{"the victim's probed state", func(p fairPhase) probeHealth { return p.victim }}, {"the cluster state", func(p fairPhase) probeHealth { return p.cluster }}} {
		h := sumHealth(r.noisy, x.pick)
		sum.add(fmt.Sprintf("fair shares: %s's failed probes with the noise (of %.0f)", x.what, h.tally.probes),
			fmt.Sprintf("%.0f", h.tally.failed()), "required", "0", ratio(h.tally.failed(), 0))
	}
	var decided []time.Duration
	for _, ph := range r.noisy {
		decided = append(decided, ph.decided)
	}
	sum.add(fmt.Sprintf("fair shares: %d switches with distinct expressions, all decided after their state's edit (median of %d)", r.cfg.fairExpressions, len(decided)),
		round(median(decided)), fmt.Sprintf("%d evaluations of %s at the namespace's %.0f %% of a core", r.cfg.fairExpressions, round(r.exprEval), probe.NamespaceEvaluationShare*100),
		round(r.expectedDecide()), durRatio(median(decided), r.expectedDecide()))
}

// markdown is the measure's section of the report.
func (r *fairResult) markdown() string {
	var sb strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	c := r.cfg
	w("#### Fair shares: a victim namespace's flip beside namespaces that take all they can\n\n")
	w("With one manager throughout, %d DynamicIngresses of the namespace `%s` follow one fixed state, and the namespace has a state probing `{\"ok\": true}` every %s through `bodyExpression: %s`; ",
		c.fairFlipN, fairVictimNS, probeInterval, fairCheapExpression)
	w("a ClusterDynamicIngressState probes the same way, its grant admitting that namespace. The noise, in other namespaces, all of it on 127.0.0.1 servers of the bench:\n\n")
	w("- answer memory: %d namespace(s) of %d states each (interval and timeout %s) whose answer announces %d bytes, sends all but %d and stalls until the probe's timeout; %s;\n",
		c.fairStallNamespaces, c.fairStallStates, c.fairStallInterval, probe.MaxExpressionInput, fairStallShort, stallPacing(c.fairStallInterval))
	w("- body expressions: %d states of one namespace probing every %s (timeout %s) `bodyExpression: %s` over a JSON array of %d zeros (%d bytes): %s in the bench's process (%s);\n",
		c.fairSlowStates, probeInterval, probeInterval, fairSlowExpression, fairSlowZeros, len(fairSlowBody()), round(r.slowEval), r.slowOutcome)
	w("- expected expressions: %d DynamicIngresses of one namespace, each expecting 200 and its own `expected.expression` `%s` (i from 0 to %d): %s in the bench's process (%s), following a fixed state at 503 (the status code is checked first, so nothing is evaluated) that the noisy phase edits to 200 with a body of its own, %s before the victim's first flip.\n\n",
		c.fairExpressions, strings.Replace(fairExpression(0), "response.code + 0", "response.code + i", 1), c.fairExpressions-1, round(r.exprEval), r.exprOutcome, fairExprLead)
	w("The manager evaluates at most %d expressions at once, in turn between the namespaces that wait, each namespace held to %.0f %% of a core; a namespace's answers hold at most %d MiB, all namespaces' %d MiB, cluster states have %d MiB of their own (docs/behaviour.md, \"Fair shares\"). ",
		probe.MaxConcurrentEvaluations, probe.NamespaceEvaluationShare*100, probe.MaxAnswerBytesPerTenant>>20, probe.NamespaceAnswerPool>>20, probe.ClusterAnswerReserve>>20)
	w("Each of %d rounds has a phase without the noise and one with it, in an order that rotates from round to round. In each phase the victim's state is flipped each way as in the flip measure (from the edit until every Ingress shows the new shape). ", c.fairReps)
	w("The noisy phase creates the noisy states, waits until every slow state shows a probe's outcome and every stalling state has sent a request, edits the expression namespace's state, flips, then waits until every expression switch shows its decision on the new response; ")
	w("then the noisy states are deleted, the expression state goes back to 503, and the next phase waits until no probe reaches the noise servers. ")
	w("Peak RSS is the manager's VmHWM over the phase (reset at its start), against the chart's memory limit. Probes are counted by the manager's metrics (`%s`, `%s`); Ready conditions are read every %s.\n\n",
		opmetrics.ProbeDurationName, opmetrics.ProbeFailuresName, fairSampleEvery)
	ft := &table{header: []string{"N", "direction", "writer", "flips", "all arrived", "range", "p50 arrival", "p99 arrival", "first", "returned / statuses", "÷ without the noise", "CPU s: manager / apiserver / etcd / bench"}}
	for _, active := range []bool{true, false} {
		without := figures(r.flips.of("operator", &active))
		for _, who := range []string{"operator", fairWho} {
			f := figures(r.flips.of(who, &active))
			if f.flips == 0 {
				continue
			}
			ft.add(flipRow(c.fairFlipN, active, who, f, durRatio(f.total, without.total))...)
		}
	}
	w("%s\n", ft)
	pt := &table{header: []string{"round", "phase", "took", "manager peak RSS", "÷ memory limit", "manager CPU (cores)", "victim's probed state", "cluster state", "expression switches all decided after"}}
	for i := range c.fairReps {
		if i < len(r.quiet) {
			q := r.quiet[i]
			pt.add(fmt.Sprint(i+1), "without the noise", round(q.elapsed), mib(q.peakRSS), ratio(float64(q.peakRSS), float64(r.limit)), fmt.Sprintf("%.2f", q.cores),
				q.victim.String(), q.cluster.String(), "–")
		}
		if i < len(r.noisy) {
			n := r.noisy[i]
			pt.add(fmt.Sprint(i+1), "with the noise", round(n.elapsed), mib(n.peakRSS), ratio(float64(n.peakRSS), float64(r.limit)), fmt.Sprintf("%.2f", n.cores),
				n.victim.String(), n.cluster.String(), fmt.Sprintf("%s (%s at the namespace's share)", round(n.decided), round(r.expectedDecide())))
		}
	}
	w("%s\n", pt)
	nt := &table{header: []string{"round", "noisy namespaces", "states", "requests at the server", "probes (manager's metrics)", "Ready sampled every second (state-samples)", "Ready at the end"}}
	for i, n := range r.noisy {
		nt.add(fmt.Sprint(i+1), fmt.Sprintf("stalling answers (%d namespace(s); at most %d answers held at once)", c.fairStallNamespaces, n.stallHeld), fmt.Sprint(r.stallStates()),
			fmt.Sprint(n.stallRequests), n.stalling.String(), noiseConditionSummary(n.stallSampled), noiseConditionSummary(n.stallAtEnd))
		nt.add(fmt.Sprint(i+1), "slow bodyExpressions", fmt.Sprint(c.fairSlowStates),
			fmt.Sprint(n.slowRequests), n.slow.String(), noiseConditionSummary(n.slowSampled), noiseConditionSummary(n.slowAtEnd))
		nt.add(fmt.Sprint(i+1), "distinct expressions", fmt.Sprint(c.fairExpressions), "–",
			fmt.Sprintf("all decided %s after the edit", round(n.decided)), "–", noiseConditionSummary(n.verdicts))
	}
	w("%s", nt)
	w("\nThe noisy phase took as long as the expression namespace's evaluations: they run at its share of a core, whatever else waits. The bench's servers run in the bench's process, on the same cores.\n")
	return sb.String()
}

// TestFairnessNoise checks what the measure's description says of its
// expressions and answers, in every `go test`: the webhook admits them,
// the switches' expressions are distinct, and the slow answer is within
// what response.json decodes.
func TestFairnessNoise(t *testing.T) {
	for _, expr := range []string{fairSlowExpression, fairCheapExpression} {
		if err := match.CompileBodyExpression(expr); err != nil {
			t.Errorf("the webhook refuses bodyExpression %q: %v", expr, err)
		}
	}
	seen := map[string]bool{}
	for _, i := range []int{0, 1, 1999} {
		expr := fairExpression(i)
		if err := match.CompileExpression(expr); err != nil {
			t.Errorf("the webhook refuses expected.expression %q: %v", expr, err)
		}
		if seen[expr] {
			t.Errorf("fairExpression(%d) repeats another", i)
		}
		seen[expr] = true
	}
	if fairSlowZeros+1 > match.MaxJSONValues {
		t.Errorf("the slow answer holds %d values, more than response.json decodes (%d)", fairSlowZeros+1, match.MaxJSONValues)
	}
	got, err := match.RecordedBody("size(response.json)", match.Response{StatusCode: "200", Body: string(fairSlowBody())})
	if err != nil || got != fmt.Sprint(fairSlowZeros) {
		t.Errorf("size(response.json) of the slow answer = %q, %v; want %d", got, err, fairSlowZeros)
	}
}

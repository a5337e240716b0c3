package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// The notifications measure (BENCH_ONLY=notify): switches of one
// namespace following the flip measure's fixed state, and three
// DynamicIngressNotifiers of that state, each posting to a sink of its own
// on loopback. Each flip must give each notifier one StateChanged and one
// FlipCompleted, the latter soon after the last follower's status, and
// the notifiers must not write per follower (docs/notifications.md).

// notifiersPerFlip is how many notifiers name the state.
const notifiersPerFlip = 3

// notifyResult is the notifications measure.
type notifyResult struct {
	n     int
	setup time.Duration
	runs  []notifyRun
	// outage: the sinks answered 503 this long while the state flipped
	// outageFlips times; then each received, once per id, outageGot
	// StateChanged in the order of their sequences (inOrder) outageAfter
	// the sinks came back.
	outage, outageAfter time.Duration
	outageFlips         int
	outageGot           [notifiersPerFlip]int
	inOrder             bool
}

// notifyRun is one flip with its notifications.
type notifyRun struct {
	flip flipRun
	// counts are, per notifier, the notifications received by type
	// (CloudEvents type), each id once; requests all requests, retries
	// included.
	counts   [notifiersPerFlip]map[string]int
	requests [notifiersPerFlip]int
	// completedAfterStatus is, per notifier, when its FlipCompleted
	// arrived after the last follower's status showed the flip.
	completedAfterStatus [notifiersPerFlip]time.Duration
}

// benchSink records the CloudEvents posted to it, with their arrival.
type benchSink struct {
	*httptest.Server
	mu       sync.Mutex
	arrivals []sinkArrival
	// down answers 503 and records nothing.
	down bool
}

// setDown makes the sink answer 503 (down) or take what it is sent.
func (s *benchSink) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

type sinkArrival struct {
	at       time.Time
	id, kind string
	sequence int64
}

func newBenchSink() *benchSink {
	s := &benchSink{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			ID   string `json:"id"`
			Type string `json:"type"`
			Data struct {
				Sequence int64 `json:"sequence"`
			} `json:"data"`
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		_ = json.Unmarshal(body, &ev)
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.down {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		s.arrivals = append(s.arrivals, sinkArrival{at: time.Now(), id: ev.ID, kind: ev.Type, sequence: ev.Data.Sequence})
	}))
	return s
}

// take returns what arrived since the last take, and forgets it.
func (s *benchSink) take() []sinkArrival {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.arrivals
	s.arrivals = nil
	return out
}

// has reports whether a notification of type kind arrived since the last
// take.
func (s *benchSink) has(kind string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.arrivals {
		if a.kind == kind {
			return true
		}
	}
	return false
}

const flipCompletedType = "io.dynamicingress.flipcompleted"

// notifyFlips creates cfg.notifyN DynamicIngresses in one namespace and
// three notifiers of their state, and flips the state cfg.notifyReps
// times each way, counting what each sink received.
func (b *bench) notifyFlips(ctx context.Context) (*notifyResult, error) {
	h := b.h
	res := &notifyResult{n: b.cfg.notifyN}
	op := inNamespace("notify", b.cfg.notifyN)
	// Probes' guard option: the sinks are on loopback.
	m, err := h.startManager(managerOptions{probes: true})
	if err != nil {
		return nil, err
	}
	defer func() { m.stop() }()
	b.progress("notify: creating the state and %d DynamicIngresses", op.n)
	if res.setup, err = b.setupOperator(ctx, op); err != nil {
		return nil, err
	}
	var sinks [notifiersPerFlip]*benchSink
	for i := range sinks {
		sinks[i] = newBenchSink()
		defer sinks[i].Close()
		n := &v1beta1.DynamicIngressNotifier{}
		n.Namespace, n.Name = op.namespaces[0], fmt.Sprintf("notifier-%d", i)
		n.Spec.States = []v1beta1.StateReference{{Kind: v1beta1.StateKindNamespaced, Name: flipStateName}}
		n.Spec.Sink.URL = sinks[i].URL
		if err := h.c.Create(ctx, n); err != nil {
			return nil, err
		}
	}
	if err := b.waitNotifiersIdle(ctx, op.namespaces[0]); err != nil {
		return nil, err
	}
	if _, err := b.waitQuiet(ctx, 2*b.cfg.quiet, 60*time.Second); err != nil {
		return nil, err
	}
	for rep := range b.cfg.notifyReps {
		for _, active := range []bool{true, false} {
			for _, s := range sinks {
				s.take()
			}
			flip, err := b.operatorFlip(ctx, op, active, m)
			if err != nil {
				return nil, err
			}
			run := notifyRun{flip: flip}
			lastStatus := flip.start.Add(flip.statusDone)
			deadline := time.Now().Add(30 * time.Second)
			for _, s := range sinks {
				for !s.has(flipCompletedType) && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
				}
			}
			// Anything more (a second FlipCompleted, one per follower)
			// would come within this.
			time.Sleep(2 * time.Second)
			for i, s := range sinks {
				run.counts[i] = map[string]int{}
				seen := map[string]bool{}
				for _, a := range s.take() {
					run.requests[i]++
					if seen[a.id] {
						continue
					}
					seen[a.id] = true
					run.counts[i][a.kind]++
					if a.kind == flipCompletedType {
						run.completedAfterStatus[i] = a.at.Sub(lastStatus)
					}
				}
			}
			res.runs = append(res.runs, run)
			b.progress("notify round %d %s: statuses %s; notifications %v; FlipCompleted after the last status %v; notifier status writes %g, state status writes %g",
				rep+1, direction(active), round(flip.statusDone), run.counts, run.completedAfterStatus,
				flip.reqs.writes("dynamicingressnotifiers/status"), flip.reqs.writes("dynamicingressstates/status"))
		}
	}
	if err := b.notifyOutage(ctx, op, sinks, res); err != nil {
		return nil, err
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	m.stop()
	if err := h.clearNamespace(ctx, op.namespaces[0]); err != nil {
		return nil, err
	}
	return res, nil
}

// notifyOutage takes the sinks down for cfg.notifyOutage while the state
// flips four times, brings them back, and waits until each sink received
// every change once, in order.
func (b *bench) notifyOutage(ctx context.Context, op switches, sinks [notifiersPerFlip]*benchSink, res *notifyResult) error {
	res.outage, res.outageFlips = b.cfg.notifyOutage, 4
	for _, s := range sinks {
		s.take()
		s.setDown(true)
	}
	b.progress("notify: the sinks are down for %s while the state flips %d times", res.outage, res.outageFlips)
	start := time.Now()
	for i := range res.outageFlips {
		patch := fmt.Sprintf(`{"spec":{"fixedResponse":{"status":%q}}}`, stateCodeFor(i%2 == 0))
		if err := b.h.c.Patch(ctx, op.state(""), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			return err
		}
		time.Sleep(res.outage / time.Duration(res.outageFlips+1))
	}
	time.Sleep(time.Until(start.Add(res.outage)))
	back := time.Now()
	for _, s := range sinks {
		s.setDown(false)
	}
	// The backoff after a two-minute outage is about a minute; its
	// ceiling is 5 min.
	deadline := back.Add(6 * time.Minute)
	res.inOrder = true
	for i, s := range sinks {
		for {
			var seqs []int64
			seen := map[string]bool{}
			s.mu.Lock()
			for _, a := range s.arrivals {
				if a.kind == "io.dynamicingress.statechanged" && !seen[a.id] {
					seen[a.id] = true
					seqs = append(seqs, a.sequence)
				}
			}
			s.mu.Unlock()
			res.outageGot[i] = len(seqs)
			if len(seqs) >= res.outageFlips {
				for j := 1; j < len(seqs); j++ {
					if seqs[j] != seqs[j-1]+1 {
						res.inOrder = false
					}
				}
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("notify: sink %d received %d of %d changes within 6 min of coming back", i, len(seqs), res.outageFlips)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	res.outageAfter = time.Since(back)
	b.progress("notify: every sink received the %d changes %s after coming back (in order: %v)", res.outageFlips, round(res.outageAfter), res.inOrder)
	return nil
}

// waitNotifiersIdle waits until every notifier of namespace is Ready.
func (b *bench) waitNotifiersIdle(ctx context.Context, namespace string) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		list := &v1beta1.DynamicIngressNotifierList{}
		if err := b.h.c.List(ctx, list, client.InNamespace(namespace)); err != nil {
			return err
		}
		ready := 0
		for _, n := range list.Items {
			if meta.IsStatusConditionTrue(n.Status.Conditions, v1beta1.ConditionReady) {
				ready++
			}
		}
		if ready == notifiersPerFlip {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d notifiers Ready after 60s", ready, notifiersPerFlip)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// worstCompletedAfterStatus is the latest FlipCompleted after the last
// status, over every flip and notifier.
func (r *notifyResult) worstCompletedAfterStatus() time.Duration {
	var worst time.Duration
	for _, run := range r.runs {
		for _, d := range run.completedAfterStatus {
			worst = max(worst, d)
		}
	}
	return worst
}

// exact reports whether every notifier got exactly one StateChanged and
// one FlipCompleted at every flip, and nothing else.
func (r *notifyResult) exact() bool {
	for _, run := range r.runs {
		for _, c := range run.counts {
			if len(c) != 2 || c["io.dynamicingress.statechanged"] != 1 || c[flipCompletedType] != 1 {
				return false
			}
		}
	}
	return len(r.runs) > 0
}

// maxNotifierWrites is the most notifier status writes of one flip.
func (r *notifyResult) maxNotifierWrites() float64 {
	var most float64
	for _, run := range r.runs {
		most = max(most, run.flip.reqs.writes("dynamicingressnotifiers/status"))
	}
	return most
}

// notifyBound is how soon after the last status each FlipCompleted must
// arrive.
const notifyBound = time.Second

func (r *notifyResult) summaryRows(sum *table) {
	sum.add(fmt.Sprintf("notifications: flip N=%d with %d notifiers, FlipCompleted after the last status (worst of %d flips × %d notifiers)", r.n, notifiersPerFlip, len(r.runs), notifiersPerFlip),
		round(r.worstCompletedAfterStatus()), "required at most", round(notifyBound), durRatio(r.worstCompletedAfterStatus(), notifyBound))
	sum.add(fmt.Sprintf("notifications: flip N=%d, notifiers' status writes per flip (most of %d flips)", r.n, len(r.runs)),
		fmt.Sprintf("%g", r.maxNotifierWrites()), "followers", fmt.Sprint(r.n), ratio(r.maxNotifierWrites(), float64(r.n)))
}

func (r *notifyResult) markdown() string {
	var sb strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	w("#### Notifications: a flip of %d switches with %d notifiers\n\n", r.n, notifiersPerFlip)
	w("%d DynamicIngresses of one namespace follow the flip measure's fixed state; %d DynamicIngressNotifiers of the state (every event type, CloudEvents) each post to a sink of their own on loopback. All were Ready %s after the state's create. ",
		r.n, notifiersPerFlip, round(r.setup))
	w("The state is patched each way as in the flip measure; after the last follower's status, each sink is read for two more seconds. Notifications are counted once per id.\n\n")
	t := &table{header: []string{"flip", "last status", "per notifier: StateChanged / FlipCompleted / other", "requests", "FlipCompleted after the last status", "writes: notifiers' status / state's status / switches' status"}}
	for _, run := range r.runs {
		var counts, reqs, after []string
		for i := range notifiersPerFlip {
			c := run.counts[i]
			other := 0
			for k, v := range c {
				if k != "io.dynamicingress.statechanged" && k != flipCompletedType {
					other += v
				}
			}
			counts = append(counts, fmt.Sprintf("%d/%d/%d", c["io.dynamicingress.statechanged"], c[flipCompletedType], other))
			reqs = append(reqs, fmt.Sprint(run.requests[i]))
			after = append(after, round(run.completedAfterStatus[i]))
		}
		t.add(direction(run.flip.active), round(run.flip.statusDone), strings.Join(counts, ", "), strings.Join(reqs, ", "), strings.Join(after, ", "),
			fmt.Sprintf("%g / %g / %g", run.flip.reqs.writes("dynamicingressnotifiers/status"), run.flip.reqs.writes("dynamicingressstates/status"), run.flip.reqs.writes("dynamicingresses/status")))
	}
	w("%s\n", t)
	w("Then the sinks answered 503 for %s while the state flipped %d times; each received the %d changes (StateChanged, once per id: %v) %s after it came back, in the order of their sequences: %v.\n",
		r.outage, r.outageFlips, r.outageFlips, r.outageGot, round(r.outageAfter), r.inOrder)
	return sb.String()
}

package probe

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Spec is how one state is probed.
type Spec struct {
	Request  Request
	Interval time.Duration
	// FailureThreshold is the number of consecutive failures after which
	// the response is forgotten.
	FailureThreshold int
	// SuccessThreshold is the number of consecutive probes that must
	// return a response other than the state's current one before it is
	// recorded; under 1 counts as 1.
	SuccessThreshold int
}

// Observation is what the probes of one state have shown so far. A
// response that differs from the state's current one shows only once
// SuccessThreshold consecutive probes returned it; until then the
// Observation stays as it was.
type Observation struct {
	// Probed is false until the first probe of the current Spec is
	// recorded.
	Probed bool
	// Response is the state's current response, when Err is empty.
	Response Response
	// Err says why the last recorded probe failed; empty when it got a
	// response.
	Err string
	// Reason is the kind of failure in Err, empty when it got a response,
	// so that callers can count failures by reason.
	Reason FailureReason
	// ThresholdReached is true once FailureThreshold consecutive probes
	// failed: the response is to be forgotten.
	ThresholdReached bool
}

// Scheduler probes every registered state on its own interval, each in a
// goroutine of its own, so a slow endpoint never delays another state. It
// calls notify with the state's key whenever its Observation changes.
type Scheduler struct {
	prober *Prober
	clock  clock.WithTicker
	notify func(key string)
	// Observe, when set before Start, is told of every probe of a
	// registered state: how long it took and, for a failure, its reason
	// ("" for a response). It is not called for a state once Remove
	// returned, so a caller that forgets the state's metrics after Remove
	// does not see them come back.
	Observe func(key string, took time.Duration, reason FailureReason)
	// jitter returns the delay before the first probe of a state.
	jitter func(interval time.Duration) time.Duration
	// spread returns the random part added to a paced state's pause.
	spread func(pause time.Duration) time.Duration

	mu      sync.Mutex
	ctx     context.Context
	workers map[string]*worker
	wg      sync.WaitGroup
}

type worker struct {
	spec Spec
	// current is the state's response when the worker was made.
	current Response
	cancel  context.CancelFunc

	mu  sync.Mutex
	obs Observation
}

// MaxStartJitter bounds the random delay before the first probe of a
// state. The delay is drawn within the state's interval, so states created
// or reloaded together (a thousand at 30s after a restart) spread over the
// interval instead of hitting a shared service in one burst; the bound
// keeps the first answer of a state with a long interval near.
const MaxStartJitter = 30 * time.Second

// NewScheduler returns a Scheduler that runs once Start is called.
func NewScheduler(prober *Prober, clk clock.WithTicker, notify func(key string)) *Scheduler {
	return &Scheduler{
		prober:  prober,
		clock:   clk,
		notify:  notify,
		jitter:  startJitter,
		spread:  paceSpread,
		workers: map[string]*worker{},
	}
}

// startJitter draws the delay before the first probe of a state, in
// [0, min(interval, MaxStartJitter)).
func startJitter(interval time.Duration) time.Duration {
	if bound := min(interval, MaxStartJitter); bound > 0 {
		return time.Duration(rand.Int64N(int64(bound)))
	}
	return 0
}

// pacedPause is how long a state waits, from the start of a probe whose
// body expression read n bytes and evaluated for u.evaluation, before its
// next probe: 0 (the next tick) when the answer is small and quick,
// otherwise the longer of n / ExpressionBytesPerSecond and evaluation /
// ExpressionTimeShare, and a random part from spread, when that is longer
// than the interval, so that the state reads at most
// ExpressionBytesPerSecond and evaluates at most ExpressionTimeShare of a
// core on average (Prober.probe), and paced states do not probe in step.
// The scheduler then skips ticks until the pause is over.
func pacedPause(u usage, interval time.Duration, spread func(time.Duration) time.Duration) time.Duration {
	pause := max(time.Duration(u.bytes)*time.Second/ExpressionBytesPerSecond,
		time.Duration(float64(u.evaluation)/ExpressionTimeShare))
	if pause <= interval {
		return 0
	}
	return pause + spread(pause)
}

// paceSpread draws the random part of a paced state's pause, in
// [0, pause/2]: states that start together and read answers of the same
// size would otherwise stay in step, a burst of probes every pause.
func paceSpread(pause time.Duration) time.Duration {
	if pause <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(pause/2) + 1))
}

// Start runs the workers until ctx ends. It implements manager.Runnable.
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	s.ctx = ctx
	for key, w := range s.workers {
		s.startLocked(key, w)
	}
	s.mu.Unlock()
	<-ctx.Done()
	s.mu.Lock()
	for _, w := range s.workers {
		if w.cancel != nil {
			w.cancel()
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// Ensure makes the state with this key probed after spec. A changed spec
// starts over: the observation is reset and the first probe comes after a
// new start delay. current is the state's current response, the one its
// status holds (zero for none): a new worker's probes must return another
// response SuccessThreshold times in a row before it is recorded, so a
// restarted manager does not take a blip for a change. An existing
// worker keeps its own count and ignores current.
func (s *Scheduler) Ensure(key string, spec Spec, current Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.workers[key]; ok {
		if reflect.DeepEqual(w.spec, spec) {
			return
		}
		if w.cancel != nil {
			w.cancel()
		}
	}
	w := &worker{spec: spec, current: current}
	s.workers[key] = w
	if s.ctx != nil {
		s.startLocked(key, w)
	}
}

// Remove stops probing the state with this key.
func (s *Scheduler) Remove(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.workers[key]; ok {
		if w.cancel != nil {
			w.cancel()
		}
		delete(s.workers, key)
	}
}

// Observation returns what the probes of the state have shown, and false
// when the state is not registered.
func (s *Scheduler) Observation(key string) (Observation, bool) {
	s.mu.Lock()
	w, ok := s.workers[key]
	s.mu.Unlock()
	if !ok {
		return Observation{}, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.obs, true
}

// Len returns the number of registered states.
func (s *Scheduler) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.workers)
}

func (s *Scheduler) startLocked(key string, w *worker) {
	ctx, cancel := context.WithCancel(s.ctx)
	w.cancel = cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.run(ctx, key, w)
	}()
}

// run probes one state until ctx ends: once after its random start delay,
// then on every tick of its interval. The ticker starts with the first
// probe, so the state keeps its offset from the others.
func (s *Scheduler) run(ctx context.Context, key string, w *worker) {
	delay := s.clock.NewTimer(s.jitter(w.spec.Interval))
	select {
	case <-ctx.Done():
		delay.Stop()
		return
	case <-delay.C():
	}
	ticker := s.clock.NewTicker(w.spec.Interval)
	defer ticker.Stop()
	t := tally{current: w.current}
	for {
		began := s.clock.Now()
		resp, used, err := s.prober.probe(ctx, w.spec.Request, w.spec.Interval)
		if ctx.Err() != nil {
			return
		}
		var reason FailureReason
		if err != nil {
			reason = reasonOf(err)
		}
		s.observe(key, w, s.clock.Since(began), reason)
		t = t.after(w.spec, resp, err)
		w.mu.Lock()
		changed := w.obs != t.obs
		w.obs = t.obs
		w.mu.Unlock()
		if changed {
			s.notify(key)
		}
		pause := pacedPause(used, w.spec.Interval, s.spread)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C():
			}
			if s.clock.Since(began) >= pause {
				break
			}
		}
	}
}

// tally is what a worker carries from one probe of its state to the next:
// the Observation and the counts behind it.
type tally struct {
	obs Observation
	// current is the state's current response: the last one recorded, or
	// the one the worker started with; zero for none.
	current Response
	// candidate is a response other than current that the last streak
	// probes returned, not recorded yet.
	candidate Response
	streak    int
	// failures is the number of consecutive failed probes.
	failures int
}

// after returns the tally once a probe returned resp or failed with err.
// A failure is recorded at once and forgets the current response after
// FailureThreshold in a row. A response equal to the current one is
// recorded at once; another one only when SuccessThreshold consecutive
// probes returned it, a failure or yet another response starting the count
// over (docs/behaviour.md, "successThreshold").
func (t tally) after(spec Spec, resp Response, err error) tally {
	if err != nil {
		t.failures++
		t.candidate, t.streak = Response{}, 0
		reached := t.failures >= spec.FailureThreshold
		if reached {
			t.current = Response{}
		}
		t.obs = Observation{Probed: true, Err: err.Error(), Reason: reasonOf(err), ThresholdReached: reached}
		return t
	}
	t.failures = 0
	if resp != t.current {
		if t.streak > 0 && resp == t.candidate {
			t.streak++
		} else {
			t.candidate, t.streak = resp, 1
		}
		if t.streak < max(spec.SuccessThreshold, 1) {
			return t
		}
	}
	t.current, t.candidate, t.streak = resp, Response{}, 0
	t.obs = Observation{Probed: true, Response: resp}
	return t
}

// observe calls Observe while w is still the registered worker of key,
// under the lock Remove takes.
func (s *Scheduler) observe(key string, w *worker, took time.Duration, reason FailureReason) {
	if s.Observe == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.workers[key] == w {
		s.Observe(key, took, reason)
	}
}

// reasonOf returns the reason of a probe's error. The Prober only returns
// *Error; the fallback keeps a failure from reading as a success.
func reasonOf(err error) FailureReason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ReasonRead
}

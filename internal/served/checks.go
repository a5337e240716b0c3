// Package served checks that a switch's target is served in its new shape:
// after each target write it requests the switch's spec.served URL until
// the answer shows the mode written or the timeout passes. Checks of one
// URL share their requests; a namespace has at most maxServedInFlight (8) requests
// in flight, and its matchers are evaluated in its own evaluation turns,
// never under a lock the switch workers take (docs/behaviour.md,
// "Served").
package served

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/fairshare"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/match"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// By responsibility: this file holds the checks and their requests' keys;
// loop.go the request loop of each group, its
// pacing, nudges, the namespace's requests in flight and the settle window
// of its served results; decide.go
// the decision on each answer; view.go the Served condition a
// status shows; parents.go an HTTPRoute's parents.

// The defaults and bounds of spec.served (docs/behaviour.md, "Served").
const (
	DefaultServedPeriod  = time.Second
	DefaultServedTimeout = 2 * time.Minute
	// maxServedRequestTimeout bounds one request of a check.
	maxServedRequestTimeout = 10 * time.Second
)

// Checks requests switches' spec.served.url after their targets are
// written, until each answers with the shape of the mode written (Served)
// or the check's timeout passes (NotServed). Checks of one namespace with
// the same URL and headers share each request, whatever their number; once
// a check is decided nothing is requested for it until the target is
// written again, or spec.served changes. Each namespace's checks hold at
// most maxServedInFlight requests at once, and evaluate their matchers in
// the namespace's evaluation turns (docs/behaviour.md, "Served").
type Checks struct {
	prober *probe.Prober
	// turns are the evaluation turns shared with probes and expected
	// expressions; nil evaluates at once.
	turns *fairshare.Turns
	// Busy reports whether a namespace's flip still has targets to write
	// (flip.Gate.TargetsPending); nil when nothing waits. Whoever sets it
	// calls TargetsWritten when a namespace's last pending target is
	// written: the checks of that namespace that wait for it look again
	// then.
	Busy func(namespace string) bool
	// ctx ends every check when the manager stops.
	ctx    context.Context
	cancel context.CancelFunc

	mu sync.Mutex
	// groups are the running request loops, by request key.
	groups map[string]*servedGroup
	// pending has each switch's check in progress.
	pending map[target.SwitchID]*servedCheck
	// results has each switch's last decided check.
	results map[target.SwitchID]Result
	// resumed has the switches checked once since the manager started
	// although no target write asked for it (servedCondition).
	resumed map[target.SwitchID]bool
	// slots has each namespace's request slots (slotsOf): at most
	// maxServedInFlight of its requests in flight.
	slots map[string]chan struct{}
	// written has, by namespace, what is closed (and dropped) when the
	// namespace's flip has written its last target (TargetsWritten): the
	// checks waiting for their namespace's flip wait on it. A namespace
	// has an entry from the first look at its flip until its next flip's
	// last write.
	written map[string]chan struct{}
	// settled has, by namespace, its last settle window (settleDelay): a
	// served result decided before its end is delivered then.
	settled map[string]settleWindow
	// settling has each switch whose served result waits out its
	// namespace's settle window, and when it is delivered: its status
	// waits as long (Holding).
	settling map[target.SwitchID]time.Time
}

// servedCheck is one switch's check of the mode it wrote.
type servedCheck struct {
	id      target.SwitchID
	group   string
	active  bool
	want    match.Expected
	written time.Time
	// started is when the check began, on the manager's own clock: an
	// answer to a request sent before it is not about the write it checks.
	started  time.Time
	deadline time.Time
	period   time.Duration
	// spec is the key of the spec.served it checks (servedSpecKey).
	spec string
	// free is when its group was first free to request for it: the
	// namespace's flip had no target left to write (zero until then).
	free time.Time
	// last is the last answer, for the NotServed message.
	last string
	// done is called once the check is decided: the switch's status
	// shows it, and events and metrics are recorded.
	done func(Result)
}

// Result is a decided check.
type Result struct {
	// spec is the key of the spec.served it checked (servedSpecKey).
	spec   string
	Active bool
	Served bool
	at     time.Time
	After  time.Duration
	Last   string
}

// servedGroup is one request loop: the checks that share its requests.
type servedGroup struct {
	req    probe.Request
	checks map[target.SwitchID]*servedCheck
	// period is the shortest of its checks' periods, and began when its
	// last request began (zero before the first): both under the mutex.
	period time.Duration
	began  time.Time
	// nudge asks for a request now (nudgeDue): a check of the same
	// namespace saw its new shape served.
	nudge chan struct{}
}

// NewChecks returns the served checks, sending through prober and
// evaluating expressions in turns (nil: at once); a Runnable.
func NewChecks(prober *probe.Prober, turns *fairshare.Turns) *Checks {
	ctx, cancel := context.WithCancel(context.Background())
	return &Checks{prober: prober, turns: turns, ctx: ctx, cancel: cancel, groups: map[string]*servedGroup{},
		pending: map[target.SwitchID]*servedCheck{}, results: map[target.SwitchID]Result{}, resumed: map[target.SwitchID]bool{},
		slots: map[string]chan struct{}{}, written: map[string]chan struct{}{}, settled: map[string]settleWindow{}, settling: map[target.SwitchID]time.Time{}}
}

// TargetsWritten tells the checks that namespace's flip has written its
// last target: those of the namespace that wait for it look again.
func (s *Checks) TargetsWritten(namespace string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.written[namespace]; ok {
		close(ch)
		delete(s.written, namespace)
	}
}

// targetsWritten is what TargetsWritten of namespace closes next.
func (s *Checks) targetsWritten(namespace string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.written[namespace]
	if !ok {
		ch = make(chan struct{})
		s.written[namespace] = ch
	}
	return ch
}

// Start stops every check when ctx is done. It implements
// manager.Runnable.
func (s *Checks) Start(ctx context.Context) error {
	<-ctx.Done()
	s.cancel()
	return nil
}

// NeedLeaderElection is false: checks are made by the manager that writes
// the targets, and a standby writes none.
func (s *Checks) NeedLeaderElection() bool { return false }

// servedRequest is the request of a check of a switch in namespace (its
// Secret headers read there, its answer's memory from the namespace's
// share) and the key that requests alike share: the namespace's own, so
// that a group's requests are all one namespace's.
func servedRequest(namespace string, spec *v1beta1.ServedCheck) (probe.Request, string) {
	period := servedPeriod(spec)
	timeout := min(max(period, time.Second), maxServedRequestTimeout)
	req := probe.Request{Method: "GET", URL: spec.URL, Timeout: timeout, Tenant: namespace, Headers: probe.HeadersOf(namespace, spec.Headers)}
	parts := []string{namespace, spec.URL, timeout.String()}
	for _, h := range spec.Headers {
		part := h.Name + ": " + h.Value
		if h.ValueFrom != nil {
			ref := h.ValueFrom.SecretKeyRef
			part = h.Name + ": secret " + namespace + "/" + ref.Name + "/" + ref.Key
		}
		parts = append(parts, part)
	}
	sort.Strings(parts[3:])
	return req, strings.Join(parts, "\n")
}

// servedSpecKey names a spec.served (URL, headers, matchers, period,
// timeout): a check or a result of another key is not about the current
// spec.served.
func servedSpecKey(spec *v1beta1.ServedCheck) string {
	raw, _ := json.Marshal(spec)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
}

func servedPeriod(spec *v1beta1.ServedCheck) time.Duration {
	if spec.Period != nil && spec.Period.Duration > 0 {
		return spec.Period.Duration
	}
	return DefaultServedPeriod
}

// Timeout is how long after a write spec's shape must be served.
func Timeout(spec *v1beta1.ServedCheck) time.Duration {
	if spec.Timeout != nil && spec.Timeout.Duration > 0 {
		return spec.Timeout.Duration
	}
	return DefaultServedTimeout
}

// servedMatcher is what the URL answers once the mode's shape is served.
func servedMatcher(spec *v1beta1.ServedCheck, active bool) match.Expected {
	e := spec.Passive
	if active {
		e = spec.Active
	}
	return match.Expected{StatusCode: e.StatusCode, Body: e.Body, BodyMatch: match.BodyMatch(e.BodyMatch), Expression: e.Expression}
}

// Check checks that the target of id, written at written in the mode
// active, is served; any check of id in progress is replaced. done is
// called once it is decided.
func (s *Checks) Check(id target.SwitchID, spec *v1beta1.ServedCheck, active bool, written time.Time, done func(Result)) {
	req, key := servedRequest(id.Key.Namespace, spec)
	c := &servedCheck{id: id, group: key, active: active, want: servedMatcher(spec, active), written: written, started: time.Now(),
		deadline: written.Add(Timeout(spec)), period: servedPeriod(spec), spec: servedSpecKey(spec), done: done}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked(id)
	delete(s.results, id)
	s.pending[id] = c
	g, running := s.groups[key]
	if !running {
		g = &servedGroup{req: req, checks: map[target.SwitchID]*servedCheck{}, nudge: make(chan struct{}, 1)}
		s.groups[key] = g
	}
	g.checks[id] = c
	if !running {
		go s.run(key, g)
		return
	}
	// A running group may be waiting out the period of its last request:
	// a new write's check requests at once, as a new group's does.
	select {
	case g.nudge <- struct{}{}:
	default:
	}
}

// stopLocked drops the check of id in progress, if any.
func (s *Checks) stopLocked(id target.SwitchID) {
	delete(s.settling, id)
	if c, ok := s.pending[id]; ok {
		delete(s.groups[c.group].checks, id)
		delete(s.pending, id)
	}
}

// Snapshot is what is known of the check of id: the check in progress
// (a copy) and the last decided one, and whether it was resumed.
func (s *Checks) Snapshot(id target.SwitchID) Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	var snap Snapshot
	if c, ok := s.pending[id]; ok {
		snap.checking, snap.active, snap.spec = true, c.active, c.spec
	}
	snap.result, snap.decided = s.results[id]
	snap.resumed = s.resumed[id]
	return snap
}

// MarkResumed records that id was checked once although no target write
// asked for it.
func (s *Checks) MarkResumed(id target.SwitchID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resumed[id] = true
}

// Forget drops what is kept for a switch that is gone or no longer has
// spec.served.
func (s *Checks) Forget(id target.SwitchID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked(id)
	delete(s.results, id)
	delete(s.resumed, id)
	delete(s.settling, id)
}

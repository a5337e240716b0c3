package controller

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/match"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// The defaults and bounds of spec.served (docs/behaviour.md, "Served").
const (
	DefaultServedPeriod  = time.Second
	DefaultServedTimeout = 2 * time.Minute
	// maxServedRequestTimeout bounds one request of a check.
	maxServedRequestTimeout = 10 * time.Second
)

// servedChecks requests switches' spec.served.url after their targets are
// written, until each answers with the shape of the mode written (Served)
// or the check's timeout passes (NotServed). Checks of the same URL and
// headers share each request, whatever their number; once a check is
// decided nothing is requested for it until the target is written again.
type servedChecks struct {
	prober *probe.Prober
	// busy reports whether a namespace's flip still has targets to write
	// (statusGate.targetsPending); nil when nothing waits.
	busy func(namespace string) bool
	// ctx ends every check when the manager stops.
	ctx    context.Context
	cancel context.CancelFunc

	mu sync.Mutex
	// groups are the running request loops, by request key.
	groups map[string]*servedGroup
	// pending has each switch's check in progress.
	pending map[switchID]*servedCheck
	// results has each switch's last decided check.
	results map[switchID]servedResult
	// resumed has the switches checked once since the manager started
	// although no target write asked for it (see condition).
	resumed map[switchID]bool
}

// servedCheck is one switch's check of the mode it wrote.
type servedCheck struct {
	id       switchID
	group    string
	active   bool
	want     match.Expected
	written  time.Time
	deadline time.Time
	period   time.Duration
	// free is when its group was first free to request for it: the
	// namespace's flip had no target left to write (zero until then).
	free time.Time
	// last is the last answer, for the NotServed message.
	last string
	// done is called once the check is decided: the switch's status
	// shows it, and events and metrics are recorded.
	done func(servedResult)
}

// servedResult is a decided check.
type servedResult struct {
	active bool
	served bool
	at     time.Time
	after  time.Duration
	last   string
}

// servedGroup is one request loop: the checks that share its requests.
type servedGroup struct {
	req    probe.Request
	checks map[switchID]*servedCheck
	// period is the shortest of its checks' periods, and began when its
	// last request began (zero before the first): both under the mutex.
	period time.Duration
	began  time.Time
	// nudge asks for a request now (nudgeDue): a check of the same
	// namespace saw its new shape served.
	nudge chan struct{}
}

func newServedChecks(prober *probe.Prober) *servedChecks {
	ctx, cancel := context.WithCancel(context.Background())
	return &servedChecks{prober: prober, ctx: ctx, cancel: cancel, groups: map[string]*servedGroup{},
		pending: map[switchID]*servedCheck{}, results: map[switchID]servedResult{}, resumed: map[switchID]bool{}}
}

// Start stops every check when ctx is done. It implements
// manager.Runnable.
func (s *servedChecks) Start(ctx context.Context) error {
	<-ctx.Done()
	s.cancel()
	return nil
}

// NeedLeaderElection is false: checks are made by the manager that writes
// the targets, and a standby writes none.
func (s *servedChecks) NeedLeaderElection() bool { return false }

// servedRequest is the request of a check (its Secret headers read in
// namespace) and the key that requests alike share.
func servedRequest(namespace string, spec *v1beta1.ServedCheck) (probe.Request, string) {
	period := servedPeriod(spec)
	timeout := min(max(period, time.Second), maxServedRequestTimeout)
	req := probe.Request{Method: "GET", URL: spec.URL, Timeout: timeout, Tenant: namespace, Headers: probeHeaders(namespace, spec.Headers)}
	parts := []string{spec.URL, timeout.String()}
	for _, h := range spec.Headers {
		part := h.Name + ": " + h.Value
		if h.ValueFrom != nil {
			ref := h.ValueFrom.SecretKeyRef
			part = h.Name + ": secret " + namespace + "/" + ref.Name + "/" + ref.Key
		}
		parts = append(parts, part)
	}
	sort.Strings(parts[2:])
	return req, strings.Join(parts, "\n")
}

func servedPeriod(spec *v1beta1.ServedCheck) time.Duration {
	if spec.Period != nil && spec.Period.Duration > 0 {
		return spec.Period.Duration
	}
	return DefaultServedPeriod
}

func servedTimeout(spec *v1beta1.ServedCheck) time.Duration {
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

// start checks that the target of id, written at written in the mode
// active, is served; any check of id in progress is replaced. done is
// called once it is decided.
func (s *servedChecks) start(id switchID, spec *v1beta1.ServedCheck, active bool, written time.Time, done func(servedResult)) {
	req, key := servedRequest(id.key.Namespace, spec)
	c := &servedCheck{id: id, group: key, active: active, want: servedMatcher(spec, active), written: written,
		deadline: written.Add(servedTimeout(spec)), period: servedPeriod(spec), done: done}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked(id)
	delete(s.results, id)
	s.pending[id] = c
	g, running := s.groups[key]
	if !running {
		g = &servedGroup{req: req, checks: map[switchID]*servedCheck{}, nudge: make(chan struct{}, 1)}
		s.groups[key] = g
	}
	g.checks[id] = c
	if !running {
		go s.run(key, g)
	}
}

// stopLocked drops the check of id in progress, if any.
func (s *servedChecks) stopLocked(id switchID) {
	if c, ok := s.pending[id]; ok {
		delete(s.groups[c.group].checks, id)
		delete(s.pending, id)
	}
}

// forget drops what is kept for a switch that is gone or no longer has
// spec.served.
func (s *servedChecks) forget(id switchID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked(id)
	delete(s.results, id)
	delete(s.resumed, id)
}

// run requests the group's URL every period (the shortest of its checks')
// until it has no check left, deciding each check on each answer. It sends
// nothing while a flip of a check's namespace still has targets to write:
// no data plane serves a flip before its writes, and during a flip of
// hundreds of switches their checks' requests, through the proxy that is
// reloading, would take the cores and the proxy from the flip's last writes
// (docs/benchmarks.md, "Served flips through Traefik").
//
// A flip's checks start together once its writes are done: each requests
// at once (hosts that the proxy already serves are seen at once). When the
// namespace has other checks running, a group's second request comes its
// share of the period after the first (servedOffset), so that from then
// on the namespace's requests are spread over the period rather than sent
// in bursts; when one of them sees its new shape served, a few others of
// the namespace request at once (nudgeOthers) rather than at their next
// period: a proxy serves a flip's changes together, so a check sees its
// own within a few rounds of requests after the proxy's reload, not up to
// a period later.
func (s *servedChecks) run(key string, g *servedGroup) {
	first := true
	for {
		namespaces, ok := s.turn(key, g)
		if !ok {
			return
		}
		if s.busy != nil && slices.ContainsFunc(namespaces, s.busy) {
			if !s.wait(g, flipWritesPoll, false) {
				return
			}
			continue
		}
		s.freed(g, time.Now())
		began := time.Now()
		s.mu.Lock()
		g.began = began
		next := g.period
		s.mu.Unlock()
		select {
		case <-g.nudge:
			// This request answers a nudge that came while it waited
			// for the flip's writes.
		default:
		}
		if first {
			first = false
			if offset := s.secondOffset(key, g, namespaces); offset > 0 {
				next = offset
			}
		}
		resp, err := s.prober.Probe(s.ctx, g.req)
		if s.ctx.Err() != nil {
			return
		}
		decided := s.decide(g, resp, err, time.Now())
		var served []string
		for _, d := range decided {
			d.check.done(d.result)
			if d.result.served {
				served = append(served, d.check.id.key.Namespace)
			}
		}
		if len(served) > 0 {
			s.nudgeOthers(g, served, began)
		}
		if !s.wait(g, time.Until(began.Add(next)), true) {
			return
		}
	}
}

// turn is the namespaces of the group's checks, with its period brought up
// to date; false once it has no check left (and it is no longer running).
func (s *servedChecks) turn(key string, g *servedGroup) ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(g.checks) == 0 {
		delete(s.groups, key)
		return nil, false
	}
	g.period = 0
	var namespaces []string
	for _, c := range g.checks {
		if g.period == 0 || c.period < g.period {
			g.period = c.period
		}
		if !slices.Contains(namespaces, c.id.key.Namespace) {
			namespaces = append(namespaces, c.id.key.Namespace)
		}
	}
	return namespaces, true
}

// freed marks the group's checks free to request from now on, those not
// marked yet.
func (s *servedChecks) freed(g *servedGroup, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range g.checks {
		if c.free.IsZero() {
			c.free = now
		}
	}
}

// holding is how much longer the status of id, whose target is in the mode
// active, waits for its check (nothing when it does not wait): a check of
// that mode in progress holds the status until it is decided, for at most
// a period after it was free to request, so that the status shows the
// mode and Served in one write when the proxy serves the flip within a
// period (docs/behaviour.md, "Served").
func (s *servedChecks) holding(id switchID, active bool, now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.pending[id]
	switch {
	case !ok || c.active != active:
		return 0
	case c.free.IsZero():
		return c.period
	}
	return max(c.free.Add(c.period).Sub(now), 0)
}

// wait waits d, or less when nudged (and nudged is true); false once the
// manager stops.
func (s *servedChecks) wait(g *servedGroup, d time.Duration, nudged bool) bool {
	nudge := g.nudge
	if !nudged {
		nudge = nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.ctx.Done():
		return false
	case <-t.C:
	case <-nudge:
	}
	return true
}

// secondOffset is how long after its first request g sends its second:
// its share of its period when other checks of its namespaces run (the
// period otherwise).
func (s *servedChecks) secondOffset(key string, g *servedGroup, namespaces []string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	for other, o := range s.groups {
		if other != key && o.checksIn(namespaces) {
			return servedOffset(key, g.period)
		}
	}
	return 0
}

// checksIn reports whether g has a check of a switch in one of namespaces.
func (g *servedGroup) checksIn(namespaces []string) bool {
	for _, c := range g.checks {
		if slices.Contains(namespaces, c.id.key.Namespace) {
			return true
		}
	}
	return false
}

// servedOffset is a group's share of its period, from a quarter of it to
// all of it, the same for the same key: the requests of many groups fall
// evenly over the period.
func servedOffset(key string, period time.Duration) time.Duration {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return period/4 + time.Duration(uint64(h.Sum32())*uint64(period*3/4)>>32)
}

// nudgeOthers asks at most maxNudged of the groups with checks in
// namespaces, but from, to request now (those that have waited longest),
// when nudgeDue: a request of from that began at began saw the new shape of
// a check of theirs. Each that sees its own shape nudges as many again, so
// a namespace's checks follow a reload within a few rounds of requests
// while at most a few dozen are in flight: hundreds at once would take the
// proxy and the cores from the users it serves.
func (s *servedChecks) nudgeOthers(from *servedGroup, namespaces []string, began time.Time) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var due []*servedGroup
	for _, g := range s.groups {
		if g != from && nudgeDue(g.began, began, g.period, now) && g.checksIn(namespaces) {
			due = append(due, g)
		}
	}
	slices.SortFunc(due, func(a, b *servedGroup) int { return a.began.Compare(b.began) })
	for _, g := range due[:min(len(due), maxNudged)] {
		// Counted as begun, so that the next nudges pick others.
		g.began = now
		select {
		case g.nudge <- struct{}{}:
		default:
		}
	}
}

// maxNudged is how many groups one answer nudges (nudgeOthers).
const maxNudged = 8

// nudgeDue says whether a group whose last request began at last (zero
// for none), with the period given, requests now that a request that began
// at seen saw a new shape: when its last request began before seen (it may
// not have seen what seen did) and at least half a period ago, so that
// nudges at most double a check's requests.
func nudgeDue(last, seen time.Time, period time.Duration, now time.Time) bool {
	if last.IsZero() {
		return true
	}
	return last.Before(seen) && now.Sub(last) >= period/2
}

// flipWritesPoll is how often a check that waits for its namespace's flip
// writes looks again.
const flipWritesPoll = 50 * time.Millisecond

// decidedCheck is a check and its result.
type decidedCheck struct {
	check  *servedCheck
	result servedResult
}

// decide decides the group's checks on one answer (resp, or err) seen at
// now: a check whose mode's shape it is is served; one past its deadline
// is not.
func (s *servedChecks) decide(g *servedGroup, resp probe.Response, err error, now time.Time) []decidedCheck {
	answer := ""
	if err != nil {
		answer = err.Error()
	} else {
		answer = "HTTP " + resp.StatusCode
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []decidedCheck
	for id, c := range g.checks {
		c.last = answer
		var result servedResult
		switch {
		case err == nil && match.Evaluate(c.want, match.Response{StatusCode: resp.StatusCode, Body: resp.Body}).Outcome == match.Matched:
			result = servedResult{active: c.active, served: true, at: now, after: now.Sub(c.written)}
		case now.After(c.deadline):
			result = servedResult{active: c.active, at: now, after: now.Sub(c.written), last: answer}
		default:
			continue
		}
		delete(g.checks, id)
		delete(s.pending, id)
		s.results[id] = result
		out = append(out, decidedCheck{check: c, result: result})
	}
	return out
}

// parentsAcceptance says, for a DynamicHTTPRoute, which parents of its
// HTTPRoute have not accepted the route's current generation ("" when all
// did); nil for a kind without parents.
type parentsAcceptance func() string

// routeParentsAcceptance is parentsAcceptance for the live route (nil
// when there is none).
func routeParentsAcceptance(route *gatewayv1.HTTPRoute) parentsAcceptance {
	return func() string {
		if route == nil {
			return "the HTTPRoute does not exist"
		}
		if len(route.Status.Parents) == 0 {
			return fmt.Sprintf("no parent has accepted generation %d of the HTTPRoute yet", route.Generation)
		}
		var waiting []string
		for _, p := range route.Status.Parents {
			c := meta.FindStatusCondition(p.Conditions, string(gatewayv1.RouteConditionAccepted))
			if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration < route.Generation {
				waiting = append(waiting, string(p.ParentRef.Name))
			}
		}
		if len(waiting) == 0 {
			return ""
		}
		return fmt.Sprintf("waiting for parent %s to accept generation %d of the HTTPRoute", strings.Join(waiting, ", "), route.Generation)
	}
}

// servedView is what the status shows of a switch's spec.served: the
// Served condition and status.served; nil condition removes both.
type servedView struct {
	cond   *metav1.Condition
	status *v1beta1.ServedStatus
}

// view is the Served condition of sw (id) whose target is in the mode
// active: Checking while a check is in progress, Served or NotServed once
// decided. A switch whose Served is not True for its mode and that no
// check covers (a manager restarted, or spec.served just added) is checked
// once, from now, by calling resume.
func (s *servedChecks) view(sw target.Switch, id switchID, active bool, parents parentsAcceptance, resume func()) servedView {
	spec := sw.SwitchSpec().Served
	status := sw.SwitchStatus()
	if spec == nil {
		s.forget(id)
		return servedView{}
	}
	mode := v1beta1.ModePassive
	if active {
		mode = v1beta1.ModeActive
	}
	cond := metav1.Condition{Type: v1beta1.ConditionServed, ObservedGeneration: sw.GetGeneration()}
	s.mu.Lock()
	c, checking := s.pending[id]
	result, decided := s.results[id]
	resumed := s.resumed[id]
	s.mu.Unlock()
	switch {
	case checking && c.active == active:
		cond.Status, cond.Reason = metav1.ConditionUnknown, v1beta1.ReasonChecking
		cond.Message = fmt.Sprintf("the target was written in %s mode; requesting %s every %s until it answers as that shape does (timeout %s)",
			decision.ModeName(active), probe.RedactURL(spec.URL), servedPeriod(spec), servedTimeout(spec))
		return servedView{cond: &cond, status: status.Served}
	case decided && result.active == active && result.served && parents != nil && parents() != "":
		// The URL answers with the shape; the route's parents have not
		// all accepted its generation yet.
		if written := result.at.Add(-result.after); time.Now().After(written.Add(servedTimeout(spec))) {
			cond.Status, cond.Reason = metav1.ConditionFalse, v1beta1.ReasonNotServed
			cond.Message = fmt.Sprintf("%s mode not served within %s after the target was written: %s",
				decision.ModeName(active), servedTimeout(spec), parents())
			return servedView{cond: &cond, status: status.Served}
		}
		cond.Status, cond.Reason = metav1.ConditionUnknown, v1beta1.ReasonChecking
		cond.Message = fmt.Sprintf("%s answers as the %s shape does (%s after the target was written); %s",
			probe.RedactURL(spec.URL), decision.ModeName(active), formatAfter(result.after), parents())
		return servedView{cond: &cond, status: status.Served}
	case decided && result.active == active && result.served:
		cond.Status, cond.Reason = metav1.ConditionTrue, v1beta1.ReasonServed
		cond.Message = fmt.Sprintf("%s mode served %s after the target was written", decision.ModeName(active), formatAfter(result.after))
		served := &v1beta1.ServedStatus{Mode: mode, Since: metav1.NewTime(result.at.Truncate(time.Second)), After: formatAfter(result.after)}
		if prev := status.Served; prev != nil && prev.Mode == mode && prev.After == served.After {
			served = prev
		}
		return servedView{cond: &cond, status: served}
	case decided && result.active == active:
		cond.Status, cond.Reason = metav1.ConditionFalse, v1beta1.ReasonNotServed
		cond.Message = fmt.Sprintf("%s mode not served within %s after the target was written: %s answered %s",
			decision.ModeName(active), servedTimeout(spec), probe.RedactURL(spec.URL), result.last)
		return servedView{cond: &cond, status: status.Served}
	}
	prev := meta.FindStatusCondition(status.Conditions, v1beta1.ConditionServed)
	if prev != nil && prev.Status == metav1.ConditionTrue && status.Served != nil && status.Served.Mode == mode {
		return servedView{cond: prev, status: status.Served}
	}
	if !resumed {
		s.mu.Lock()
		s.resumed[id] = true
		s.mu.Unlock()
		resume()
		return s.view(sw, id, active, parents, func() {})
	}
	if prev != nil {
		return servedView{cond: prev, status: status.Served}
	}
	return servedView{}
}

// formatAfter is a duration as status.served.after shows it: "2.31s".
func formatAfter(d time.Duration) string {
	return fmt.Sprintf("%.2fs", d.Seconds())
}

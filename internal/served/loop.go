package served

import (
	"hash/fnv"
	"runtime/trace"
	"slices"
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/regions"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// The request loop of a group of served checks: when it requests, how its
// requests are spread over the period and follow a reload (nudges), the
// namespace's requests in flight, and when a served result reaches its
// switch (the settle window).

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
func (s *Checks) run(key string, g *servedGroup) {
	first := true
	for {
		namespaces, ok := s.turn(key, g)
		if !ok {
			return
		}
		if written, busy := s.flipWriting(namespaces); busy {
			if !s.sleep(flipWritesPoll, written) {
				return
			}
			continue
		}
		s.freed(g, time.Now())
		if !s.acquireSlot(g.req.Tenant) {
			return
		}
		if s.empty(g) {
			// Its checks ended (decided elsewhere, replaced, or
			// spec.served removed) while it waited for a slot: nothing
			// to request.
			s.releaseSlot(g.req.Tenant)
			continue
		}
		select {
		case <-g.nudge:
			// This request answers a nudge that came while it waited
			// (for the flip's writes, or a slot); one that comes after
			// the request began asks for another at once.
		default:
		}
		began := time.Now()
		s.mu.Lock()
		g.began = began
		next := g.period
		s.mu.Unlock()
		if first {
			first = false
			if offset := s.secondOffset(key, g, namespaces); offset > 0 {
				next = offset
			}
		}
		var resp probe.Response
		var err error
		trace.WithRegion(s.ctx, regions.ServedRequest, func() { resp, err = s.prober.Probe(s.ctx, g.req) })
		s.releaseSlot(g.req.Tenant)
		if s.ctx.Err() != nil {
			return
		}
		decided := s.decide(g, began, resp, err, time.Now())
		var served []string
		for _, d := range decided {
			s.deliver(d, time.Now())
			if d.result.Served {
				served = append(served, d.check.id.Key.Namespace)
			}
		}
		if len(served) > 0 {
			s.nudgeOthers(g, served, began)
		}
		if !s.sleep(time.Until(began.Add(next)), g.nudge) {
			return
		}
	}
}

// turn is the namespaces of the group's checks, with its period brought up
// to date; false once it has no check left (and it is no longer running).
func (s *Checks) turn(key string, g *servedGroup) ([]string, bool) {
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
		if !slices.Contains(namespaces, c.id.Key.Namespace) {
			namespaces = append(namespaces, c.id.Key.Namespace)
		}
	}
	return namespaces, true
}

// freed marks the group's checks free to request from now on, those not
// marked yet.
func (s *Checks) freed(g *servedGroup, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range g.checks {
		if c.free.IsZero() {
			c.free = now
		}
	}
}

// statusHoldAtLeast is the least a check holds its switch's status: a
// proxy takes a while to serve a flip after its writes (Traefik applies a
// new configuration at most every 2 s, after a build of all its Ingresses
// that takes up to a second or more at 1000 of them), and a status
// written before then shows Checking and is written again moments later,
// those writes landing on the API server just as the proxy reloads
// (docs/benchmarks.md, "A status hold of at least 3 s").
const statusHoldAtLeast = 3 * time.Second

// statusHold is how long after its check was free to request a status
// waits for the check: a period, and at least statusHoldAtLeast.
func statusHold(period time.Duration) time.Duration {
	return max(period, statusHoldAtLeast)
}

// Holding is how much longer the status of id, whose target is in the mode
// active, waits for its check (nothing when it does not wait): a check of
// that mode in progress holds the status until it is decided, for at most
// statusHold after it was free to request, so that the status shows the
// mode and Served in one write when the proxy serves the flip by then
// (docs/behaviour.md, "Served"); a served result of that mode holds it
// until its namespace's settle window ends (deliver).
func (s *Checks) Holding(id target.SwitchID, active bool, now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if until, ok := s.settling[id]; ok && s.results[id].Active == active {
		return max(until.Sub(now), 0)
	}
	c, ok := s.pending[id]
	switch {
	case !ok || c.active != active:
		return 0
	case c.free.IsZero():
		return statusHold(c.period)
	}
	return max(c.free.Add(statusHold(c.period)).Sub(now), 0)
}

// reloadSettle is how long a namespace's served results wait after the
// first of a flip is decided: the first check to see its new shape saw the
// proxy's reload, and its hundreds of status writes (and the events after
// them) would land on the API server and the nodes just as the proxy
// starts serving the new configuration to its users. In a flip of 500
// through Traefik on 2 shared cores those writes in the reload's first
// moments delayed the last host an outside client got by 0.1-0.2 s
// (docs/benchmarks.md, "The reload's first moments").
const reloadSettle = 300 * time.Millisecond

// settleQuiet is how long a namespace has had no served result when the
// next opens a new settle window: a reload's results come in a burst
// (nudges bring most within a few hundred milliseconds of the first, and
// the rest trickle in), and one that comes after such a pause is of
// another reload. A flip is often served in two: Traefik applies the
// first few of its writes at once, and the rest in its next reload, 2 s
// later, whose burst must open its own window.
const settleQuiet = 500 * time.Millisecond

// settleWindow is a namespace's last settle window: when it ends, and
// when the namespace's last served result was decided.
type settleWindow struct {
	end, last time.Time
}

// settleDelay is how long a result decided served at now waits, given the
// namespace's settle window w, and the window from then on: until the
// window's end within it; nothing after it while the namespace's served
// results keep coming (each within settleQuiet of the last); after such a
// pause, or for the first, reloadSettle, in a window it opens.
func settleDelay(w settleWindow, now time.Time) (time.Duration, settleWindow) {
	switch {
	case now.Before(w.end):
		return w.end.Sub(now), settleWindow{end: w.end, last: now}
	case !w.last.IsZero() && now.Sub(w.last) < settleQuiet:
		return 0, settleWindow{end: w.end, last: now}
	}
	return reloadSettle, settleWindow{end: now.Add(reloadSettle), last: now}
}

// deliver calls the done of a decided check (its switch's status written,
// its metric and events recorded): at once when it is not served, at the
// end of its namespace's settle window when it is (settleDelay); until
// then the switch's status waits too (Holding), whatever else reconciles
// it.
func (s *Checks) deliver(d decidedCheck, now time.Time) {
	if !d.result.Served {
		d.check.done(d.result)
		return
	}
	id := d.check.id
	s.mu.Lock()
	delay, w := settleDelay(s.settled[id.Key.Namespace], now)
	s.settled[id.Key.Namespace] = w
	if delay > 0 {
		s.settling[id] = w.end
	}
	s.mu.Unlock()
	if delay <= 0 {
		d.check.done(d.result)
		return
	}
	time.AfterFunc(delay, func() {
		s.mu.Lock()
		if s.settling[id].Equal(w.end) {
			delete(s.settling, id)
		}
		s.mu.Unlock()
		d.check.done(d.result)
	})
}

// sleep waits d, or less when wake is closed or sends (a nudge, or a
// flip's last write); false once the manager stops.
func (s *Checks) sleep(d time.Duration, wake <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.ctx.Done():
		return false
	case <-t.C:
	case <-wake:
	}
	return true
}

// secondOffset is how long after its first request g sends its second:
// its share of its period when other checks of its namespaces run (the
// period otherwise).
func (s *Checks) secondOffset(key string, g *servedGroup, namespaces []string) time.Duration {
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
		if slices.Contains(namespaces, c.id.Key.Namespace) {
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
func (s *Checks) nudgeOthers(from *servedGroup, namespaces []string, began time.Time) {
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
// writes looks again without being told (TargetsWritten): a flip's pending
// targets stop holding its checks after the gate's bound
// (flip.MaxStatusHold), which no write tells. Seldom, because each look
// takes the gate's lock that the flip's reconciles take
// (docs/benchmarks.md, "Served checks told when the writes end").
const flipWritesPoll = time.Second

// flipWriting reports whether a flip of one of namespaces still has
// targets to write, and what TargetsWritten of that namespace closes.
func (s *Checks) flipWriting(namespaces []string) (<-chan struct{}, bool) {
	if s.Busy == nil {
		return nil, false
	}
	for _, ns := range namespaces {
		// Taken before Busy is asked: a flip whose writes end in between
		// has closed it.
		written := s.targetsWritten(ns)
		if s.Busy(ns) {
			return written, true
		}
	}
	return nil, false
}

// maxServedInFlight is how many requests the served checks of one
// namespace hold in flight together: 300 switches of one namespace with
// distinct URLs that never answer hold 8 connections, not 300, and leave
// the manager's requests to the other namespaces.
const maxServedInFlight = 8

// acquireSlot waits for one of namespace's request slots, in the order
// the namespace's groups asked; false once the manager stops. A group
// that waits takes no other resource, holds no lock and sends no request.
func (s *Checks) acquireSlot(namespace string) bool {
	select {
	case s.slotsOf(namespace) <- struct{}{}:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// releaseSlot gives back one of namespace's request slots.
func (s *Checks) releaseSlot(namespace string) {
	<-s.slotsOf(namespace)
}

// slotsOf is namespace's request slots: a channel that holds one value
// per request in flight.
func (s *Checks) slotsOf(namespace string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	slots, ok := s.slots[namespace]
	if !ok {
		slots = make(chan struct{}, maxServedInFlight)
		s.slots[namespace] = slots
	}
	return slots
}

// empty reports whether g has no check left.
func (s *Checks) empty(g *servedGroup) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(g.checks) == 0
}

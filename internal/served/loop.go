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
// requests are spread over the period and follow a reload (nudges), and
// the namespace's requests in flight.

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
			d.check.done(d.result)
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
// (docs/behaviour.md, "Served").
func (s *Checks) Holding(id target.SwitchID, active bool, now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.pending[id]
	switch {
	case !ok || c.active != active:
		return 0
	case c.free.IsZero():
		return statusHold(c.period)
	}
	return max(c.free.Add(statusHold(c.period)).Sub(now), 0)
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

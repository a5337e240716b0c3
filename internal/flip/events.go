package flip

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/metrics"
)

// The event queue of each namespace: events wait in the gate until its
// namespace's statuses are written (see Gate), and the pacer takes them.

// The summary of a namespace's dropped events (eventOverflow).
const (
	reasonEventsDropped = "EventsDropped"
	actionRecordEvents  = "RecordEvents"
)

// maxEventsWaiting bounds the events of one namespace that wait in the
// gate. A flip's events wait until its statuses are written, one Switched
// event per switch: the bound keeps every event of a flip of 2000 switches
// in one namespace and of its flip back, the largest flip
// docs/benchmarks.md measures (a bound of 1000, the size of the recorder's
// own queue, would drop half of one such flip's events). A waiting event
// takes about half a KiB (its slot, reference and note): under 3 MiB for
// a full namespace. The events that a namespace records faster than its
// turns send them are late, then dropped, and never delay another
// namespace's: the last of a full queue waits 20 s at 250 a second.
const maxEventsWaiting = 5000

// eventOverflow is a namespace's events dropped since its queue overflowed,
// summarised in one Warning: queued once the queue has room again, it
// counts the events dropped until it is taken.
type eventOverflow struct {
	dropped int
	// recorder and regarding record the summary, about the switch whose
	// event was dropped first.
	recorder  events.EventRecorder
	regarding *corev1.ObjectReference
	// queued is set once the summary waits in the queue.
	queued bool
}

// deferredEvent is an event waiting to be recorded, and when it was
// recorded; summary is set for the summary of an overflow.
type deferredEvent struct {
	at        time.Time
	recorder  events.EventRecorder
	regarding *corev1.ObjectReference
	event     Event
	summary   *eventOverflow
}

// Record keeps event, regarding a switch, until nextEvent takes it and
// has recorder Record it. When maxEventsWaiting events of the switch's
// namespace wait already, the event is dropped instead: counted, and told
// by the namespace's summary.
func (g *Gate) Record(recorder events.EventRecorder, regarding *corev1.ObjectReference, event Event) {
	namespace := regarding.Namespace
	g.mu.Lock()
	ns := g.namespaceLocked(namespace)
	if len(ns.events) >= maxEventsWaiting {
		if ns.overflow == nil {
			ns.overflow = &eventOverflow{recorder: recorder, regarding: regarding}
		}
		ns.overflow.dropped++
		g.mu.Unlock()
		metrics.CountEventsDropped(namespace, 1)
		return
	}
	first := len(ns.events) == 0
	if first {
		g.turns = append(g.turns, namespace)
	}
	ns.events = append(ns.events, deferredEvent{at: g.clock.Now(), recorder: recorder, regarding: regarding, event: event})
	g.unlockAndRun(namespace, nil)
	if first {
		// The namespace's series is there, at zero, before its first
		// drop: increase() sees that drop.
		metrics.CountEventsDropped(namespace, 0)
	}
}

// nextEvent takes the first event that waits in the first namespace, in
// turn, whose event is due: no status of its namespace is held or
// unwritten and no target of it pending, or it has waited maxHold. The
// namespace then takes its next turn after every other's. It returns nil
// when no event is due.
func (g *Gate) nextEvent() func() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, namespace := range g.turns {
		ns := g.namespaces[namespace]
		if !g.eventDueLocked(ns) {
			continue
		}
		next := ns.events[0]
		ns.events[0] = deferredEvent{}
		ns.events = ns.events[1:]
		if o := ns.overflow; o != nil && !o.queued {
			// The queue has room again: the summary waits in it.
			o.queued = true
			ns.events = append(ns.events, deferredEvent{at: g.clock.Now(), summary: o})
		}
		g.turns = slices.Delete(g.turns, i, i+1)
		if len(ns.events) > 0 {
			g.turns = append(g.turns, namespace)
		} else {
			ns.events = nil // the burst's array
		}
		send := g.takeLocked(namespace, ns, next)
		g.tidyLocked(namespace)
		return send
	}
	return nil
}

// takeEvents takes every event that waits, due or not (at shutdown), a
// namespace at a time in turn, with the summaries of the events dropped.
func (g *Gate) takeEvents() []func() {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []func()
	for _, namespace := range g.turns {
		ns := g.namespaces[namespace]
		if o := ns.overflow; o != nil && !o.queued {
			o.queued = true
			ns.events = append(ns.events, deferredEvent{summary: o})
		}
	}
	for len(g.turns) > 0 {
		turns := g.turns
		g.turns = nil
		for _, namespace := range turns {
			ns := g.namespaces[namespace]
			next := ns.events[0]
			ns.events = ns.events[1:]
			out = append(out, g.takeLocked(namespace, ns, next))
			if len(ns.events) > 0 {
				g.turns = append(g.turns, namespace)
			} else {
				ns.events = nil
			}
			g.tidyLocked(namespace)
		}
	}
	return out
}

// takeLocked returns the call that records e, an event of namespace just
// taken from ns. A summary counts the events dropped until now, and ends
// the overflow: the next event dropped starts another.
func (g *Gate) takeLocked(namespace string, ns *namespaceGate, e deferredEvent) func() {
	if o := e.summary; o != nil {
		ns.overflow = nil
		noun := "events"
		if o.dropped == 1 {
			noun = "event"
		}
		note := fmt.Sprintf("Dropped %d %s of namespace %q: more than %d waited to be recorded", o.dropped, noun, namespace, maxEventsWaiting)
		return func() {
			o.recorder.Eventf(o.regarding, nil, corev1.EventTypeWarning, reasonEventsDropped, actionRecordEvents, "%s", note)
		}
	}
	return func() {
		e.recorder.Eventf(e.regarding, nil, e.event.Type, e.event.Reason, e.event.Action, "%s", e.event.Note)
	}
}

// eventDueLocked reports whether the first event that waits in ns (nil
// for a namespace where nothing waits) is due.
func (g *Gate) eventDueLocked(ns *namespaceGate) bool {
	if ns == nil || len(ns.events) == 0 {
		return false
	}
	busy := len(ns.pending) > 0 || len(ns.held) > 0 || len(ns.unwritten) > 0
	return !busy || g.clock.Since(ns.events[0].at) >= g.maxHold
}

// Event is one event to record about a DynamicIngress.
type Event struct {
	Type, Reason, Action, Note string
}

package flip

import (
	"context"
	"runtime/trace"
	"time"

	"golang.org/x/time/rate"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/regions"
)

// The pace of the events that the status gate lets go after a flip: a burst
// of eventBurst, then eventRate a second. An event costs the API server
// about what a status patch does: after a flip of thousands of switches,
// their events sent at once would leave a watcher of the statuses (such as
// `kubectl dynamic wait`) little of the server, and overflow the recorder's
// own queue of 1000, which drops the rest without a word (docs/benchmarks.md).
const (
	eventBurst = 50
	eventRate  = 250
	// eventPoll is how often the pacer looks for events that have waited
	// their longest with no reconcile to say so.
	eventPoll = time.Second
	// eventDrain bounds how long a stopping pacer keeps recording.
	eventDrain = 5 * time.Second
)

// Pacer records the events that wait in the status gate, one at a
// time as they become due and at a pace (eventBurst, eventRate): each
// namespace's in the order they were recorded, the namespaces in turn
// (Gate.nextEvent): a namespace's due event waits for the one being
// sent and at most one of each other namespace, however many they have
// due. A manager Runnable, run by the leader, where the reconcilers that
// record events run.
type Pacer struct {
	limiter *rate.Limiter
	gate    *Gate
	wake    chan struct{}
}

// NewPacer returns the pacer of gate's events, and has the gate wake
// it when events become due.
func NewPacer(gate *Gate) *Pacer {
	p := &Pacer{limiter: rate.NewLimiter(eventRate, eventBurst), gate: gate, wake: make(chan struct{}, 1)}
	gate.due = p.wakeUp
	return p
}

func (p *Pacer) wakeUp() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// NeedLeaderElection says the pacer runs with the reconcilers, on the leader.
func (p *Pacer) NeedLeaderElection() bool { return true }

// Start records the due events until ctx is done; then it records every
// event still waiting, namespaces in turn, for at most eventDrain (the
// recorder is stopped after every Runnable).
func (p *Pacer) Start(ctx context.Context) error {
	poll := time.NewTicker(eventPoll)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			drain, cancel := context.WithTimeout(context.Background(), eventDrain)
			defer cancel()
			for _, event := range p.gate.takeEvents() {
				if p.limiter.Wait(drain) != nil {
					return nil
				}
				trace.WithRegion(drain, regions.Event, event)
			}
			return nil
		case <-poll.C:
		case <-p.wake:
		}
		for event := p.gate.nextEvent(); event != nil; event = p.gate.nextEvent() {
			if err := p.limiter.Wait(ctx); err != nil {
				trace.WithRegion(ctx, regions.Event, event) // taken: recorded now rather than lost
				break
			}
			trace.WithRegion(ctx, regions.Event, event)
		}
	}
}

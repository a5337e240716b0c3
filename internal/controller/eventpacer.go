package controller

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// The pace of the events that the status gate lets go after a flip: a burst
// of eventBurst, then eventRate a second. The recorder queues at most 1000
// events on their way to the API server and drops the rest without a
// word; the events of a flip of thousands of switches, let go at once,
// would overflow it.
const (
	eventBurst = 500
	eventRate  = 1000
	// eventPoll is how often the pacer asks the gate for the events that
	// have waited their longest.
	eventPoll = time.Second
	// eventDrain bounds how long a stopping pacer keeps recording.
	eventDrain = 5 * time.Second
)

// eventPacer records events in order from one goroutine, at a pace the
// recorder keeps up with (eventBurst, eventRate). A manager Runnable, run
// by the leader, where the reconcilers that record events run.
type eventPacer struct {
	limiter *rate.Limiter
	// gate is where events wait for statuses: polled for those that have
	// waited their longest, and emptied at shutdown.
	gate *statusGate

	mu    sync.Mutex
	queue []func()
	wake  chan struct{}
}

func newEventPacer(gate *statusGate) *eventPacer {
	return &eventPacer{limiter: rate.NewLimiter(eventRate, eventBurst), gate: gate, wake: make(chan struct{}, 1)}
}

// send queues events to be recorded, in order, after those queued before.
// It never blocks (the gate calls it with its lock held).
func (p *eventPacer) send(events []func()) {
	p.mu.Lock()
	p.queue = append(p.queue, events...)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// NeedLeaderElection says the pacer runs with the reconcilers, on the leader.
func (p *eventPacer) NeedLeaderElection() bool { return true }

// Start records the queued events until ctx is done; then it records what
// is left, the events still waiting in the gate included, for at most
// eventDrain (the recorder is stopped after every Runnable).
func (p *eventPacer) Start(ctx context.Context) error {
	poll := time.NewTicker(eventPoll)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			p.send(p.gate.takeEvents())
			drain, cancel := context.WithTimeout(context.Background(), eventDrain)
			defer cancel()
			p.record(drain)
			return nil
		case <-poll.C:
			p.gate.flushDue()
		case <-p.wake:
		}
		p.record(ctx)
	}
}

// record records the queued events, in order, at the pacer's pace, until
// none is left or ctx is done.
func (p *eventPacer) record(ctx context.Context) {
	for {
		p.mu.Lock()
		events := p.queue
		p.queue = nil
		p.mu.Unlock()
		if len(events) == 0 {
			return
		}
		for i, event := range events {
			if err := p.limiter.Wait(ctx); err != nil {
				// Put back what is left, for the drain at shutdown.
				p.mu.Lock()
				p.queue = append(events[i:], p.queue...)
				p.mu.Unlock()
				return
			}
			event()
		}
	}
}

package controller

import (
	"context"
	"sync"

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
)

// eventPacer records events in order from one goroutine, at a pace the
// recorder keeps up with (eventBurst, eventRate).
type eventPacer struct {
	limiter *rate.Limiter

	mu    sync.Mutex
	queue []func()
	wake  chan struct{}
}

func newEventPacer() *eventPacer {
	return &eventPacer{limiter: rate.NewLimiter(eventRate, eventBurst), wake: make(chan struct{}, 1)}
}

// send queues events to be recorded, in order, after those queued before.
func (p *eventPacer) send(events []func()) {
	if len(events) == 0 {
		return
	}
	p.mu.Lock()
	p.queue = append(p.queue, events...)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Start records the queued events until ctx is done (a manager Runnable).
func (p *eventPacer) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-p.wake:
		}
		for {
			p.mu.Lock()
			events := p.queue
			p.queue = nil
			p.mu.Unlock()
			if len(events) == 0 {
				break
			}
			for _, event := range events {
				if err := p.limiter.Wait(ctx); err != nil {
					return nil
				}
				event()
			}
		}
	}
}

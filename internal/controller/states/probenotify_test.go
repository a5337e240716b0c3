package states

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestProbeNotificationsNeverBlock: a probe worker hands a changed
// observation over without waiting for the reconciler, repeats of a state
// not yet reconciled collapse into one, and a shut-down queue (the manager
// stopping) does not hold the worker either.
func TestProbeNotificationsNeverBlock(t *testing.T) {
	var p probeNotifications
	p.notify("shop/before-start") // no queue yet: dropped, not blocked

	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	if err := p.start(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 10000 {
			p.notify([]string{"shop/a", "shop/b", "other/a"}[i%3])
		}
		q.ShutDown()
		for range 10000 {
			p.notify("shop/a")
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("notify blocked with nobody reading the queue")
	}
	if got := q.Len(); got != 3 {
		t.Errorf("the queue holds %d requests, want 3: one per state", got)
	}
}

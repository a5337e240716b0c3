package notifiers

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// newTurnsReconciler is a Reconciler with the namespace turns made as
// SetupWithManager makes them.
func newTurnsReconciler() *Reconciler {
	return &Reconciler{
		sending:  map[string]int{},
		waiting:  map[string][]types.NamespacedName{},
		wakeups:  make(chan event.GenericEvent, 64),
		stopping: make(chan struct{}),
	}
}

// notifierKey is "namespace/name" as a key.
func notifierKey(s string) types.NamespacedName {
	ns, name, _ := strings.Cut(s, "/")
	return types.NamespacedName{Namespace: ns, Name: name}
}

// woken drains the notifiers woken so far, as "namespace/name".
func woken(r *Reconciler) []string {
	var out []string
	for {
		select {
		case e := <-r.wakeups:
			out = append(out, e.Object.GetNamespace()+"/"+e.Object.GetName())
		default:
			return out
		}
	}
}

// turnStep is a notifier trying to enter its namespace's turn (enter,
// "namespace/name"; entered is whether it did), or a turn of a namespace
// given back (leave; woken are the notifiers reconciled again).
type turnStep struct {
	enter   string
	entered bool
	leave   string
	woken   []string
}

// TestNamespaceTurns: one notifier of a namespace sends at a time; the
// others of the namespace wait, each once, and are woken oldest first,
// one per turn given back; other namespaces send beside; nothing is kept
// of a namespace once its last turn is given back.
func TestNamespaceTurns(t *testing.T) {
	for _, tt := range []struct {
		name        string
		steps       []turnStep
		wantSending map[string]int
		wantWaiting map[string][]types.NamespacedName
	}{
		{
			name:        "the first notifier of a namespace enters",
			steps:       []turnStep{{enter: "shop/a", entered: true}},
			wantSending: map[string]int{"shop": 1},
			wantWaiting: map[string][]types.NamespacedName{},
		},
		{
			name: "a second notifier of the namespace waits, queued once though it tries twice",
			steps: []turnStep{
				{enter: "shop/a", entered: true},
				{enter: "shop/b", entered: false},
				{enter: "shop/b", entered: false},
			},
			wantSending: map[string]int{"shop": 1},
			wantWaiting: map[string][]types.NamespacedName{"shop": {notifierKey("shop/b")}},
		},
		{
			name: "a notifier of another namespace enters beside",
			steps: []turnStep{
				{enter: "shop/a", entered: true},
				{enter: "shop/b", entered: false},
				{enter: "payments/x", entered: true},
			},
			wantSending: map[string]int{"shop": 1, "payments": 1},
			wantWaiting: map[string][]types.NamespacedName{"shop": {notifierKey("shop/b")}},
		},
		{
			name: "a turn given back wakes the oldest waiter, and only it",
			steps: []turnStep{
				{enter: "shop/a", entered: true},
				{enter: "shop/b", entered: false},
				{enter: "shop/c", entered: false},
				{enter: "shop/b", entered: false},
				{leave: "shop", woken: []string{"shop/b"}},
			},
			wantSending: map[string]int{},
			wantWaiting: map[string][]types.NamespacedName{"shop": {notifierKey("shop/c")}},
		},
		{
			name: "the waiters take their turns in order, then nothing is kept of the namespace",
			steps: []turnStep{
				{enter: "shop/a", entered: true},
				{enter: "shop/b", entered: false},
				{enter: "shop/c", entered: false},
				{leave: "shop", woken: []string{"shop/b"}},
				{enter: "shop/b", entered: true},
				{leave: "shop", woken: []string{"shop/c"}},
				{enter: "shop/c", entered: true},
				{leave: "shop"},
			},
			wantSending: map[string]int{},
			wantWaiting: map[string][]types.NamespacedName{},
		},
		{
			name: "a turn given back in one namespace wakes none of another's",
			steps: []turnStep{
				{enter: "shop/a", entered: true},
				{enter: "shop/b", entered: false},
				{enter: "payments/x", entered: true},
				{leave: "payments"},
			},
			wantSending: map[string]int{"shop": 1},
			wantWaiting: map[string][]types.NamespacedName{"shop": {notifierKey("shop/b")}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newTurnsReconciler()
			for i, step := range tt.steps {
				if step.enter != "" {
					if got := r.enter(notifierKey(step.enter)); got != step.entered {
						t.Fatalf("step %d: enter(%s) = %v, want %v", i, step.enter, got, step.entered)
					}
				} else {
					r.leave(step.leave)
				}
				if diff := cmp.Diff(step.woken, woken(r)); diff != "" {
					t.Fatalf("step %d: notifiers woken (-want +got):\n%s", i, diff)
				}
			}
			if diff := cmp.Diff(tt.wantSending, r.sending); diff != "" {
				t.Errorf("sending (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantWaiting, r.waiting); diff != "" {
				t.Errorf("waiting (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRequeueWhenStopping: once the manager stops, nothing reads the
// wakeups; a notifier woken then (its turn ended, its namespace's turn
// given back) must not hold the stop.
func TestRequeueWhenStopping(t *testing.T) {
	r := newTurnsReconciler()
	for range cap(r.wakeups) {
		r.requeue(notifierKey("shop/earlier"))
	}
	close(r.stopping)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.requeue(notifierKey("shop/a"))
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("requeue blocked on full wakeups after the manager stopped")
	}
}

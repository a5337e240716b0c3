package fairshare

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

// recorder collects the order in which tenants got their turns.
type recorder struct {
	mu    sync.Mutex
	order []string
	turns chan *Turn
}

func newRecorder() *recorder { return &recorder{turns: make(chan *Turn, 100)} }

// ask starts an Acquire for tenant and waits until it waits (or holds).
func (r *recorder) ask(t *testing.T, turns *Turns, tenant string) {
	t.Helper()
	before := turns.Waiting()
	started := make(chan struct{})
	go func() {
		close(started)
		turn, err := turns.Acquire(context.Background(), tenant)
		if err != nil {
			t.Errorf("Acquire(%s): %v", tenant, err)
			return
		}
		r.mu.Lock()
		r.order = append(r.order, tenant)
		r.mu.Unlock()
		r.turns <- turn
	}()
	<-started
	deadline := time.Now().Add(5 * time.Second)
	for turns.Waiting() == before && len(r.turns) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}

func (r *recorder) next(t *testing.T) *Turn {
	t.Helper()
	select {
	case turn := <-r.turns:
		return turn
	case <-time.After(5 * time.Second):
		t.Fatal("no turn was given")
		return nil
	}
}

func (r *recorder) none(t *testing.T) {
	t.Helper()
	select {
	case turn := <-r.turns:
		t.Fatalf("a turn was given to %s; want none yet", turn.tenant)
	case <-time.After(50 * time.Millisecond):
	}
}

// A tenant with a long queue does not keep another tenant waiting past the
// turn in progress: the next free slot goes to the other tenant.
func TestTurnsGoRoundTheTenants(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	turns := New(clk, 1, 1)
	r := newRecorder()
	for range 4 {
		r.ask(t, turns, "noisy")
	}
	first := r.next(t)
	r.ask(t, turns, "victim")
	r.ask(t, turns, "other")
	first.Done()
	for range 5 {
		r.next(t).Done()
	}
	want := []string{"noisy", "noisy", "victim", "other", "noisy", "noisy"}
	r.mu.Lock()
	defer r.mu.Unlock()
	// The first noisy turn was given before the others asked; the second
	// noisy one was in line before them.
	if diff := cmp.Diff(want, r.order); diff != "" {
		t.Errorf("order of turns (-want +got):\n%s", diff)
	}
}

// A tenant's turns are held to its share of a core: after a turn of 100ms
// at a share of a quarter, its next turn waits until 400ms after the first
// began, while another tenant takes a free slot at once.
func TestTurnsHoldATenantToItsShare(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	turns := New(clk, 2, 0.25)
	r := newRecorder()
	r.ask(t, turns, "slow")
	turn := r.next(t)
	clk.Step(100 * time.Millisecond)
	turn.Done()

	r.ask(t, turns, "slow")
	r.none(t)
	r.ask(t, turns, "victim")
	if got := r.next(t); got.tenant != "victim" {
		t.Fatalf("turn given to %s, want victim", got.tenant)
	}
	clk.Step(299 * time.Millisecond)
	r.none(t)
	clk.Step(time.Millisecond)
	if got := r.next(t); got.tenant != "slow" {
		t.Fatalf("turn given to %s, want slow", got.tenant)
	}
}

// A waiter whose context ends leaves the line and takes no slot.
func TestTurnsCancelledWaiterTakesNoSlot(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	turns := New(clk, 1, 1)
	r := newRecorder()
	r.ask(t, turns, "a")
	held := r.next(t)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := turns.Acquire(ctx, "b")
		done <- err
	}()
	for turns.Waiting() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("Acquire returned a turn after its context ended")
	}
	if got := turns.Waiting(); got != 0 {
		t.Fatalf("%d waiters left, want 0", got)
	}
	held.Done()
	r.ask(t, turns, "c")
	if got := r.next(t); got.tenant != "c" {
		t.Fatalf("turn given to %s, want c", got.tenant)
	}
}

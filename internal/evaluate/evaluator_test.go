package evaluate

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/fairshare"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/match"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// TestEvaluatorDropsAStaleVerdict: a switch whose state answered anew
// while its first verdict waited for a turn waits for the new verdict
// only: the old one is never evaluated, and the switch is woken once, with
// the new verdict kept as its own.
func TestEvaluatorDropsAStaleVerdict(t *testing.T) {
	turns := fairshare.New(clock.RealClock{}, 1, 1)
	e := NewEvaluator(turns)
	defer e.cancel()
	held, err := turns.Acquire(context.Background(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	id := target.SwitchID{Kind: "DynamicIngress", Key: types.NamespacedName{Namespace: "shop", Name: "web"}}
	var woken atomic.Int32
	known := e.Known(id, func() { woken.Add(1) })
	const expr = `response.code == 201 && "stale-test" != ""`
	old, current := match.Response{StatusCode: "200", Body: "a"}, match.Response{StatusCode: "201", Body: "b"}
	if _, ok := known(expr, old); ok {
		t.Fatal("a verdict never evaluated is known")
	}
	if _, ok := known(expr, current); ok {
		t.Fatal("a verdict never evaluated is known")
	}
	before := match.Evaluations()
	held.Done()

	deadline := time.Now().Add(5 * time.Second)
	for woken.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // a stale evaluation would have run by now
	if got := woken.Load(); got != 1 {
		t.Errorf("woken %d times, want once", got)
	}
	if got := match.Evaluations() - before; got != 1 {
		t.Errorf("%d evaluations, want 1: the stale response's verdict was evaluated too", got)
	}
	if v, ok := known(expr, current); !ok || v != "" {
		t.Errorf("the current verdict: %q, %v; want it known and holding", v, ok)
	}
}

// TestSharedVerdictNeverWaitsInAnotherNamespacesQueue: a verdict on a
// cluster state's answer that switches of two namespaces wait for is
// evaluated in whichever of their turns comes first: an attacker
// namespace with a queue of its own distinct expressions on that answer,
// which asks for the shared verdict first, does not make the other
// namespace's switch wait behind that queue.
func TestSharedVerdictNeverWaitsInAnotherNamespacesQueue(t *testing.T) {
	turns := fairshare.New(clock.RealClock{}, 1, 1)
	e := NewEvaluator(turns)
	defer e.cancel()
	held, err := turns.Acquire(context.Background(), "attacker")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	woke := func(name string) func() {
		return func() {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, name)
		}
	}
	// The cluster state's answer.
	got := match.Response{StatusCode: "503", Body: `{"down":true}`}
	// queued waits until n evaluations wait for a turn, so that each is in
	// line before the next is asked for.
	queued := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); turns.Waiting() < n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d evaluations wait for a turn, want %d", turns.Waiting(), n)
			}
		}
	}
	attacker := func(name string) target.SwitchID {
		return target.SwitchID{Kind: "DynamicIngress", Key: types.NamespacedName{Namespace: "attacker", Name: name}}
	}
	// The attacker's own distinct expressions on the answer, queued first.
	// Expressions of this run only: verdicts are cached process-wide.
	run := time.Now().UnixNano()
	for i := range 3 {
		expr := fmt.Sprintf(`response.code == 503 && "a%d-%d" != ""`, i, run)
		name := fmt.Sprintf("own-%d", i+1)
		e.Known(attacker(name), woke(name))(expr, got)
		queued(i + 1)
	}
	// Then the verdict both namespaces' switches follow: the attacker
	// asks first, the victim after.
	shared := fmt.Sprintf(`response.code == 503 && "platform-%d" != ""`, run)
	e.Known(attacker("follower"), woke("attacker-follower"))(shared, got)
	queued(4)
	victim := target.SwitchID{Kind: "DynamicIngress", Key: types.NamespacedName{Namespace: "shop", Name: "web"}}
	e.Known(victim, woke("victim"))(shared, got)
	queued(5)
	held.Done()

	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(order)
		mu.Unlock()
		if n == 5 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // a second evaluation of the shared verdict would have run by now
	mu.Lock()
	defer mu.Unlock()
	if len(order) != 5 {
		t.Fatalf("woken: %v, want all five once", order)
	}
	victimAt, lastOwn := slices.Index(order, "victim"), slices.Index(order, "own-3")
	if victimAt > lastOwn {
		t.Errorf("woken in the order %v: the victim's shared verdict waited behind the attacker's own queue", order)
	}
	if a, v := slices.Index(order, "attacker-follower"), slices.Index(order, "victim"); a < 0 || v < 0 || (a != v+1 && v != a+1) {
		t.Errorf("woken in the order %v: the shared verdict's two switches were not woken together (evaluated twice?)", order)
	}
}

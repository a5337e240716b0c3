package controller

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/fairshare"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/match"
)

// TestEvaluatorDropsAStaleVerdict: a switch whose state answered anew
// while its first verdict waited for a turn waits for the new verdict
// only: the old one is never evaluated, and the switch is woken once, with
// the new verdict kept as its own.
func TestEvaluatorDropsAStaleVerdict(t *testing.T) {
	turns := fairshare.New(clock.RealClock{}, 1, 1)
	e := newExpressionEvaluator(turns)
	defer e.cancel()
	held, err := turns.Acquire(context.Background(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	id := switchID{kind: "DynamicIngress", key: types.NamespacedName{Namespace: "shop", Name: "web"}}
	var woken atomic.Int32
	known := e.known(id, func() { woken.Add(1) })
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

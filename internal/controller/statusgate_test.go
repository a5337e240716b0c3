package controller

import (
	"maps"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
)

// gateUnderTest is a status gate whose releases are recorded, by kind.
type gateUnderTest struct {
	*statusGate
	clock    *testingclock.FakeClock
	released map[string][]string
}

func newGateUnderTest(maxHold time.Duration) *gateUnderTest {
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	g := &gateUnderTest{statusGate: newStatusGate(clk, maxHold), clock: clk, released: map[string][]string{}}
	for _, kind := range []string{"DynamicIngress", "DynamicHTTPRoute"} {
		g.register(kind, func(key types.NamespacedName) {
			g.released[kind] = append(g.released[kind], key.Name)
			slices.Sort(g.released[kind])
		})
	}
	return g
}

func keys(names ...string) []types.NamespacedName {
	out := make([]types.NamespacedName, 0, len(names))
	for _, name := range names {
		out = append(out, types.NamespacedName{Namespace: "shop", Name: name})
	}
	return out
}

func key(name string) types.NamespacedName { return keys(name)[0] }

func TestStatusGateHoldsUntilTheLastTargetIsSynced(t *testing.T) {
	g := newGateUnderTest(10 * time.Second)
	if held, _ := g.hold("DynamicIngress", key("a")); held {
		t.Fatal("a status was held with no state change under way")
	}

	g.expect("DynamicIngress", keys("a", "b", "c"))
	g.expect("DynamicHTTPRoute", keys("r"))
	g.clock.Step(2 * time.Second)
	held, atMost := g.hold("DynamicIngress", key("a"))
	if !held || atMost != 8*time.Second {
		t.Fatalf("hold(a) = %v, %v; want held for at most 8s (10s from the state change)", held, atMost)
	}
	g.done("DynamicIngress", key("a"))
	if held, _ := g.hold("DynamicHTTPRoute", key("r")); !held {
		t.Fatal("the route's status was not held while Ingresses are still to be written")
	}
	g.done("DynamicIngress", key("b"))
	g.done("DynamicIngress", key("unrelated")) // not part of the change
	g.done("DynamicHTTPRoute", key("r"))
	if len(g.released) != 0 {
		t.Fatalf("released %v while c is still to be written", g.released)
	}

	g.done("DynamicIngress", key("c"))
	want := map[string][]string{"DynamicIngress": {"a"}, "DynamicHTTPRoute": {"r"}}
	if !mapsEqual(g.released, want) {
		t.Fatalf("released %v, want %v", g.released, want)
	}
	if held, _ := g.hold("DynamicIngress", key("b")); held {
		t.Fatal("a status was held after every target was written")
	}
	g.done("DynamicIngress", key("c"))
	if !mapsEqual(g.released, want) {
		t.Fatalf("a second done released again: %v", g.released)
	}
}

func TestStatusGateHoldsNoLongerThanMaxHold(t *testing.T) {
	g := newGateUnderTest(10 * time.Second)
	g.expect("DynamicIngress", keys("stuck", "a"))
	g.clock.Step(4 * time.Second)
	g.expect("DynamicIngress", keys("b")) // a second change while the first is under way
	g.clock.Step(5 * time.Second)
	if held, atMost := g.hold("DynamicIngress", key("a")); !held || atMost != time.Second {
		t.Fatalf("hold(a) = %v, %v; want held for at most 1s (10s from the first change)", held, atMost)
	}
	g.clock.Step(time.Second)
	if held, _ := g.hold("DynamicIngress", key("b")); held {
		t.Fatal("a status was held 10s after the state change")
	}

	// Once every target is synced, the next change holds for its own 10s.
	g.done("DynamicIngress", key("stuck"))
	g.done("DynamicIngress", key("a"))
	g.done("DynamicIngress", key("b"))
	if want := map[string][]string{"DynamicIngress": {"a"}}; !mapsEqual(g.released, want) {
		t.Fatalf("released %v, want %v", g.released, want)
	}
	g.expect("DynamicIngress", keys("a"))
	g.clock.Step(9 * time.Second)
	if held, _ := g.hold("DynamicIngress", key("b")); !held {
		t.Fatal("a new state change did not hold statuses")
	}
}

func mapsEqual(a, b map[string][]string) bool { return maps.EqualFunc(a, b, slices.Equal[[]string]) }

package switches

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestPinEnds: the switches whose pins end at one time are handed over
// together, once, at that time; a moved or removed end is not rung at its
// old time; nothing rings before its time.
func TestPinEnds(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	var (
		mu   sync.Mutex
		rung [][]string
	)
	p := newPinEnds(clk, func(keys []types.NamespacedName) {
		names := make([]string, 0, len(keys))
		for _, k := range keys {
			names = append(names, k.Name)
		}
		slices.Sort(names)
		mu.Lock()
		rung = append(rung, names)
		mu.Unlock()
	})
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "shop", Name: name} }
	for _, name := range []string{"a", "b", "c", "moved", "removed"} {
		p.set(key(name), t0.Add(10*time.Second))
	}
	p.set(key("a"), t0.Add(10*time.Second)) // the same end: nothing changes
	p.set(key("later"), t0.Add(20*time.Second))
	p.set(key("moved"), t0.Add(20*time.Second))
	p.set(key("removed"), time.Time{})
	got := func() [][]string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(rung)
	}

	clk.Step(10*time.Second - time.Nanosecond)
	if r := got(); len(r) != 0 {
		t.Fatalf("rang before the end: %v", r)
	}
	clk.Step(time.Nanosecond)
	if diff := cmp.Diff([][]string{{"a", "b", "c"}}, got()); diff != "" {
		t.Errorf("at the first end (-want +got):\n%s", diff)
	}
	clk.Step(10 * time.Second)
	if diff := cmp.Diff([][]string{{"a", "b", "c"}, {"later", "moved"}}, got()); diff != "" {
		t.Errorf("at the second end (-want +got):\n%s", diff)
	}
	clk.Step(time.Hour)
	if n := len(got()); n != 2 {
		t.Errorf("rang %d times, want 2", n)
	}
	if len(p.ends) != 0 || len(p.at) != 0 {
		t.Errorf("left %d ends and %d timers behind", len(p.ends), len(p.at))
	}
}

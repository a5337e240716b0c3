package controller_test

import (
	"bytes"
	"errors"
	"io"
	"runtime/trace"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	xtrace "golang.org/x/exp/trace"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/regions"
)

// TestFlipIsTraced flips a state of 5 DynamicIngresses under an execution
// trace of this process (the suite's manager runs in it): the trace has
// the state's reconcile and status write, and for each switch its
// reconcile, its target write, its status write and its event, as the
// regions of internal/regions (docs/operations.md).
func TestFlipIsTraced(t *testing.T) {
	if trace.IsEnabled() {
		t.Skip("a trace already runs (go test -trace)")
	}
	const n = 5
	ns, state := passiveSites(t, n, nil)
	eventually(t, quietFor(t, time.Second)).Should(BeTrue())
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	setFixedStatus(t, state, "200")
	eventually(t, backendsIn(t, ns)).Should(HaveEach("sorry"))
	eventually(t, activeCount(t, ns)).Should(Equal(n))
	eventually(t, quietFor(t, time.Second)).Should(BeTrue())
	trace.Stop()

	r, err := xtrace.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for {
		ev, err := r.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind() == xtrace.EventRegionEnd {
			got[ev.Region().Type]++
		}
	}
	// Other suites' switches may run beside this one: at least this
	// flip's.
	for kind, least := range map[string]int{
		regions.StateReconcile: 1, regions.StateStatus: 1,
		regions.SwitchReconcile: 2 * n, regions.TargetWrite: n, regions.SwitchStatus: n, regions.Event: n,
	} {
		if got[kind] < least {
			t.Errorf("%d %q regions ended in the trace of the flip, want at least %d (all: %v)", got[kind], kind, least, got)
		}
	}
}

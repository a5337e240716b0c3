package controller_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/plugin"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestFlipWritesEveryTargetBeforeAnyStatus flips one state driving more
// DynamicIngresses than the controller has workers, there and back, with
// more DynamicIngresses of the same state that never match it (their mode
// stays; their reconciles end first): in each flip every Ingress is
// written before the first status and the first Switched event, so that
// the API server works on what traffic sees first, and the statuses are
// not held back longer than the flip (the gate's 10s bound is not what
// ends the wait). The order is read from resourceVersions, which this API
// server takes from etcd's revision.
func TestFlipWritesEveryTargetBeforeAnyStatus(t *testing.T) {
	const switching, steady = 60, 20
	ns := newNamespace(t)
	state := builders.FixedState(ns, "flag", "503", "").Obj()
	create(t, state)
	for i := range switching + steady {
		name := fmt.Sprintf("site-%02d", i)
		expect := "200"
		if i >= switching {
			expect = "418"
		}
		create(t, siteSwitch(ns, name, "flag").ExpectCode(expect).Obj())
	}
	eventually(t, backendsIn(t, ns)).Should(And(HaveLen(switching+steady), HaveEach("web")))
	eventually(t, readyCount(t, ns)).Should(Equal(switching + steady))

	for _, flip := range []struct {
		code, backend string
		active        int
	}{{"200", "sorry", switching}, {"503", "web", 0}} {
		before := resourceVersions(t, ns)
		setFixedStatus(t, state, flip.code)
		flipped := revision(t, state.ResourceVersion)
		eventually(t, backendsIn(t, ns)).Should(ContainElements(slices.Repeat([]string{flip.backend}, switching)))
		NewWithT(t).Eventually(activeCount(t, ns), 8*time.Second, 50*time.Millisecond).Should(Equal(flip.active),
			"the statuses of the flip to %s took about as long as the gate's bound", flip.code)
		eventually(t, switchedEventsAfter(t, ns, flipped)).Should(HaveLen(switching))

		after := resourceVersions(t, ns)
		lastIngress, lastIngressRV := "", uint64(0)
		for name, rv := range after {
			if strings.HasPrefix(name, "ingress/") && revision(t, rv) > lastIngressRV {
				lastIngress, lastIngressRV = name, revision(t, rv)
			}
		}
		var early []string
		for name, rv := range after {
			if strings.HasPrefix(name, "di/") && rv != before[name] && revision(t, rv) < lastIngressRV {
				early = append(early, fmt.Sprintf("status of %s (%s)", name, rv))
			}
		}
		for _, rv := range switchedEventsAfter(t, ns, flipped)() {
			if rv < lastIngressRV {
				early = append(early, fmt.Sprintf("a Switched event (%d)", rv))
			}
		}
		slices.Sort(early)
		if len(early) > 0 {
			t.Errorf("flip to %s: %d writes came before %s (resourceVersion %d): %v",
				flip.code, len(early), lastIngress, lastIngressRV, early)
		}
	}
}

// switchedEventsAfter lists the resourceVersions of the Switched events of
// ns written after resourceVersion after.
func switchedEventsAfter(t *testing.T, ns string, after uint64) func() []uint64 {
	return func() []uint64 {
		list := &eventsv1.EventList{}
		if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		var out []uint64
		for _, e := range list.Items {
			if rv := revision(t, e.ResourceVersion); e.Reason == v1beta1.EventReasonSwitched && rv > after {
				out = append(out, rv)
			}
		}
		return out
	}
}

func revision(t *testing.T, resourceVersion string) uint64 {
	t.Helper()
	rv, err := strconv.ParseUint(resourceVersion, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", resourceVersion, err)
	}
	return rv
}

// settledCount counts the DynamicIngresses of ns whose status shows the
// mode as `kubectl dynamic wait` requires it.
func settledCount(t *testing.T, ns string, active bool) func() int {
	return countSwitches(t, ns, func(di *v1beta1.DynamicIngress) bool {
		shows, _, _ := plugin.StatusShows(di, active)
		return shows
	})
}

// countSwitches counts the DynamicIngresses of ns that match.
func countSwitches(t *testing.T, ns string, match func(*v1beta1.DynamicIngress) bool) func() int {
	return func() int {
		dis := &v1beta1.DynamicIngressList{}
		if err := k8s.List(ctx, dis, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		count := 0
		for i := range dis.Items {
			if match(&dis.Items[i]) {
				count++
			}
		}
		return count
	}
}

// readyCount and activeCount count the DynamicIngresses of ns whose Ready
// (Active) condition is True.
func readyCount(t *testing.T, ns string) func() int { return trueCount(t, ns, v1beta1.ConditionReady) }

func activeCount(t *testing.T, ns string) func() int {
	return trueCount(t, ns, v1beta1.ConditionActive)
}

func trueCount(t *testing.T, ns, condType string) func() int {
	return countSwitches(t, ns, func(di *v1beta1.DynamicIngress) bool {
		return meta.IsStatusConditionTrue(di.Status.Conditions, condType)
	})
}

// TestFlipReconcilesEachSwitchTwice flips 60 DynamicIngresses there and
// back and counts the dynamicingress controller's reconciles
// (controller_runtime_reconcile_total): one writes each target, one writes
// each status once the gate opens. The reconciles that the echo of each
// target write used to cause while the gate held every status found
// nothing to do but hold it again; during a flip they competed with the
// target writes still to come (docs/benchmarks.md).
func TestFlipReconcilesEachSwitchTwice(t *testing.T) {
	const n = 60
	ns, state := passiveSites(t, n, nil)
	for _, flip := range []struct {
		code, backend string
		active        int
	}{{"200", "sorry", n}, {"503", "web", 0}} {
		eventually(t, quietFor(t, time.Second)).Should(BeTrue())
		before := reconcileTotal(t)
		setFixedStatus(t, state, flip.code)
		eventually(t, backendsIn(t, ns)).Should(HaveEach(flip.backend))
		eventually(t, activeCount(t, ns)).Should(Equal(flip.active))
		eventually(t, quietFor(t, time.Second)).Should(BeTrue())
		// Up to 3n/4 more than 2n: a status reconcile may find the status
		// held still (the echo of its target write came before the write's
		// answer) or the cache behind the write, and run again; without
		// the shortcuts, every switch is reconciled about three times.
		if got := reconcileTotal(t) - before; got > 2*n+3*n/4 {
			t.Errorf("flip to %s: %d reconciles of %d DynamicIngresses, want at most %d (a target write, then the status)",
				flip.code, got, n, 2*n+3*n/4)
		}
	}
}

// reconcileTotal sums controller_runtime_reconcile_total of the
// dynamicingress controller over its results.
func reconcileTotal(t *testing.T) int {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "controller") == "dynamicingress" {
				total += int(m.GetCounter().GetValue())
			}
		}
	}
	return total
}

// quietFor reports whether the dynamicingress controller reconciled
// nothing for d.
func quietFor(t *testing.T, d time.Duration) func() bool {
	return func() bool {
		before := reconcileTotal(t)
		time.Sleep(d)
		return reconcileTotal(t) == before
	}
}

// completeFlipBound is how long a flip of completeFlipSwitches may take
// until every status shows it. `make bench` measures a complete flip of 500
// in about 1.5 s on two cores (docs/benchmarks.md), so 200 take about
// 0.6 s (0.7-0.9 s in this suite): the bound is about eight times that, for
// a machine busy with other suites, and below the status gate's 10 s hold,
// which statuses waiting for anything but the flip's own targets would run
// into.
const (
	completeFlipSwitches = 200
	completeFlipBound    = 6 * time.Second
)

// TestCompleteFlipOf200 flips one state driving 200 DynamicIngresses there
// and back: each way every status shows the new mode within
// completeFlipBound, each switch's status is written once and announced by
// one Switched event, and every event comes after the last status (events
// wait for the flip's statuses, not the other way round).
func TestCompleteFlipOf200(t *testing.T) {
	const n = completeFlipSwitches
	ns := newNamespace(t)
	state := builders.FixedState(ns, "flag", "503", "").Obj()
	create(t, state)
	for i := range n {
		create(t, siteSwitch(ns, fmt.Sprintf("site-%03d", i), "flag").ExpectCode("200").Obj())
	}
	eventually(t, readyCount(t, ns)).Should(Equal(n))
	eventually(t, quietFor(t, time.Second)).Should(BeTrue())

	for _, flip := range []struct {
		code   string
		active int
	}{{"200", n}, {"503", 0}} {
		statusWrites := writesTo(ns, "dynamicingresses/status")
		start := time.Now()
		setFixedStatus(t, state, flip.code)
		flipped := revision(t, state.ResourceVersion)
		NewWithT(t).Eventually(settledCount(t, ns, flip.active == n), completeFlipBound, 20*time.Millisecond).Should(Equal(n),
			"the flip to %s: not every status showed it within %s", flip.code, completeFlipBound)
		t.Logf("flip to %s: every status after %s", flip.code, time.Since(start).Round(time.Millisecond))

		eventually(t, switchedEventsAfter(t, ns, flipped)).Should(HaveLen(n))
		NewWithT(t).Consistently(func() int { return len(switchedEventsAfter(t, ns, flipped)()) }, time.Second, 100*time.Millisecond).Should(Equal(n),
			"one Switched event per switch")
		if got := writesTo(ns, "dynamicingresses/status") - statusWrites; got != n {
			t.Errorf("flip to %s: %d status writes for %d switches, want one each", flip.code, got, n)
		}
		lastStatus := uint64(0)
		for name, rv := range resourceVersions(t, ns) {
			if strings.HasPrefix(name, "di/") {
				lastStatus = max(lastStatus, revision(t, rv))
			}
		}
		if first := slices.Min(switchedEventsAfter(t, ns, flipped)()); first < lastStatus {
			t.Errorf("flip to %s: a Switched event (resourceVersion %d) came before the last status (%d)", flip.code, first, lastStatus)
		}
	}
}

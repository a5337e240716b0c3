package controller_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/match"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestRetainKeepsTheModeOfAFlipWhoseStatusesLag flips 200 DynamicIngresses
// with failurePolicy Retain and deletes their state as soon as every
// Ingress shows the flip, before the statuses (written after the targets)
// can all show it: every Ingress stays in the mode the flip gave it, and
// every DynamicIngress ends up active. Retain read from a lagging status
// sent the targets whose status was not written yet back to passive.
func TestRetainKeepsTheModeOfAFlipWhoseStatusesLag(t *testing.T) {
	const n = 200
	ns, state := passiveSites(t, n, func(w *builders.DynamicIngressWrapper) { w.FailurePolicy(v1beta1.FailurePolicyRetain) })

	setFixedStatus(t, state, "200")
	NewWithT(t).Eventually(backendsIn(t, ns), 30*time.Second, 10*time.Millisecond).Should(And(HaveLen(n), HaveEach("sorry")))
	lagging := n - activeCount(t, ns)()
	if err := k8s.Delete(ctx, state); err != nil {
		t.Fatal(err)
	}
	flipped := resourceVersions(t, ns)

	eventually(t, func() int { return reasonCount(t, ns, v1beta1.ReasonStateNotFound) }).Should(Equal(n))
	g := NewWithT(t)
	g.Expect(activeCount(t, ns)()).To(Equal(n), "DynamicIngresses that left active mode")
	g.Consistently(backendsIn(t, ns), 2*time.Second, 100*time.Millisecond).Should(HaveEach("sorry"))
	after := resourceVersions(t, ns)
	var rewritten []string
	for name, rv := range after {
		if strings.HasPrefix(name, "ingress/") && rv != flipped[name] {
			rewritten = append(rewritten, name)
		}
	}
	g.Expect(rewritten).To(BeEmpty(), "Ingresses written after the state was deleted")
	t.Logf("%d of %d statuses did not show the flip yet when the state was deleted", lagging, n)
}

// siteSwitch is a DynamicIngress ns/name following state, whose Ingress
// sends name.example.com to "web" while passive and to "sorry" while
// active.
func siteSwitch(ns, name, state string) *builders.DynamicIngressWrapper {
	host := name + ".example.com"
	return builders.DynamicIngress(ns, name).State(state).
		Passive(builders.IngressTo(host, "web")).Active(builders.IngressTo(host, "sorry"))
}

// passiveSites makes a namespace with a fixed state "flag" answering 503
// and n site switches expecting 200 of it (changed by change, when set),
// and waits until every Ingress is passive and every switch Ready.
func passiveSites(t *testing.T, n int, change func(*builders.DynamicIngressWrapper)) (string, *v1beta1.DynamicIngressState) {
	t.Helper()
	ns := newNamespace(t)
	state := builders.FixedState(ns, "flag", "503", "").Obj()
	create(t, state)
	for i := range n {
		w := siteSwitch(ns, fmt.Sprintf("site-%03d", i), "flag").ExpectCode("200")
		if change != nil {
			change(w)
		}
		create(t, w.Obj())
	}
	eventually(t, backendsIn(t, ns)).Should(And(HaveLen(n), HaveEach("web")))
	eventually(t, readyCount(t, ns)).Should(Equal(n))
	return ns, state
}

// reasonCount counts the DynamicIngresses of ns whose Active condition has
// this reason.
func reasonCount(t *testing.T, ns, reason string) int {
	dis := &v1beta1.DynamicIngressList{}
	if err := k8s.List(ctx, dis, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	count := 0
	for _, di := range dis.Items {
		for _, c := range di.Status.Conditions {
			if c.Type == v1beta1.ConditionActive && c.Reason == reason {
				count++
			}
		}
	}
	return count
}

// TestAFlapIsAnnouncedOncePerChange flips a state 503→200 and, as soon as
// the first Ingress shows it, back to 503, while the flip's statuses are
// still held behind its target writes: every DynamicIngress gets one
// Switched event and one dynamicingress_switches_total increment per change
// its Ingress went through (a watch counts them), also those whose status
// never showed the active mode.
func TestAFlapIsAnnouncedOncePerChange(t *testing.T) {
	const n = 100
	ns, state := passiveSites(t, n, nil)

	changes := watchBackendChanges(t, ns)
	before := switchCounts(t, ns)
	start := revision(t, resourceVersions(t, ns)["state/flag"])
	setFixedStatus(t, state, "200")
	NewWithT(t).Eventually(backendsIn(t, ns), 20*time.Second, 5*time.Millisecond).Should(ContainElement("sorry"))
	setFixedStatus(t, state, "503")
	eventually(t, backendsIn(t, ns)).Should(And(HaveLen(n), HaveEach("web")))
	// Every status settles passive, as it was.
	eventually(t, func() int { return reasonCount(t, ns, v1beta1.ReasonNotMatched) }).Should(Equal(n))
	time.Sleep(time.Second) // late events and counts, if any, arrive

	changed := changes()
	events := switchedEventsByName(t, ns, start)
	after := switchCounts(t, ns)
	twice, neverShown := 0, 0
	for i := range n {
		name := fmt.Sprintf("site-%03d", i)
		if changed[name] == 2 {
			twice++
		}
		if got := events[name]; got != changed[name] {
			t.Errorf("%s: its Ingress changed %d times, %d Switched events", name, changed[name], got)
		}
		if got := after[name] - before[name]; got != changed[name] {
			t.Errorf("%s: its Ingress changed %d times, switches_total grew by %d", name, changed[name], got)
		}
		if activeTransitions(t, ns, name) == 0 && changed[name] == 2 {
			neverShown++
		}
	}
	if twice == 0 {
		t.Fatal("no Ingress went active and back: the flap was not seen, the test proves nothing")
	}
	t.Logf("%d of %d Ingresses went active and back; %d of their statuses never showed it", twice, n, neverShown)
}

// watchBackendChanges counts, per Ingress of ns, how often its backend
// changed from the moment it is called until the returned func is.
func watchBackendChanges(t *testing.T, ns string) func() map[string]int {
	t.Helper()
	watcher, err := client.NewWithWatch(testConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := watcher.Watch(ctx, &networkingv1.IngressList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	backends, counts := map[string]string{}, map[string]int{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range w.ResultChan() {
			ing, ok := e.Object.(*networkingv1.Ingress)
			if !ok || e.Type == watch.Deleted {
				continue
			}
			b := ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name
			if prev, seen := backends[ing.Name]; seen && prev != b {
				counts[ing.Name]++
			}
			backends[ing.Name] = b
		}
	}()
	t.Cleanup(w.Stop)
	return func() map[string]int {
		w.Stop()
		<-done
		return counts
	}
}

// switchedEventsByName counts the Switched events of each DynamicIngress of
// ns written after resourceVersion after. The events API folds events of
// one object with the same reason into a series (kubectl shows "x2"), so
// an Event object counts as many times as its series says.
func switchedEventsByName(t *testing.T, ns string, after uint64) map[string]int {
	list := &eventsv1.EventList{}
	if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, e := range list.Items {
		if e.Reason == v1beta1.EventReasonSwitched && revision(t, e.ResourceVersion) > after {
			count := 1
			if e.Series != nil {
				count = int(e.Series.Count)
			}
			out[e.Regarding.Name] += count
		}
	}
	return out
}

// activeTransitions is how many times the DynamicIngress's Active condition
// changed since it was created, as its lastTransitionTime tells (0 or 1).
func activeTransitions(t *testing.T, ns, name string) int {
	di := &v1beta1.DynamicIngress{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, di); err != nil {
		t.Fatal(err)
	}
	for _, c := range di.Status.Conditions {
		if c.Type == v1beta1.ConditionActive && c.LastTransitionTime.After(di.CreationTimestamp.Add(time.Second)) {
			return 1
		}
	}
	return 0
}

// switchCounts reads dynamicingress_switches_total of every DynamicIngress
// of ns (both directions) from the manager's registry.
func switchCounts(t *testing.T, ns string) map[string]int {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, f := range families {
		if f.GetName() != "dynamicingress_switches_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "namespace") == ns && label(m, "kind") == "DynamicIngress" {
				out[label(m, "name")] += int(m.GetCounter().GetValue())
			}
		}
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestARunawayExpressionDelaysNoOtherFlip: 30 DynamicIngresses whose
// expression runs for seconds over their state's 32,000-element body, and
// 50 DynamicIngresses of another state that flips at the same moment as
// the first state's body changes. Each expression is evaluated once per
// response (not once per DynamicIngress and reconcile), stopped at its time
// budget with a condition that says so, and the 50 others flip as fast as
// without them.
func TestARunawayExpressionDelaysNoOtherFlip(t *testing.T) {
	const runaways, others = 30, 50
	ns := newNamespace(t)
	zeros := func(n int) string { return "[" + strings.TrimSuffix(strings.Repeat("0,", n), ",") + "]" }
	heavy := builders.FixedState(ns, "heavy", "200", zeros(32_000)).Obj()
	flag := builders.FixedState(ns, "flag", "503", "").Obj()
	create(t, heavy, flag)
	expressions := []string{`response.json.exists(x, x == 1)`, `response.json.exists(x, x == 2)`, `response.json.all(x, x == 0)`}
	for i := range runaways {
		create(t, siteSwitch(ns, fmt.Sprintf("heavy-%02d", i), "heavy").Expression(expressions[i%len(expressions)]).Obj())
	}
	for i := range others {
		create(t, siteSwitch(ns, fmt.Sprintf("site-%02d", i), "flag").ExpectCode("200").Obj())
	}
	eventually(t, readyCount(t, ns)).Should(Equal(runaways + others))

	evaluations := match.Evaluations()
	setFixedBody(t, heavy, zeros(31_999))
	setFixedStatus(t, flag, "200")
	NewWithT(t).Eventually(func() int {
		n := 0
		for _, b := range backendsIn(t, ns)() {
			if b == "sorry" {
				n++
			}
		}
		return n
	}, 10*time.Second, 20*time.Millisecond).Should(Equal(others), "the flip of the 50 others")
	for i := range runaways {
		di := &v1beta1.DynamicIngress{}
		name := fmt.Sprintf("heavy-%02d", i)
		eventually(t, func() string {
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, di); err != nil {
				t.Fatal(err)
			}
			for _, c := range di.Status.Conditions {
				if c.Type == v1beta1.ConditionActive {
					return c.Reason + ": " + c.Message
				}
			}
			return ""
		}).Should(Equal(`NotMatched: State "heavy" responded 200, which does not match spec.expected: ` +
			"expression failed: evaluation exceeded its time budget of 100ms and was stopped"))
	}
	// One evaluation per expression on the new response; the 50 others
	// have no expression.
	NewWithT(t).Expect(match.Evaluations()-evaluations).To(BeNumerically("<=", len(expressions)),
		"evaluations of 3 expressions on one new response")
}

// TestRetainStartsPassive: a new DynamicIngress with failurePolicy Retain
// whose state gives no answer starts passive, also when its active
// template is null (no target is then not taken for the active mode).
func TestRetainStartsPassive(t *testing.T) {
	ns := newNamespace(t)
	di := &v1beta1.DynamicIngress{}
	*di = *builders.DynamicIngress(ns, "shop").State("missing").ExpectCode("200").
		FailurePolicy(v1beta1.FailurePolicyRetain).
		Passive(builders.IngressTo("shop.example.com", "web")).Obj()
	create(t, di)
	eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("False/StateNotFound"))
	eventually(t, backendOf(t, ns, "shop")).Should(Equal("web"))
}

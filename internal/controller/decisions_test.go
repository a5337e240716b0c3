package controller_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// fakeClockNamespace belongs to a manager whose clock the test moves.
const fakeClockNamespace = "fake-clock"

// activeMessage is the Active condition's message, read from the API.
func activeMessage(di *v1beta1.DynamicIngress) func() string {
	return func() string {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(di), di); err != nil {
			return err.Error()
		}
		if c := meta.FindStatusCondition(di.Status.Conditions, v1beta1.ConditionActive); c != nil {
			return c.Message
		}
		return ""
	}
}

// TestRetainHoldsThroughAnOutage: with failurePolicy Retain, a probe
// outage past the threshold leaves the target in its active shape; when the
// endpoint answers again the DynamicIngress follows it.
func TestRetainHoldsThroughAnOutage(t *testing.T) {
	ns := newNamespace(t)
	flags := startFlagService(t, 200, "on")
	state := builders.ProbedState(ns, "flag", flags.url()).Interval(time.Second).Timeout(time.Second / 2).FailureThreshold(2).Obj()
	retain := builders.DynamicIngress(ns, "retain").State("flag").ExpectCode("200").FailurePolicy(v1beta1.FailurePolicyRetain).
		Passive(builders.IngressTo("retain.example.com", "web").Label("app", "web")).
		Active(builders.IngressTo("retain.example.com", "sorry").Label("app", "sorry")).Obj()
	passive := builders.DynamicIngress(ns, "passive").State("flag").ExpectCode("200").
		Passive(builders.IngressTo("passive.example.com", "web").Label("app", "web")).
		Active(builders.IngressTo("passive.example.com", "sorry").Label("app", "sorry")).Obj()
	create(t, state, retain, passive)
	for _, di := range []*v1beta1.DynamicIngress{retain, passive} {
		eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("True/Matched"))
		eventually(t, backendOf(t, ns, di.Name)).Should(Equal("sorry"))
	}

	flags.down.Store(true)
	eventually(t, stateStatus(state)).Should(Equal(` ""`)) // threshold reached: no response
	eventually(t, conditionOf(passive, v1beta1.ConditionActive)).Should(Equal("False/NoResponse"))
	eventually(t, backendOf(t, ns, "passive")).Should(Equal("web"))
	eventually(t, conditionOf(retain, v1beta1.ConditionActive)).Should(Equal("True/NoResponse"))
	NewWithT(t).Expect(activeMessage(retain)()).To(Equal(`State "flag" has no response; spec.failurePolicy Retain selects active mode`))
	NewWithT(t).Consistently(backendOf(t, ns, "retain"), 2*time.Second, 100*time.Millisecond).Should(Equal("sorry"))
	NewWithT(t).Expect(conditionOf(retain, v1beta1.ConditionReady)()).To(Equal("True/Synced"))

	flags.code.Store(503)
	flags.down.Store(false)
	eventually(t, conditionOf(retain, v1beta1.ConditionActive)).Should(Equal("False/NotMatched"))
	eventually(t, backendOf(t, ns, "retain")).Should(Equal("web"))
}

// TestFailurePolicies: with no answer from the state (no response, or no
// state at all), each policy selects its mode; a missing state also makes
// Ready False whatever the policy.
func TestFailurePolicies(t *testing.T) {
	ns := newNamespace(t)
	// A probed state whose endpoint is gone: no response after one failure.
	silent := builders.ProbedState(ns, "silent", closedPortURL(t)+"/flag").Interval(time.Second).Timeout(time.Second / 2).FailureThreshold(1).Obj()
	create(t, silent)
	tests := []struct {
		policy        v1beta1.FailurePolicy
		state         string
		active, ready string
		backend       string
	}{
		{"", "silent", "False/NoResponse", "True/Synced", "web"},
		{v1beta1.FailurePolicyPassive, "silent", "False/NoResponse", "True/Synced", "web"},
		{v1beta1.FailurePolicyActive, "silent", "True/NoResponse", "True/Synced", "sorry"},
		{v1beta1.FailurePolicyRetain, "silent", "False/NoResponse", "True/Synced", "web"}, // a new one starts passive
		{"", "missing", "False/StateNotFound", "False/StateNotFound", "web"},
		{v1beta1.FailurePolicyPassive, "missing", "False/StateNotFound", "False/StateNotFound", "web"},
		{v1beta1.FailurePolicyActive, "missing", "True/StateNotFound", "False/StateNotFound", "sorry"},
		{v1beta1.FailurePolicyRetain, "missing", "False/StateNotFound", "False/StateNotFound", "web"},
	}
	var dis []*v1beta1.DynamicIngress
	for _, tt := range tests {
		name := strings.ToLower(tt.state + "-" + string(tt.policy) + "x")
		di := builders.DynamicIngress(ns, name).State(tt.state).ExpectCode("200").
			Passive(builders.IngressTo(name+".example.com", "web").Label("app", "web")).
			Active(builders.IngressTo(name+".example.com", "sorry").Label("app", "sorry")).Obj()
		di.Spec.FailurePolicy = tt.policy
		dis = append(dis, di)
		create(t, di)
	}
	for i, tt := range tests {
		di := dis[i]
		eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal(tt.active), di.Name)
		eventually(t, conditionOf(di, v1beta1.ConditionReady)).Should(Equal(tt.ready), di.Name)
		eventually(t, backendOf(t, ns, di.Name)).Should(Equal(tt.backend), di.Name)
	}
	c := meta.FindStatusCondition(dis[6].Status.Conditions, v1beta1.ConditionReady)
	NewWithT(t).Expect(c.Message).To(Equal(`DynamicIngressState "missing" not found; the target follows the active template`))
}

// TestOverride pins a DynamicIngress while its state flips, and releases it.
func TestOverride(t *testing.T) {
	ns := newNamespace(t)
	state := builders.FixedState(ns, "killswitch", "200", "").Obj()
	storefront := builders.DynamicIngress(ns, "storefront").State("killswitch").ExpectCode("503").
		Passive(builders.IngressTo("storefront.example.com", "web").Label("app", "web")).
		Active(builders.IngressTo("storefront.example.com", "sorry").Label("app", "sorry")).Obj()
	create(t, state, storefront)
	eventually(t, backendOf(t, ns, "storefront")).Should(Equal("web"))

	setOverride(t, storefront, v1beta1.ModeActive)
	eventually(t, conditionOf(storefront, v1beta1.ConditionActive)).Should(Equal("True/Overridden"))
	eventually(t, backendOf(t, ns, "storefront")).Should(Equal("sorry"))
	NewWithT(t).Expect(activeMessage(storefront)()).To(Equal(
		`spec.override pins active mode; the state would select passive mode (State "killswitch" responded 200, which does not match spec.expected: statusCode is "200", expected "503")`))

	// The state flips under the override: nothing moves.
	setFixedStatus(t, state, "503")
	eventually(t, activeMessage(storefront)).Should(ContainSubstring("the state would select active mode"))
	setFixedStatus(t, state, "200")
	eventually(t, activeMessage(storefront)).Should(ContainSubstring("the state would select passive mode"))
	NewWithT(t).Consistently(backendOf(t, ns, "storefront"), time.Second, 100*time.Millisecond).Should(Equal("sorry"))

	// Removing the override follows the state at once.
	setOverride(t, storefront, "")
	eventually(t, conditionOf(storefront, v1beta1.ConditionActive)).Should(Equal("False/NotMatched"))
	eventually(t, backendOf(t, ns, "storefront")).Should(Equal("web"))
	eventually(t, eventReasons(ns, "storefront")).Should(ContainElements("Overridden", "OverrideRemoved"))
	// Events are recorded asynchronously: the second may come after the
	// Ingress moved. client-go's recorder makes it a series of the first
	// (the same reason and object), a patch that, when it overtakes the
	// first's create on a loaded machine, is retried about 10s later: this
	// waited 20s in vain once while the e2e suite ran beside it.
	eventually(t, func() int { return switchedEvents(ns)()["storefront"] }).WithTimeout(time.Minute).
		Should(Equal(2), "to active by the override, back to passive after it")
}

func setOverride(t *testing.T, di *v1beta1.DynamicIngress, mode v1beta1.Mode) {
	t.Helper()
	edit(t, di, func(di *v1beta1.DynamicIngress) { di.Spec.Override = mode })
}

// TestContainsAndExpressions: a chatty status API matched by Contains and by
// CEL, and an evaluation error shown in the condition.
func TestContainsAndExpressions(t *testing.T) {
	ns := newNamespace(t)
	state := builders.FixedState(ns, "status", "200", `{"maintenance":true,"since":"2026-11-22T02:00:00Z","by":"ops"}`).Obj()
	contains := builders.DynamicIngress(ns, "contains").State("status").
		Passive(builders.IngressTo("contains.example.com", "web").Label("app", "web")).
		Active(builders.IngressTo("contains.example.com", "sorry").Label("app", "sorry")).Obj()
	contains.Spec.Expected = v1beta1.ExpectedResponse{Body: ptr.To(`{"maintenance": true}`), BodyMatch: v1beta1.BodyMatchContains}
	exact := builders.DynamicIngress(ns, "exact").State("status").
		Passive(builders.IngressTo("exact.example.com", "web").Label("app", "web")).
		Active(builders.IngressTo("exact.example.com", "sorry").Label("app", "sorry")).Obj()
	exact.Spec.Expected = v1beta1.ExpectedResponse{Body: ptr.To(`{"maintenance": true}`)}
	cel := builders.DynamicIngress(ns, "cel").State("status").
		Passive(builders.IngressTo("cel.example.com", "web").Label("app", "web")).
		Active(builders.IngressTo("cel.example.com", "sorry").Label("app", "sorry")).Obj()
	cel.Spec.Expected = v1beta1.ExpectedResponse{Expression: `response.code == 200 && response.json.maintenance && response.json.by == "ops"`}
	broken := builders.DynamicIngress(ns, "broken").State("status").
		Passive(builders.IngressTo("broken.example.com", "web").Label("app", "web")).
		Active(builders.IngressTo("broken.example.com", "sorry").Label("app", "sorry")).Obj()
	broken.Spec.Expected = v1beta1.ExpectedResponse{Expression: `response.json.killswitch.enabled == true`}
	create(t, state, contains, exact, cel, broken)

	eventually(t, conditionOf(contains, v1beta1.ConditionActive)).Should(Equal("True/Matched"))
	eventually(t, conditionOf(cel, v1beta1.ConditionActive)).Should(Equal("True/Matched"))
	eventually(t, conditionOf(exact, v1beta1.ConditionActive)).Should(Equal("False/NotMatched"))
	eventually(t, conditionOf(broken, v1beta1.ConditionActive)).Should(Equal("False/NotMatched"))
	NewWithT(t).Expect(activeMessage(broken)()).To(Equal(
		`State "status" responded 200, which does not match spec.expected: expression failed: no such key: killswitch`))
	eventually(t, backendOf(t, ns, "contains")).Should(Equal("sorry"))
	eventually(t, backendOf(t, ns, "broken")).Should(Equal("web"))

	setFixedBody(t, state, `{"maintenance":false,"by":"ops"}`)
	eventually(t, conditionOf(contains, v1beta1.ConditionActive)).Should(Equal("False/NotMatched"))
	eventually(t, conditionOf(cel, v1beta1.ConditionActive)).Should(Equal("False/NotMatched"))
	NewWithT(t).Expect(activeMessage(cel)()).To(HaveSuffix("expression evaluated to false"))
}

// TestScheduleOpensAndCloses drives a schedule state on a fake clock: the
// window opens and closes at its boundaries, and nothing is written in
// between.
func TestScheduleOpensAndCloses(t *testing.T) {
	start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	cfg := rest.CopyConfig(testConfig)
	cfg.Wrap(countWrites)
	startManagerFor(t, fakeClockNamespace, cfg, clk)
	ns := fakeClockNamespace

	// A one-off window from 02:00 to 03:00 UTC, and a weekly one, Sundays
	// 04:00-05:00 in Tokyo (19:00-20:00 UTC on Saturday): far away.
	state := &v1beta1.DynamicIngressState{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "maintenance"},
		Spec: v1beta1.DynamicIngressStateSpec{Schedule: &v1beta1.Schedule{TimeZone: "Asia/Tokyo", Windows: []v1beta1.ScheduleWindow{
			{Start: "2026-11-22T11:00:00+09:00", End: "2026-11-22T12:00:00+09:00"},
			{Cron: "0 4 * * 0", Duration: &metav1.Duration{Duration: time.Hour}},
		}}}}
	page := builders.DynamicIngress(ns, "maintenance-page").State("maintenance").
		Active(builders.IngressTo("shop.example.com", "maintenance").Label("app", "maintenance")).Obj()
	page.Spec.Expected = v1beta1.ExpectedResponse{Expression: "response.json.open"}
	create(t, state, page)

	schedule := func() string {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(state), state); err != nil {
			return err.Error()
		}
		next := "none"
		if state.Status.NextTransitionTime != nil {
			next = state.Status.NextTransitionTime.UTC().Format(time.RFC3339)
		}
		return state.Status.Body + " next " + next
	}
	eventually(t, schedule).Should(Equal(`{"open":false} next 2026-11-22T02:00:00Z`))
	eventually(t, conditionOf(state, v1beta1.ConditionReady)).Should(Equal("True/Scheduled"))
	eventually(t, conditionOf(page, v1beta1.ConditionReady)).Should(Equal("True/Synced"))
	NewWithT(t).Expect(ingressOf(t, ns, "maintenance-page")()).To(BeNil())

	statusWrites := func() int64 { return writesTo(ns, "dynamicingressstates/status") }
	// The first response's flip summary, when its follower was there to
	// show it, may be written late (docs/behaviour.md, "History"): the
	// boundaries are counted from when the state's writes stopped.
	eventually(t, func() int64 {
		before := statusWrites()
		time.Sleep(1500 * time.Millisecond)
		return statusWrites() - before
	}).Should(BeZero())
	quiet := func(step time.Duration) {
		t.Helper()
		before := statusWrites()
		clk.Step(step)
		time.Sleep(time.Second)
		if got := statusWrites() - before; got != 0 {
			t.Errorf("%d status writes between boundaries (at %s)", got, clk.Now().UTC().Format(time.RFC3339))
		}
	}
	quiet(59 * time.Minute)

	before := statusWrites()
	clk.Step(time.Minute) // 02:00: the window opens
	eventually(t, schedule).Should(Equal(`{"open":true} next 2026-11-22T03:00:00Z`))
	eventually(t, backendOf(t, ns, "maintenance-page")).Should(Equal("maintenance"))
	// The change, then its flip summary (docs/behaviour.md, "History").
	eventually(t, func() int64 { return statusWrites() - before }).Should(Equal(int64(2)))

	quiet(30 * time.Minute)
	clk.Step(30 * time.Minute) // 03:00: it closes
	eventually(t, schedule).Should(Equal(`{"open":false} next 2026-11-28T19:00:00Z`))
	eventually(t, ingressOf(t, ns, "maintenance-page")).Should(BeNil())
	NewWithT(t).Expect(meta.FindStatusCondition(state.Status.Conditions, v1beta1.ConditionReady).Message).
		To(Equal("The schedule is closed until 2026-11-28T19:00:00Z"))
}

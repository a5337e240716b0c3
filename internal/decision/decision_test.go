package decision

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/match"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

func micro(t metav1.Time) *metav1.MicroTime { return &metav1.MicroTime{Time: t.Time} }

func TestActiveCondition(t *testing.T) {
	body := `{"enabled":true}`
	di := func(change func(*v1beta1.DynamicIngress)) *v1beta1.DynamicIngress {
		d := &v1beta1.DynamicIngress{
			ObjectMeta: metav1.ObjectMeta{Generation: 4},
			Spec:       v1beta1.DynamicIngressSpec{State: "flag", Expected: v1beta1.ExpectedResponse{StatusCode: "200", Body: &body}},
		}
		if change != nil {
			change(d)
		}
		return d
	}
	policy := func(p v1beta1.FailurePolicy) func(*v1beta1.DynamicIngress) {
		return func(d *v1beta1.DynamicIngress) { d.Spec.FailurePolicy = p }
	}
	// retain sets the Retain policy on a DynamicIngress whose Active
	// condition was status.
	retain := func(status metav1.ConditionStatus) func(*v1beta1.DynamicIngress) {
		return func(d *v1beta1.DynamicIngress) {
			d.Spec.FailurePolicy = v1beta1.FailurePolicyRetain
			d.Status.Conditions = []metav1.Condition{{Type: "Active", Status: status, Reason: "Matched"}}
		}
	}
	override := func(m v1beta1.Mode) func(*v1beta1.DynamicIngress) {
		return func(d *v1beta1.DynamicIngress) { d.Spec.Override = m }
	}
	state := func(code, body string) *v1beta1.DynamicIngressState {
		return &v1beta1.DynamicIngressState{ObjectMeta: metav1.ObjectMeta{Name: "flag"}, Status: v1beta1.DynamicIngressStateStatus{StatusCode: code, Body: body}}
	}
	tests := []struct {
		name  string
		di    *v1beta1.DynamicIngress
		state *v1beta1.DynamicIngressState
		// current is the mode the target is in now, nil when unknown.
		current *bool
		want    metav1.Condition
	}{
		{"missing state", di(nil), nil, nil, metav1.Condition{Status: "False", Reason: "StateNotFound",
			Message: `DynamicIngressState "flag" not found; spec.failurePolicy Passive selects passive mode`}},
		{"no response", di(nil), state("", ""), nil, metav1.Condition{Status: "False", Reason: "NoResponse",
			Message: `State "flag" has no response; spec.failurePolicy Passive selects passive mode`}},
		{"matched", di(nil), state("200", `{ "enabled": true }`), nil, metav1.Condition{Status: "True", Reason: "Matched", Message: `State "flag" responded 200 as expected`}},
		{"body differs", di(nil), state("200", `{"enabled":false}`), nil, metav1.Condition{Status: "False", Reason: "NotMatched",
			Message: `State "flag" responded 200, which does not match spec.expected: body does not match`}},
		{"code differs", di(nil), state("503", body), nil, metav1.Condition{Status: "False", Reason: "NotMatched",
			Message: `State "flag" responded 503, which does not match spec.expected: statusCode is "503", expected "200"`}},
		{"contains", di(func(d *v1beta1.DynamicIngress) { d.Spec.Expected.BodyMatch = v1beta1.BodyMatchContains }),
			state("200", `{"enabled":true,"since":"2026-11-22"}`), nil, metav1.Condition{Status: "True", Reason: "Matched", Message: `State "flag" responded 200 as expected`}},
		{"expression error is in the message", di(func(d *v1beta1.DynamicIngress) {
			d.Spec.Expected = v1beta1.ExpectedResponse{Expression: "response.json.killswitch.enabled"}
		}), state("200", `{"enabled":true}`), nil, metav1.Condition{Status: "False", Reason: "NotMatched",
			Message: `State "flag" responded 200, which does not match spec.expected: expression failed: no such key: killswitch`}},

		{"policy Active, no response", di(policy("Active")), state("", ""), nil, metav1.Condition{Status: "True", Reason: "NoResponse",
			Message: `State "flag" has no response; spec.failurePolicy Active selects active mode`}},
		{"policy Active, missing state", di(policy("Active")), nil, nil, metav1.Condition{Status: "True", Reason: "StateNotFound",
			Message: `DynamicIngressState "flag" not found; spec.failurePolicy Active selects active mode`}},
		{"policy Active does not apply to a response", di(policy("Active")), state("503", ""), nil, metav1.Condition{Status: "False", Reason: "NotMatched",
			Message: `State "flag" responded 503, which does not match spec.expected: statusCode is "503", expected "200"`}},
		{"Retain keeps active", di(retain("True")), state("", ""), nil, metav1.Condition{Status: "True", Reason: "NoResponse",
			Message: `State "flag" has no response; spec.failurePolicy Retain selects active mode`}},
		{"Retain keeps passive", di(retain("False")), nil, nil, metav1.Condition{Status: "False", Reason: "StateNotFound",
			Message: `DynamicIngressState "flag" not found; spec.failurePolicy Retain selects passive mode`}},
		// The status lags behind the target (statuses are written after a
		// flip's targets): Retain keeps the mode the target is in.
		{"Retain keeps the target's active mode over a lagging status", di(retain("False")), nil, ptr.To(true), metav1.Condition{Status: "True", Reason: "StateNotFound",
			Message: `DynamicIngressState "flag" not found; spec.failurePolicy Retain selects active mode`}},
		{"Retain keeps the target's passive mode over a lagging status", di(retain("True")), state("", ""), ptr.To(false), metav1.Condition{Status: "False", Reason: "NoResponse",
			Message: `State "flag" has no response; spec.failurePolicy Retain selects passive mode`}},
		{"Retain starts passive", di(policy("Retain")), state("", ""), nil, metav1.Condition{Status: "False", Reason: "NoResponse",
			Message: `State "flag" has no response; spec.failurePolicy Retain selects passive mode`}},

		{"override Active against a passive state", di(override("Active")), state("503", ""), nil, metav1.Condition{Status: "True", Reason: "Overridden",
			Message: `spec.override pins active mode; the state would select passive mode (State "flag" responded 503, which does not match spec.expected: statusCode is "503", expected "200")`}},
		{"override Passive against an active state", di(override("Passive")), state("200", body), nil, metav1.Condition{Status: "False", Reason: "Overridden",
			Message: `spec.override pins passive mode; the state would select active mode (State "flag" responded 200 as expected)`}},
		{"override with the state missing", di(override("Active")), nil, nil, metav1.Condition{Status: "True", Reason: "Overridden",
			Message: `spec.override pins active mode; the state would select passive mode (DynamicIngressState "flag" not found; spec.failurePolicy Passive selects passive mode)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.Type, tt.want.ObservedGeneration = "Active", 4
			if diff := cmp.Diff(tt.want, Active(tt.di, tt.state, tt.current)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestFixedStatus(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	state := &v1beta1.DynamicIngressState{
		ObjectMeta: metav1.ObjectMeta{Generation: 1},
		Spec:       v1beta1.DynamicIngressStateSpec{FixedResponse: &v1beta1.FixedResponse{Status: "200", Body: "ok"}},
	}
	want := v1beta1.DynamicIngressStateStatus{Mode: "Fixed", StatusCode: "200", Body: "ok", LastUpdateTime: micro(now), ObservedGeneration: 1,
		Conditions: []metav1.Condition{{Type: "Ready", Status: "True", Reason: "Fixed", Message: "The response is fixed in spec.fixedResponse", ObservedGeneration: 1}}}
	got := FixedStatus(state, now)
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime"), ignoreHistory); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// A second pass over the same spec changes nothing.
	state.Status = got
	later := metav1.NewTime(now.Add(time.Minute))
	if diff := cmp.Diff(got, FixedStatus(state, later), ignoreHistory); diff != "" {
		t.Errorf("recomputing an unchanged fixed state changed its status (-before +after):\n%s", diff)
	}
}

func TestScheduledStatus(t *testing.T) {
	at := func(s string) metav1.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return metav1.NewTime(tm)
	}
	weekly := &v1beta1.Schedule{TimeZone: "Asia/Tokyo", Windows: []v1beta1.ScheduleWindow{
		{Cron: "0 2 * * 0", Duration: &metav1.Duration{Duration: 2 * time.Hour}}}}
	oneOff := &v1beta1.Schedule{Windows: []v1beta1.ScheduleWindow{{Start: "2026-12-24T00:00:00+09:00", End: "2026-12-26T00:00:00+09:00"}}}
	state := func(s *v1beta1.Schedule, status v1beta1.DynamicIngressStateStatus) *v1beta1.DynamicIngressState {
		return &v1beta1.DynamicIngressState{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: v1beta1.DynamicIngressStateSpec{Schedule: s}, Status: status}
	}
	ready := func(status, reason, msg string) []metav1.Condition {
		return []metav1.Condition{{Type: "Ready", Status: metav1.ConditionStatus(status), Reason: reason, Message: msg, ObservedGeneration: 2}}
	}
	// 2026-11-22 is a Sunday; 02:00 in Tokyo is 17:00 UTC the day before.
	before, inside := at("2026-11-21T16:00:00Z"), at("2026-11-21T18:00:00Z")
	earlier := at("2026-11-01T00:00:00Z")
	tests := []struct {
		name     string
		state    *v1beta1.DynamicIngressState
		now      metav1.Time
		want     v1beta1.DynamicIngressStateStatus
		wantNext string
	}{
		{"closed before the window", state(weekly, v1beta1.DynamicIngressStateStatus{}), before, v1beta1.DynamicIngressStateStatus{
			ObservedGeneration: 2, Mode: "Schedule", StatusCode: "200", Body: `{"open":false}`, LastUpdateTime: micro(before),
			NextTransitionTime: ptr.To(at("2026-11-21T17:00:00Z")),
			Conditions:         ready("True", "Scheduled", "The schedule is closed until 2026-11-21T17:00:00Z")}, "2026-11-21T17:00:00Z"},
		{"open inside it; lastUpdateTime moves with the body", state(weekly, v1beta1.DynamicIngressStateStatus{StatusCode: "200", Body: `{"open":false}`, LastUpdateTime: micro(earlier)}), inside,
			v1beta1.DynamicIngressStateStatus{
				ObservedGeneration: 2, Mode: "Schedule", StatusCode: "200", Body: `{"open":true}`, LastUpdateTime: micro(inside),
				NextTransitionTime: ptr.To(at("2026-11-21T19:00:00Z")),
				Conditions:         ready("True", "Scheduled", "The schedule is open until 2026-11-21T19:00:00Z")}, "2026-11-21T19:00:00Z"},
		{"unchanged body keeps lastUpdateTime", state(weekly, v1beta1.DynamicIngressStateStatus{StatusCode: "200", Body: `{"open":true}`, LastUpdateTime: micro(earlier)}), inside,
			v1beta1.DynamicIngressStateStatus{
				ObservedGeneration: 2, Mode: "Schedule", StatusCode: "200", Body: `{"open":true}`, LastUpdateTime: micro(earlier),
				NextTransitionTime: ptr.To(at("2026-11-21T19:00:00Z")),
				Conditions:         ready("True", "Scheduled", "The schedule is open until 2026-11-21T19:00:00Z")}, "2026-11-21T19:00:00Z"},
		{"after the last one-off window: no transition ahead", state(oneOff, v1beta1.DynamicIngressStateStatus{NextTransitionTime: &earlier}), at("2027-01-01T00:00:00Z"),
			v1beta1.DynamicIngressStateStatus{
				ObservedGeneration: 2, Mode: "Schedule", StatusCode: "200", Body: `{"open":false}`, LastUpdateTime: micro(at("2027-01-01T00:00:00Z")),
				Conditions: ready("True", "Scheduled", "The schedule is closed; no window lies ahead")}, ""},
		{"invalid schedule: no response", state(&v1beta1.Schedule{TimeZone: "Mars/Olympus", Windows: weekly.Windows},
			v1beta1.DynamicIngressStateStatus{StatusCode: "200", Body: `{"open":true}`, LastUpdateTime: micro(earlier)}), before,
			v1beta1.DynamicIngressStateStatus{ObservedGeneration: 2, Mode: "Schedule", LastUpdateTime: micro(before),
				Conditions: ready("False", "InvalidSchedule", `spec.schedule is invalid: timeZone: "Mars/Olympus": unknown time zone: must be an IANA time zone name such as Asia/Tokyo`)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, next := ScheduledStatus(tt.state, tt.now)
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime"), ignoreHistory); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			gotNext := ""
			if !next.IsZero() {
				gotNext = next.UTC().Format(time.RFC3339)
			}
			if gotNext != tt.wantNext {
				t.Errorf("next boundary %q, want %q", gotNext, tt.wantNext)
			}
		})
	}
}

// TestSelected: what the state selects, override aside, is what Decide
// selects for the same switch without its override, Retain included.
func TestSelected(t *testing.T) {
	ingressTo := func(service string) *v1beta1.IngressVariant {
		return &v1beta1.IngressVariant{Template: v1beta1.IngressTemplate{Spec: networkingv1.IngressSpec{
			DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: service, Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}
	}
	sw := func(override v1beta1.Mode, policy v1beta1.FailurePolicy) *v1beta1.DynamicIngress {
		return &v1beta1.DynamicIngress{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "a", UID: "uid-a", Generation: 2},
			Spec: v1beta1.DynamicIngressSpec{State: "flag", Target: v1beta1.TargetReference{Name: "a"}, Override: override, FailurePolicy: policy,
				Expected: v1beta1.ExpectedResponse{StatusCode: "503"}, PassiveIngress: ingressTo("web"), ActiveIngress: ingressTo("sorry")},
			Status: v1beta1.SwitchStatus{Conditions: []metav1.Condition{{Type: v1beta1.ConditionActive, Status: metav1.ConditionFalse, Reason: "Matched"}}},
		}
	}
	live := func(s *v1beta1.DynamicIngress, active bool) client.Object {
		u, err := target.Render(target.Ingress{}, s, active)
		if err != nil {
			t.Fatal(err)
		}
		ing := &networkingv1.Ingress{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ing); err != nil {
			t.Fatal(err)
		}
		return ing
	}
	state := func(code string) *v1beta1.DynamicIngressState {
		return &v1beta1.DynamicIngressState{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "flag"}, Status: v1beta1.DynamicIngressStateStatus{StatusCode: code}}
	}
	tests := []struct {
		name     string
		override v1beta1.Mode
		policy   v1beta1.FailurePolicy
		state    *v1beta1.DynamicIngressState
		active   bool // the live target's mode
		want     metav1.ConditionStatus
	}{
		{"pinned passive, the state selects active", v1beta1.ModePassive, "", state("503"), false, "True"},
		{"pinned active, the state selects passive", v1beta1.ModeActive, "", state("200"), true, "False"},
		{"pinned passive, Retain keeps the target's active shape", v1beta1.ModePassive, v1beta1.FailurePolicyRetain, state(""), true, "True"},
		{"pinned active, Retain keeps the target's passive shape", v1beta1.ModeActive, v1beta1.FailurePolicyRetain, nil, false, "False"},
		{"no override: Selected is Decide", "", v1beta1.FailurePolicyRetain, state(""), true, "True"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pinned := sw(tt.override, tt.policy)
			liveTarget := live(pinned, tt.active)
			got := Selected(targetKind, pinned, tt.state, liveTarget)
			if got.Status != tt.want {
				t.Errorf("Selected = %s (%s), want %s", got.Status, got.Message, tt.want)
			}
			free := sw("", tt.policy)
			if want := Decide(targetKind, free, tt.state, liveTarget); got.Status != want.Status || got.Message != want.Message {
				t.Errorf("Selected = %s %q, Decide without the override = %s %q", got.Status, got.Message, want.Status, want.Message)
			}
		})
	}
}

var targetKind = target.Ingress{}

// TestActiveKnown: with the verdicts of expected expressions taken from
// what is known, a decision that needs an unknown verdict is pending; one
// decided before the expression (the status code differs) is not; a known
// verdict decides as an evaluation would.
func TestActiveKnown(t *testing.T) {
	const expr = `response.json.enabled == true`
	sw := &v1beta1.DynamicIngress{ObjectMeta: metav1.ObjectMeta{Generation: 2},
		Spec: v1beta1.DynamicIngressSpec{State: "flag", Expected: v1beta1.ExpectedResponse{StatusCode: "200", Expression: expr}}}
	state := func(code string) *v1beta1.DynamicIngressState {
		return &v1beta1.DynamicIngressState{ObjectMeta: metav1.ObjectMeta{Name: "flag"}, Status: v1beta1.DynamicIngressStateStatus{StatusCode: code, Body: `{"enabled":true}`}}
	}
	unknown := func(string, match.Response) (string, bool) { return "", false }
	holds := func(string, match.Response) (string, bool) { return "", true }
	fails := func(string, match.Response) (string, bool) { return "expression evaluated to false", true }
	for _, tt := range []struct {
		name        string
		state       *v1beta1.DynamicIngressState
		known       match.KnownVerdicts
		wantPending bool
		wantStatus  metav1.ConditionStatus
		wantReason  string
	}{
		{"verdict unknown", state("200"), unknown, true, "", ""},
		{"decided by the status code first", state("503"), unknown, false, metav1.ConditionFalse, v1beta1.ReasonNotMatched},
		{"no response", state(""), unknown, false, metav1.ConditionFalse, v1beta1.ReasonNoResponse},
		{"known to hold", state("200"), holds, false, metav1.ConditionTrue, v1beta1.ReasonMatched},
		{"known to fail", state("200"), fails, false, metav1.ConditionFalse, v1beta1.ReasonNotMatched},
	} {
		got, pending := ActiveKnown(sw, tt.state, nil, tt.known)
		if pending != tt.wantPending {
			t.Errorf("%s: pending = %v, want %v", tt.name, pending, tt.wantPending)
			continue
		}
		if !pending && (got.Status != tt.wantStatus || got.Reason != tt.wantReason) {
			t.Errorf("%s: %s/%s, want %s/%s (%s)", tt.name, got.Status, got.Reason, tt.wantStatus, tt.wantReason, got.Message)
		}
	}
}

// ignoreHistory leaves status.history to the tests of history.
var ignoreHistory = cmpopts.IgnoreFields(v1beta1.DynamicIngressStateStatus{}, "History")

package decision

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
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
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// A second pass over the same spec changes nothing.
	state.Status = got
	later := metav1.NewTime(now.Add(time.Minute))
	if diff := cmp.Diff(got, FixedStatus(state, later)); diff != "" {
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
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime")); diff != "" {
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

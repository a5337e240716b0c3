package controller

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/flip"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

func TestReadyCondition(t *testing.T) {
	di := &v1beta1.DynamicIngress{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
	di.Spec.State = "x"
	matched := metav1.Condition{Status: "True", Reason: "Matched"}
	missing := metav1.Condition{Status: "False", Reason: "StateNotFound"}
	notFound := &decision.Unfollowed{Reason: "StateNotFound", Message: `DynamicIngressState "x" not found`}
	notAdmitted := &decision.Unfollowed{Reason: "StateNotAdmitted", Message: `ClusterDynamicIngressState "g" does not admit namespace "shop"`}
	missingActive := metav1.Condition{Status: "True", Reason: "StateNotFound"}
	overridden := metav1.Condition{Status: "True", Reason: "Overridden"}
	tests := []struct {
		name   string
		why    *decision.Unfollowed
		active metav1.Condition
		target targetResult
		want   metav1.Condition
	}{
		{"synced", nil, matched, targetResult{reason: "Synced", message: "ok"}, metav1.Condition{Status: "True", Reason: "Synced", Message: "ok"}},
		{"conflict", nil, matched, targetResult{reason: "TargetConflict", message: "taken"}, metav1.Condition{Status: "False", Reason: "TargetConflict", Message: "taken"}},
		{"apply failed", nil, matched, targetResult{reason: "ApplyFailed", message: "boom"}, metav1.Condition{Status: "False", Reason: "ApplyFailed", Message: "boom"}},
		{"state missing, target synced to passive", notFound, missing, targetResult{reason: "Synced", message: "ok"},
			metav1.Condition{Status: "False", Reason: "StateNotFound", Message: `DynamicIngressState "x" not found; the target follows the passive template`}},
		{"state missing, policy Active", notFound, missingActive, targetResult{reason: "Synced", message: "ok"},
			metav1.Condition{Status: "False", Reason: "StateNotFound", Message: `DynamicIngressState "x" not found; the target follows the active template`}},
		{"state missing under an override: still not Ready", notFound, overridden, targetResult{reason: "Synced", message: "ok"},
			metav1.Condition{Status: "False", Reason: "StateNotFound", Message: `DynamicIngressState "x" not found; the target follows the active template`}},
		{"cluster state not admitted", notAdmitted, missing, targetResult{reason: "Synced", message: "ok"},
			metav1.Condition{Status: "False", Reason: "StateNotAdmitted", Message: `ClusterDynamicIngressState "g" does not admit namespace "shop"; the target follows the passive template`}},
		{"state missing and conflict: the conflict shows", notFound, missing, targetResult{reason: "TargetConflict", message: "taken"}, metav1.Condition{Status: "False", Reason: "TargetConflict", Message: "taken"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.Type, tt.want.ObservedGeneration = "Ready", 2
			if diff := cmp.Diff(tt.want, readyCondition(di, tt.why, tt.active, tt.target)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestProbedStatus(t *testing.T) {
	earlier := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(earlier.Add(time.Hour))
	withResp := v1beta1.DynamicIngressStateStatus{Mode: "Probe", StatusCode: "200", Body: "ok", LastUpdateTime: micro(earlier), ObservedGeneration: 3,
		Conditions: []metav1.Condition{{Type: "Ready", Status: "True", Reason: "ProbeSucceeded", Message: "The probe got HTTP 200", ObservedGeneration: 3, LastTransitionTime: earlier}}}
	ready := func(status, reason, msg string) []metav1.Condition {
		return []metav1.Condition{{Type: "Ready", Status: metav1.ConditionStatus(status), Reason: reason, Message: msg, ObservedGeneration: 3}}
	}
	tests := []struct {
		name   string
		status v1beta1.DynamicIngressStateStatus
		gen    int64
		obs    probe.Observation
		want   v1beta1.DynamicIngressStateStatus
	}{
		{
			name: "new state, not probed yet: Pending",
			gen:  3,
			want: v1beta1.DynamicIngressStateStatus{Mode: "Probe", ObservedGeneration: 3, Conditions: ready("Unknown", "Pending", "No probe has been done yet")},
		},
		{
			name:   "restarted manager, not probed yet: status kept as it is",
			status: withResp, gen: 3,
			want: withResp,
		},
		{
			name:   "spec changed, not probed yet: Pending, last response kept",
			status: withResp, gen: 4,
			want: v1beta1.DynamicIngressStateStatus{Mode: "Probe", StatusCode: "200", Body: "ok", LastUpdateTime: micro(earlier), ObservedGeneration: 4,
				Conditions: []metav1.Condition{{Type: "Ready", Status: "Unknown", Reason: "Pending", Message: "No probe has been done yet", ObservedGeneration: 4}}},
		},
		{
			name:   "same response: nothing moves",
			status: withResp, gen: 3,
			obs:  probe.Observation{Probed: true, Response: probe.Response{StatusCode: "200", Body: "ok"}},
			want: withResp,
		},
		{
			name:   "new response moves lastUpdateTime",
			status: withResp, gen: 3,
			obs: probe.Observation{Probed: true, Response: probe.Response{StatusCode: "503", Body: "down", Truncated: true}},
			want: v1beta1.DynamicIngressStateStatus{Mode: "Probe", StatusCode: "503", Body: "down", BodyTruncated: true, LastUpdateTime: micro(now), ObservedGeneration: 3,
				Conditions: ready("True", "ProbeSucceeded", "The probe got HTTP 503")},
		},
		{
			name:   "failure below threshold keeps the response",
			status: withResp, gen: 3,
			obs: probe.Observation{Probed: true, Err: "connection refused"},
			want: v1beta1.DynamicIngressStateStatus{Mode: "Probe", StatusCode: "200", Body: "ok", LastUpdateTime: micro(earlier), ObservedGeneration: 3,
				Conditions: ready("False", "ProbeFailed", "connection refused")},
		},
		{
			name:   "failure at threshold clears the response",
			status: withResp, gen: 3,
			obs: probe.Observation{Probed: true, Err: "connection refused", ThresholdReached: true},
			want: v1beta1.DynamicIngressStateStatus{Mode: "Probe", LastUpdateTime: micro(now), ObservedGeneration: 3,
				Conditions: ready("False", "ProbeFailed", "connection refused")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := &v1beta1.DynamicIngressState{ObjectMeta: metav1.ObjectMeta{Generation: tt.gen}, Status: tt.status}
			got := probedStatus(state, tt.obs, now)
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime"), ignoreHistory); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestProbeSpec(t *testing.T) {
	d := func(s string) *metav1.Duration { v, _ := time.ParseDuration(s); return &metav1.Duration{Duration: v} }
	tests := []struct {
		name string
		in   v1beta1.HTTPProbe
		want probe.Spec
	}{
		{"defaults", v1beta1.HTTPProbe{URL: "http://x"},
			probe.Spec{Request: probe.Request{Method: "GET", URL: "http://x", Headers: []probe.Header{}, Timeout: 5 * time.Second, Tenant: "shop"}, Interval: 30 * time.Second, FailureThreshold: 3, SuccessThreshold: 1}},
		{"timeout defaults to the interval when shorter than 5s", v1beta1.HTTPProbe{URL: "http://x", Interval: d("2s")},
			probe.Spec{Request: probe.Request{Method: "GET", URL: "http://x", Headers: []probe.Header{}, Timeout: 2 * time.Second, Tenant: "shop"}, Interval: 2 * time.Second, FailureThreshold: 3, SuccessThreshold: 1}},
		{"everything set", v1beta1.HTTPProbe{URL: "https://x", Method: "POST", Interval: d("1m"), Timeout: d("10s"), FailureThreshold: ptr.To[int32](1), SuccessThreshold: ptr.To[int32](4),
			Headers: []v1beta1.HTTPHeader{{Name: "Accept", Value: "application/json"}}},
			probe.Spec{Request: probe.Request{Method: "POST", URL: "https://x", Headers: []probe.Header{{Name: "Accept", Value: "application/json"}}, Timeout: 10 * time.Second, Tenant: "shop"}, Interval: time.Minute, FailureThreshold: 1, SuccessThreshold: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, probeSpec("shop", "shop", &tt.in)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestTransitionEvents(t *testing.T) {
	cond := func(status, reason, msg string) *metav1.Condition {
		return &metav1.Condition{Status: metav1.ConditionStatus(status), Reason: reason, Message: msg}
	}
	matched := *cond("True", "Matched", `State "s" responded 200 as expected`)
	notMatched := *cond("False", "NotMatched", `State "s" responded 503, which does not match spec.expected`)
	synced := *cond("True", "Synced", "ok")
	conflict := *cond("False", "TargetConflict", "taken")
	tests := []struct {
		name                  string
		prevActive, prevReady *metav1.Condition
		active, ready         metav1.Condition
		want                  []flip.Event
	}{
		{name: "first status: no switch", active: matched, ready: synced},
		{name: "first status with a conflict warns", active: matched, ready: conflict,
			want: []flip.Event{{Type: "Warning", Reason: "TargetConflict", Action: "Sync", Note: "taken"}}},
		{name: "to active", prevActive: &notMatched, prevReady: &synced, active: matched, ready: synced,
			want: []flip.Event{{Type: "Normal", Reason: "Switched", Action: "SwitchToActive", Note: `Switched to active mode: State "s" responded 200 as expected`}}},
		{name: "to passive", prevActive: &matched, prevReady: &synced, active: notMatched, ready: synced,
			want: []flip.Event{{Type: "Normal", Reason: "Switched", Action: "SwitchToPassive", Note: `Switched to passive mode: State "s" responded 503, which does not match spec.expected`}}},
		{name: "same mode, new message: nothing", prevActive: cond("False", "NoResponse", "x"), prevReady: &synced, active: notMatched, ready: synced},
		{name: "conflict again: no repeat", prevActive: &matched, prevReady: &conflict, active: matched, ready: conflict},
		{name: "conflict to apply failed warns again", prevActive: &matched, prevReady: &conflict, active: matched, ready: *cond("False", "ApplyFailed", "boom"),
			want: []flip.Event{{Type: "Warning", Reason: "ApplyFailed", Action: "Sync", Note: "boom"}}},
		{name: "override starts in the same mode: no switch", prevActive: &matched, prevReady: &synced, active: *cond("True", "Overridden", "pinned"), ready: synced,
			want: []flip.Event{{Type: "Normal", Reason: "Overridden", Action: "Override", Note: "pinned"}}},
		{name: "override starts and switches", prevActive: &notMatched, prevReady: &synced, active: *cond("True", "Overridden", "pinned"), ready: synced,
			want: []flip.Event{{Type: "Normal", Reason: "Switched", Action: "SwitchToActive", Note: "Switched to active mode: pinned"}, {Type: "Normal", Reason: "Overridden", Action: "Override", Note: "pinned"}}},
		{name: "override stays: nothing", prevActive: cond("True", "Overridden", "pinned"), prevReady: &synced, active: *cond("True", "Overridden", "pinned, new reason"), ready: synced},
		{name: "override removed", prevActive: cond("True", "Overridden", "pinned"), prevReady: &synced, active: notMatched, ready: synced,
			want: []flip.Event{{Type: "Normal", Reason: "Switched", Action: "SwitchToPassive", Note: `Switched to passive mode: State "s" responded 503, which does not match spec.expected`},
				{Type: "Normal", Reason: "OverrideRemoved", Action: "Override", Note: `spec.override removed; following the state again: State "s" responded 503, which does not match spec.expected`}}},
		{name: "created with an override", active: *cond("False", "Overridden", "pinned"), ready: synced,
			want: []flip.Event{{Type: "Normal", Reason: "Overridden", Action: "Override", Note: "pinned"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := transitionEvents(tt.prevActive, tt.prevReady, tt.active, tt.ready, false)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(flip.Event{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestStateTransitionEvents(t *testing.T) {
	failed := &metav1.Condition{Status: "False", Reason: "ProbeFailed", Message: "connection refused"}
	succeeded := &metav1.Condition{Status: "True", Reason: "ProbeSucceeded"}
	pending := &metav1.Condition{Status: "Unknown", Reason: "Pending"}
	tests := []struct {
		name        string
		prev, ready *metav1.Condition
		want        []flip.Event
	}{
		{name: "first failure", prev: succeeded, ready: failed, want: []flip.Event{{Type: "Warning", Reason: "ProbeFailed", Action: "Probe", Note: "connection refused"}}},
		{name: "failure from pending", prev: pending, ready: failed, want: []flip.Event{{Type: "Warning", Reason: "ProbeFailed", Action: "Probe", Note: "connection refused"}}},
		{name: "failure on a new state", ready: failed, want: []flip.Event{{Type: "Warning", Reason: "ProbeFailed", Action: "Probe", Note: "connection refused"}}},
		{name: "still failing, new message: no repeat", prev: failed, ready: &metav1.Condition{Status: "False", Reason: "ProbeFailed", Message: "timed out after 5s"}},
		{name: "recovered", prev: failed, ready: succeeded},
		{name: "no condition", prev: failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, stateTransitionEvents(tt.prev, tt.ready), cmp.AllowUnexported(flip.Event{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestFirstClaimant(t *testing.T) {
	at := func(sec int) metav1.Time { return metav1.NewTime(time.Date(2026, 11, 22, 0, 0, sec, 0, time.UTC)) }
	di := func(name, target string, created metav1.Time) v1beta1.DynamicIngress {
		return v1beta1.DynamicIngress{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID(name), CreationTimestamp: created},
			Spec:       v1beta1.DynamicIngressSpec{Target: v1beta1.TargetReference{Name: target}},
		}
	}
	me := di("me", "storefront", at(10))
	tests := []struct {
		name string
		list []v1beta1.DynamicIngress
		want string
	}{
		{"alone", []v1beta1.DynamicIngress{me}, ""},
		{"another target", []v1beta1.DynamicIngress{me, di("a", "checkout", at(1))}, ""},
		{"a younger one yields to me", []v1beta1.DynamicIngress{me, di("b", "storefront", at(11))}, ""},
		{"an older one comes first", []v1beta1.DynamicIngress{me, di("b", "storefront", at(9))}, "b"},
		{"the oldest is named", []v1beta1.DynamicIngress{di("c", "storefront", at(5)), me, di("b", "storefront", at(1))}, "b"},
		{"same second: by name", []v1beta1.DynamicIngress{me, di("ma", "storefront", at(10)), di("zz", "storefront", at(10))}, "ma"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var list []target.Switch
			for i := range tt.list {
				list = append(list, &tt.list[i])
			}
			if got := firstClaimant(list, &me); got != tt.want {
				t.Errorf("firstClaimant = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStatusWriteFailedCondition(t *testing.T) {
	got := statusWriteFailedCondition(3, errors.New("etcdserver: request is too large"))
	want := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, ObservedGeneration: 3, Reason: "StatusWriteFailed",
		Message: "The current response could not be written to the status: etcdserver: request is too large"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestBoundaryTimers(t *testing.T) {
	start := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	var fired []string
	var mu sync.Mutex
	b := newBoundaryTimers(clk, func(key string) { mu.Lock(); fired = append(fired, key); mu.Unlock() })
	firedKeys := func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), fired...) }

	b.set("ns/a", start.Add(time.Minute))
	b.set("ns/b", start.Add(2*time.Minute))
	b.set("ns/a", start.Add(time.Minute)) // the same time: one timer still
	b.set("ns/c", start.Add(time.Minute))
	b.remove("ns/c")
	clk.Step(59 * time.Second)
	if got := firedKeys(); len(got) != 0 {
		t.Fatalf("fired before the boundary: %v", got)
	}
	clk.Step(time.Second)
	if diff := cmp.Diff([]string{"ns/a"}, firedKeys()); diff != "" {
		t.Errorf("at the first boundary (-want +got):\n%s", diff)
	}
	// The reconcile it woke ran early and found the same boundary: it is
	// set again, and fires.
	b.set("ns/a", start.Add(time.Minute))
	clk.Step(time.Minute)
	if diff := cmp.Diff([]string{"ns/a", "ns/a", "ns/b"}, firedKeys(), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("at the second boundary (-want +got):\n%s", diff)
	}
}

// micro is t as the MicroTime of status.lastUpdateTime.
func micro(t metav1.Time) *metav1.MicroTime { return &metav1.MicroTime{Time: t.Time} }

func TestSwitchLatency(t *testing.T) {
	changed := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	now := changed.Add(1500 * time.Millisecond)
	state := &v1beta1.DynamicIngressState{Status: v1beta1.DynamicIngressStateStatus{LastUpdateTime: &metav1.MicroTime{Time: changed}}}
	matched := metav1.Condition{Type: "Active", Status: "True", Reason: "Matched"}
	tests := []struct {
		name      string
		state     *v1beta1.DynamicIngressState
		active    metav1.Condition
		want      time.Duration
		wantKnown bool
	}{
		{"a switch the response caused", state, matched, 1500 * time.Millisecond, true},
		{"an override has no moment", state, metav1.Condition{Type: "Active", Status: "True", Reason: "Overridden"}, 0, false},
		{"a missing state has no moment", nil, metav1.Condition{Type: "Active", Status: "True", Reason: "StateNotFound"}, 0, false},
		{"a state never updated has no moment", &v1beta1.DynamicIngressState{}, matched, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, known := switchLatency(tt.state, tt.active, now)
			if got != tt.want || known != tt.wantKnown {
				t.Errorf("switchLatency = %v, %v; want %v, %v", got, known, tt.want, tt.wantKnown)
			}
		})
	}
}

func TestSwitchedByWrite(t *testing.T) {
	withActive := func(status metav1.ConditionStatus) *v1beta1.DynamicIngress {
		di := &v1beta1.DynamicIngress{}
		if status != "" {
			di.Status.Conditions = []metav1.Condition{{Type: "Active", Status: status, Reason: "NotMatched"}}
		}
		return di
	}
	active := metav1.Condition{Type: "Active", Status: "True", Reason: "Matched"}
	yes, no := ptr.To(true), ptr.To(false)
	tests := []struct {
		name string
		sw   *v1beta1.DynamicIngress
		from *bool
		want bool
	}{
		{"passive target written active", withActive("False"), no, true},
		{"the first mode at creation is no switch", withActive(""), no, false},
		{"a target already active is no switch", withActive("False"), yes, false},
		// A flap: the status still says active (it was never written
		// passive), but the target was switched passive in between.
		{"a flap back before the status was written", withActive("True"), no, true},
		{"the target's shape does not tell: the status does", withActive("False"), nil, true},
		{"the status shows the mode already", withActive("True"), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := switchedByWrite(tt.sw, tt.from, active); got != tt.want {
				t.Errorf("switchedByWrite = %v, want %v", got, tt.want)
			}
		})
	}
}

// ignoreHistory leaves status.history to the tests of history.
var ignoreHistory = cmpopts.IgnoreFields(v1beta1.DynamicIngressStateStatus{}, "History")

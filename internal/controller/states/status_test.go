package states

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/flip"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
)

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

// ignoreHistory leaves status.history to the tests of history.
var ignoreHistory = cmpopts.IgnoreFields(v1beta1.DynamicIngressStateStatus{}, "History")

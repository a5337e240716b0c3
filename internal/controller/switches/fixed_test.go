package switches

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

func TestFollowedState(t *testing.T) {
	earlier := &metav1.MicroTime{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	seen := &metav1.MicroTime{Time: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}
	fixed := func(code, body string, status v1beta1.DynamicIngressStateStatus) *v1beta1.DynamicIngressState {
		s := builders.FixedState("ns", "flag", code, body).Obj()
		s.Status = status
		return s
	}
	probed := builders.ProbedState("ns", "flag", "http://192.0.2.1/").Obj()
	probed.Status = v1beta1.DynamicIngressStateStatus{StatusCode: "503", Body: "down", LastUpdateTime: earlier}
	tests := []struct {
		name  string
		state *v1beta1.DynamicIngressState
		// want is the status the switches decide from; same: state itself
		// is returned.
		want v1beta1.DynamicIngressStateStatus
		same bool
	}{
		{"missing state", nil, v1beta1.DynamicIngressStateStatus{}, true},
		{"probed state: its status", probed, probed.Status, true},
		{"fixed state whose status shows its spec", fixed("200", "ok", v1beta1.DynamicIngressStateStatus{StatusCode: "200", Body: "ok", LastUpdateTime: earlier}),
			v1beta1.DynamicIngressStateStatus{StatusCode: "200", Body: "ok", LastUpdateTime: earlier}, true},
		{"fixed state edited, status not written yet: the spec's response, seen when the edit was",
			fixed("200", "ok", v1beta1.DynamicIngressStateStatus{StatusCode: "503", Body: "ok", LastUpdateTime: earlier, Mode: v1beta1.StateModeFixed}),
			v1beta1.DynamicIngressStateStatus{StatusCode: "200", Body: "ok", Mode: v1beta1.StateModeFixed, LastUpdateTime: seen}, false},
		{"new fixed state without a status", fixed("503", "", v1beta1.DynamicIngressStateStatus{}),
			v1beta1.DynamicIngressStateStatus{StatusCode: "503", LastUpdateTime: seen}, false},
		{"probed state turned fixed", fixed("200", "", v1beta1.DynamicIngressStateStatus{StatusCode: "200", Body: "long", BodyTruncated: true, LastUpdateTime: earlier}),
			v1beta1.DynamicIngressStateStatus{StatusCode: "200", LastUpdateTime: seen}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before *v1beta1.DynamicIngressState
			if tt.state != nil {
				before = tt.state.DeepCopy()
			}
			got := decision.Followed(tt.state, seen)
			if tt.state == nil {
				if got != nil {
					t.Fatalf("decision.Followed(nil, seen) = %v, want nil", got)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got.Status); diff != "" {
				t.Errorf("status decided from (-want +got):\n%s", diff)
			}
			if (got == tt.state) != tt.same {
				t.Errorf("returned the state itself: %v, want %v", got == tt.state, tt.same)
			}
			if diff := cmp.Diff(before, tt.state); diff != "" {
				t.Errorf("the cached state was changed (-before +after):\n%s", diff)
			}
		})
	}
}

func TestFixedChanges(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f := newFixedChanges(clk)
	state := builders.FixedState("ns", "flag", "200", "").Obj()
	state.Status.StatusCode = "503"
	at := func() string {
		if t := f.at(state); t != nil {
			return t.UTC().Format(time.RFC3339)
		}
		return "unknown"
	}
	if got := at(); got != "unknown" {
		t.Errorf("before the watch delivered the edit: %s, want unknown", got)
	}
	f.note(state)
	clk.SetTime(clk.Now().Add(time.Minute))
	f.note(state) // the same edit delivered again (a resync) keeps the first sighting
	if got := at(); got != "2026-01-01T00:00:00Z" {
		t.Errorf("after the edit: %s, want when it was first seen", got)
	}
	state.Spec.FixedResponse.Status = "302"
	if got := at(); got != "unknown" {
		t.Errorf("another response than the one seen: %s, want unknown", got)
	}
	f.note(state)
	if got := at(); got != "2026-01-01T00:01:00Z" {
		t.Errorf("after the second edit: %s, want its own sighting", got)
	}
	state.Status.StatusCode = "302"
	f.note(state)
	if got := at(); got != "unknown" {
		t.Errorf("once the status shows it: %s, want unknown (the status's lastUpdateTime counts)", got)
	}
}

func TestResponseChangedFollowsFixedSpecs(t *testing.T) {
	withStatus := func(s *v1beta1.DynamicIngressState, code string) *v1beta1.DynamicIngressState {
		s.Status.StatusCode = code
		return s
	}
	tests := []struct {
		name        string
		old, new    *v1beta1.DynamicIngressState
		wantEnqueue bool
	}{
		{"fixed spec edited: enqueued at once",
			withStatus(builders.FixedState("ns", "s", "503", "").Obj(), "503"), withStatus(builders.FixedState("ns", "s", "200", "").Obj(), "503"), true},
		{"the fixed state's status catching up: not again",
			withStatus(builders.FixedState("ns", "s", "200", "").Obj(), "503"), withStatus(builders.FixedState("ns", "s", "200", "").Obj(), "200"), false},
		{"probed state's status changed",
			withStatus(builders.ProbedState("ns", "s", "http://192.0.2.1/").Obj(), "503"), withStatus(builders.ProbedState("ns", "s", "http://192.0.2.1/").Obj(), "200"), true},
		{"probed state's spec changed alone",
			withStatus(builders.ProbedState("ns", "s", "http://192.0.2.1/").Obj(), "200"), withStatus(builders.ProbedState("ns", "s", "http://192.0.2.2/").Obj(), "200"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := responseChanged().Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new}); got != tt.wantEnqueue {
				t.Errorf("responseChanged = %v, want %v", got, tt.wantEnqueue)
			}
		})
	}
}

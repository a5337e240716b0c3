package switches

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/flip"
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
			got := transitionEvents(tt.prevActive, tt.prevReady, tt.active, tt.ready, false, nil)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(flip.Event{})); diff != "" {
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

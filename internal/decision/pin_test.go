package decision

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

func TestPinPhase(t *testing.T) {
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(d)} }
	tests := []struct {
		name          string
		spec          v1beta1.SwitchSpec
		needsApproval bool
		approvedBy    string
		want          v1beta1.OverridePhase
	}{
		{name: "not pinned", want: ""},
		{name: "not pinned, an end left over", spec: v1beta1.SwitchSpec{OverrideUntil: at(-time.Hour)}, want: ""},
		{name: "pinned for good", spec: v1beta1.SwitchSpec{Override: v1beta1.ModeActive}, want: v1beta1.OverridePhaseInEffect},
		{name: "pinned until later", spec: v1beta1.SwitchSpec{Override: v1beta1.ModeActive, OverrideUntil: at(time.Nanosecond)}, want: v1beta1.OverridePhaseInEffect},
		{name: "the end is now", spec: v1beta1.SwitchSpec{Override: v1beta1.ModeActive, OverrideUntil: at(0)}, want: v1beta1.OverridePhaseExpired},
		{name: "the end has passed", spec: v1beta1.SwitchSpec{Override: v1beta1.ModePassive, OverrideUntil: at(-time.Hour)}, want: v1beta1.OverridePhaseExpired},
		{name: "awaiting approval", spec: v1beta1.SwitchSpec{Override: v1beta1.ModePassive}, needsApproval: true, want: v1beta1.OverridePhasePendingApproval},
		{name: "approved", spec: v1beta1.SwitchSpec{Override: v1beta1.ModePassive}, needsApproval: true, approvedBy: "bob", want: v1beta1.OverridePhaseInEffect},
		{name: "expired before approval", spec: v1beta1.SwitchSpec{Override: v1beta1.ModePassive, OverrideUntil: at(-time.Second)}, needsApproval: true,
			want: v1beta1.OverridePhaseExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PinPhase(tt.spec, tt.needsApproval, tt.approvedBy, now); got != tt.want {
				t.Errorf("PinPhase = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPinOf(t *testing.T) {
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	until := metav1.NewTime(now.Add(90 * time.Second))
	sw := builders.DynamicIngress("shop", "web").State("s").ExpectCode("503").Obj()
	sw.Spec.Override, sw.Spec.OverrideUntil, sw.Spec.OverrideReason = v1beta1.ModeActive, &until, "INC-7"
	sw.Annotations = map[string]string{v1beta1.OverrideByAnnotation: "alice", v1beta1.OverrideAtAnnotation: "2026-12-02T02:59:00.250000Z"}

	got := PinOf(sw, PinPolicy{}, now)
	want := Pin{Status: &v1beta1.OverrideStatus{Mode: v1beta1.ModeActive, By: "alice", At: &metav1.Time{Time: now.Add(-time.Minute)},
		Until: &until, Reason: "INC-7", Phase: v1beta1.OverridePhaseInEffect, Summary: "Active"}, EndsIn: 90 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("in effect (-want +got):\n%s", diff)
	}
	got = PinOf(sw, PinPolicy{}, until.Time)
	want.Status.Phase, want.Status.Summary, want.EndsIn = v1beta1.OverridePhaseExpired, "Active (Expired)", 0
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("expired (-want +got):\n%s", diff)
	}
	if got.Holds() {
		t.Error("an expired pin holds")
	}
	if spec := Unpinned(sw).SwitchSpec(); spec.Override != "" || spec.OverrideUntil != nil {
		t.Errorf("Unpinned keeps the pin: %+v", spec)
	}
	if PinOf(builders.DynamicIngress("shop", "web").Obj(), PinPolicy{}, now) != (Pin{}) {
		t.Error("a switch without override has a pin")
	}
}

func TestPinOfApproval(t *testing.T) {
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	until := metav1.NewTime(now.Add(time.Hour))
	needs := PinPolicy{Approval: map[v1beta1.Mode]string{v1beta1.ModePassive: `DynamicIngressState "killswitch"`}}
	audit := map[string]string{v1beta1.OverrideByAnnotation: "alice", v1beta1.OverrideAtAnnotation: "2026-12-02T02:59:00.000000Z"}
	approved := func(by string) map[string]string {
		out := map[string]string{v1beta1.OverrideApprovedByAnnotation: by, v1beta1.OverrideApprovedAtAnnotation: "2026-12-02T02:59:30.000000Z"}
		for k, v := range audit {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name        string
		mode        v1beta1.Mode
		until       *metav1.Time
		policy      PinPolicy
		annotations map[string]string
		wantPhase   v1beta1.OverridePhase
		wantBy      string
		wantAwaits  string
		wantEndsIn  time.Duration
	}{
		{name: "no policy: in effect", mode: v1beta1.ModePassive, annotations: audit, wantPhase: v1beta1.OverridePhaseInEffect},
		{name: "another mode needs approval", mode: v1beta1.ModeActive, policy: needs, annotations: audit, wantPhase: v1beta1.OverridePhaseInEffect},
		{name: "awaits approval", mode: v1beta1.ModePassive, until: &until, policy: needs, annotations: audit, wantPhase: v1beta1.OverridePhasePendingApproval,
			wantAwaits: `the pin to Passive mode by alice awaits approval (overridePolicy.approval of DynamicIngressState "killswitch")`, wantEndsIn: time.Hour},
		{name: "approved", mode: v1beta1.ModePassive, until: &until, policy: needs, annotations: approved("bob"), wantPhase: v1beta1.OverridePhaseInEffect,
			wantBy: "bob", wantEndsIn: time.Hour},
		{name: "approved by its author: not approved", mode: v1beta1.ModePassive, policy: needs, annotations: approved("alice"),
			wantPhase: v1beta1.OverridePhasePendingApproval, wantAwaits: `the pin to Passive mode by alice awaits approval (overridePolicy.approval of DynamicIngressState "killswitch")`},
		{name: "an approver without a time: not approved", mode: v1beta1.ModePassive, policy: needs,
			annotations: map[string]string{v1beta1.OverrideByAnnotation: "alice", v1beta1.OverrideApprovedByAnnotation: "bob"},
			wantPhase:   v1beta1.OverridePhasePendingApproval, wantAwaits: `the pin to Passive mode by alice awaits approval (overridePolicy.approval of DynamicIngressState "killswitch")`},
		{name: "the approval needed no more: in effect, approver kept", mode: v1beta1.ModePassive, annotations: approved("bob"), wantPhase: v1beta1.OverridePhaseInEffect,
			wantBy: "bob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sw := builders.DynamicIngress("shop", "web").State("s").ExpectCode("503").Obj()
			sw.Spec.Override, sw.Spec.OverrideUntil, sw.Annotations = tt.mode, tt.until, tt.annotations
			pin := PinOf(sw, tt.policy, now)
			if pin.Status.Phase != tt.wantPhase || pin.Status.ApprovedBy != tt.wantBy || pin.AwaitsApproval() != tt.wantAwaits || pin.EndsIn != tt.wantEndsIn {
				t.Errorf("PinOf = phase %q, approvedBy %q, awaits %q, ends in %s; want %q, %q, %q, %s", pin.Status.Phase, pin.Status.ApprovedBy,
					pin.AwaitsApproval(), pin.EndsIn, tt.wantPhase, tt.wantBy, tt.wantAwaits, tt.wantEndsIn)
			}
			if got, want := pin.Holds(), tt.wantPhase == v1beta1.OverridePhaseInEffect; got != want {
				t.Errorf("Holds = %t, want %t", got, want)
			}
		})
	}
}

func TestKeepInEffect(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 2, 2, 59, 0, 0, time.UTC))
	pending := Pin{Status: &v1beta1.OverrideStatus{Mode: v1beta1.ModePassive, By: "alice", At: &at, Reason: "INC-1",
		Phase: v1beta1.OverridePhasePendingApproval, Summary: "Passive (PendingApproval)"}, AwaitsApprovalOf: "s"}
	shown := func(change func(*v1beta1.OverrideStatus)) *v1beta1.OverrideStatus {
		s := pending.Status.DeepCopy()
		s.Phase, s.Summary = v1beta1.OverridePhaseInEffect, "Passive"
		if change != nil {
			change(s)
		}
		return s
	}
	tests := []struct {
		name  string
		shown *v1beta1.OverrideStatus
		keep  bool
	}{
		{name: "no status yet: it waits", shown: nil},
		{name: "the same pin was in effect: it stays", shown: shown(nil), keep: true},
		{name: "the same pin was pending", shown: shown(func(s *v1beta1.OverrideStatus) { s.Phase = v1beta1.OverridePhasePendingApproval })},
		{name: "another reason", shown: shown(func(s *v1beta1.OverrideStatus) { s.Reason = "INC-2" })},
		{name: "set again later", shown: shown(func(s *v1beta1.OverrideStatus) { s.At = &metav1.Time{Time: at.Add(-time.Second)} })},
		{name: "another end", shown: shown(func(s *v1beta1.OverrideStatus) { s.Until = &at })},
		{name: "another mode", shown: shown(func(s *v1beta1.OverrideStatus) { s.Mode = v1beta1.ModeActive })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := KeepInEffect(pending, tt.shown)
			if got.Holds() != tt.keep || (got.Grandfathered == "s") != tt.keep || (got.AwaitsApproval() == "") != tt.keep {
				t.Errorf("KeepInEffect = holds %t, grandfathered %q, awaits %q; want kept %t", got.Holds(), got.Grandfathered, got.AwaitsApproval(), tt.keep)
			}
		})
	}
	if pending.Status.Phase != v1beta1.OverridePhasePendingApproval {
		t.Error("KeepInEffect changed the pin it was given")
	}
}

func TestApprovalRefusal(t *testing.T) {
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(d)} }
	needs := PinPolicy{Approval: map[v1beta1.Mode]string{v1beta1.ModePassive: `DynamicIngressState "killswitch"`}}
	passive := v1beta1.SwitchSpec{Override: v1beta1.ModePassive, OverrideUntil: at(time.Hour)}
	tests := []struct {
		name   string
		spec   v1beta1.SwitchSpec
		policy PinPolicy
		user   string
		want   string
	}{
		{name: "another user approves a pending pin", spec: passive, policy: needs, user: "bob"},
		{name: "no pin", policy: needs, user: "bob", want: "there is no pin to approve: spec.override is not set"},
		{name: "the pin ended", spec: v1beta1.SwitchSpec{Override: v1beta1.ModePassive, OverrideUntil: at(0)}, policy: needs, user: "bob",
			want: "the pin ended at 2026-12-02T03:00:00Z (spec.overrideUntil): there is nothing to approve"},
		{name: "no approval asked for the mode", spec: v1beta1.SwitchSpec{Override: v1beta1.ModeActive}, policy: needs, user: "bob",
			want: "the pin to Active mode needs no approval: no state the switch follows names Active in overridePolicy.approval.modes"},
		{name: "no policy", spec: passive, user: "bob",
			want: "the pin to Passive mode needs no approval: no state the switch follows names Passive in overridePolicy.approval.modes"},
		{name: "its author", spec: passive, policy: needs, user: "alice",
			want: `"alice" set the pin and cannot approve it: a second person must (overridePolicy.approval of DynamicIngressState "killswitch")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ApprovalRefusal(tt.spec, tt.policy, "alice", tt.user, now); got != tt.want {
				t.Errorf("ApprovalRefusal = %q, want %q", got, tt.want)
			}
		})
	}
}

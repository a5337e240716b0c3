package decision

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

func TestMergePolicies(t *testing.T) {
	d := func(x time.Duration) *metav1.Duration { return &metav1.Duration{Duration: x} }
	tests := []struct {
		name     string
		policies []NamedPolicy
		want     PinPolicy
	}{
		{name: "none"},
		{name: "a state without a policy", policies: []NamedPolicy{{State: "a"}}},
		{name: "one policy", policies: []NamedPolicy{{State: "a", Policy: &v1beta1.OverridePolicy{MaxDuration: d(4 * time.Hour), RequireReason: true}}},
			want: PinPolicy{MaxDuration: 4 * time.Hour, MaxDurationFrom: "a", RequireReason: true, RequireReasonFrom: "a"}},
		{name: "the shortest maxDuration, any requireReason", policies: []NamedPolicy{
			{State: "a", Policy: &v1beta1.OverridePolicy{MaxDuration: d(4 * time.Hour)}},
			{State: "b"},
			{State: "c", Policy: &v1beta1.OverridePolicy{MaxDuration: d(30 * time.Minute)}},
			{State: "d", Policy: &v1beta1.OverridePolicy{MaxDuration: d(time.Hour), RequireReason: true}},
			{State: "e", Policy: &v1beta1.OverridePolicy{RequireReason: true}},
		}, want: PinPolicy{MaxDuration: 30 * time.Minute, MaxDurationFrom: "c", RequireReason: true, RequireReasonFrom: "d"}},
		{name: "the union of the approval modes, each from the first state naming it", policies: []NamedPolicy{
			{State: "a", Policy: &v1beta1.OverridePolicy{Approval: &v1beta1.OverrideApproval{Modes: []v1beta1.Mode{v1beta1.ModePassive}}}},
			{State: "b", Policy: &v1beta1.OverridePolicy{RequireReason: true}},
			{State: "c", Policy: &v1beta1.OverridePolicy{Approval: &v1beta1.OverrideApproval{Modes: []v1beta1.Mode{v1beta1.ModeActive, v1beta1.ModePassive}}}},
		}, want: PinPolicy{RequireReason: true, RequireReasonFrom: "b", Approval: map[v1beta1.Mode]string{v1beta1.ModePassive: "a", v1beta1.ModeActive: "c"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, MergePolicies(tt.policies)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPolicyBreaks(t *testing.T) {
	at := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	until := func(x time.Duration) *metav1.Time { return &metav1.Time{Time: at.Add(x)} }
	strict := PinPolicy{MaxDuration: 4 * time.Hour, MaxDurationFrom: `DynamicIngressState "killswitch"`, RequireReason: true, RequireReasonFrom: `ClusterDynamicIngressState "global"`}
	tests := []struct {
		name   string
		policy PinPolicy
		spec   v1beta1.SwitchSpec
		want   map[string]string
	}{
		{name: "no pin", policy: strict},
		{name: "no policy", spec: v1beta1.SwitchSpec{Override: v1beta1.ModeActive}, want: map[string]string{}},
		{name: "within the policy", policy: strict,
			spec: v1beta1.SwitchSpec{Override: v1beta1.ModeActive, OverrideUntil: until(4 * time.Hour), OverrideReason: "INC-1"}, want: map[string]string{}},
		{name: "no end, no reason", policy: strict, spec: v1beta1.SwitchSpec{Override: v1beta1.ModePassive, OverrideReason: "  "}, want: map[string]string{
			"overrideUntil":  `DynamicIngressState "killswitch" has overridePolicy.maxDuration 4h: a pin must carry overrideUntil, at most 4h ahead`,
			"overrideReason": `ClusterDynamicIngressState "global" has overridePolicy.requireReason: a pin must say why in overrideReason`,
		}},
		{name: "too long", policy: PinPolicy{MaxDuration: 90 * time.Minute, MaxDurationFrom: `DynamicIngressState "s"`},
			spec: v1beta1.SwitchSpec{Override: v1beta1.ModeActive, OverrideUntil: until(91 * time.Minute)}, want: map[string]string{
				"overrideUntil": `DynamicIngressState "s" has overridePolicy.maxDuration 1h30m: a pin must end at most 1h30m ahead, by 2026-12-02T02:30:00Z`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.policy.Breaks(tt.spec, at)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

package v1beta1

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

func TestValidatePin(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(d)} }
	pin := func(mode v1beta1.Mode, until *metav1.Time, reason string) v1beta1.SwitchSpec {
		return v1beta1.SwitchSpec{Override: mode, OverrideUntil: until, OverrideReason: reason}
	}
	tests := []struct {
		name string
		old  *v1beta1.SwitchSpec
		sw   v1beta1.SwitchSpec
		want []string
	}{
		{name: "no pin", sw: pin("", nil, "")},
		{name: "a pin without an end", sw: pin(v1beta1.ModeActive, nil, "INC-1")},
		{name: "a pin to the future", sw: pin(v1beta1.ModeActive, at(time.Hour), "")},
		{name: "until without override", sw: pin("", at(time.Hour), ""),
			want: []string{`spec.overrideUntil: Invalid value: "2026-12-02T11:00:00Z": overrideUntil requires override`}},
		{name: "until now, on create", sw: pin(v1beta1.ModePassive, at(0), ""),
			want: []string{`spec.overrideUntil: Invalid value: "2026-12-02T10:00:00Z": must be in the future (now is 2026-12-02T10:00:00Z): a pin that ends before it starts pins nothing`}},
		{name: "until in the past, changed", old: new(pin(v1beta1.ModeActive, at(time.Hour), "")), sw: pin(v1beta1.ModeActive, at(-time.Minute), ""),
			want: []string{`spec.overrideUntil: Invalid value: "2026-12-02T09:59:00Z": must be in the future (now is 2026-12-02T10:00:00Z): a pin that ends before it starts pins nothing`}},
		{name: "an expired pin whose reason changes", old: new(pin(v1beta1.ModeActive, at(-time.Minute), "")), sw: pin(v1beta1.ModeActive, at(-time.Minute), "INC-2"),
			want: []string{`spec.overrideUntil: Invalid value: "2026-12-02T09:59:00Z": must be in the future (now is 2026-12-02T10:00:00Z): a pin that ends before it starts pins nothing`}},
		{name: "an expired pin left alone", old: new(pin(v1beta1.ModeActive, at(-time.Minute), "INC-1")), sw: pin(v1beta1.ModeActive, at(-time.Minute), "INC-1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range validatePin(tt.old, tt.sw, now) {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

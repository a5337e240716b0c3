package v1beta1

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// pinChanged says whether an update sets, changes or removes the pin:
// spec.override, spec.overrideUntil or spec.overrideReason. old is nil on
// create, where any of them set is a change.
func pinChanged(old *v1beta1.SwitchSpec, sw v1beta1.SwitchSpec) bool {
	if old == nil {
		return sw.Override != "" || sw.OverrideUntil != nil || sw.OverrideReason != ""
	}
	return old.Override != sw.Override || old.OverrideReason != sw.OverrideReason ||
		!equality.Semantic.DeepEqual(old.OverrideUntil, sw.OverrideUntil)
}

// validatePin refuses spec.overrideUntil without spec.override, and, when
// the pin is set or changed (old nil on create), an overrideUntil that is
// not after now: a pin that ends before it starts is a mistake, most often
// a time zone's (docs/behaviour.md, "Pins that end"). A pin that has
// expired and is left alone stays valid: editing something else of the
// switch is not refused for it.
func validatePin(old *v1beta1.SwitchSpec, sw v1beta1.SwitchSpec, now time.Time) field.ErrorList {
	path := field.NewPath("spec", "overrideUntil")
	if sw.OverrideUntil == nil {
		return nil
	}
	until := sw.OverrideUntil.UTC().Format(time.RFC3339)
	if sw.Override == "" {
		return field.ErrorList{field.Invalid(path, until, "overrideUntil requires override")}
	}
	if pinChanged(old, sw) && !sw.OverrideUntil.After(now) {
		return field.ErrorList{field.Invalid(path, until, "must be in the future (now is "+now.UTC().Format(time.RFC3339)+"): a pin that ends before it starts pins nothing")}
	}
	return nil
}

package v1beta1

import (
	"slices"
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

// pinRemade says whether an update makes the pin anew: changes it
// (pinChanged), or changes the states a pinned switch follows. Following
// other states while pinned is a new pin as far as their override
// policies go: it is held to them at admission, its audit and any approval
// are redone, and a pin in effect under the states before does not carry
// over (docs/behaviour.md, "Approval").
func pinRemade(old *v1beta1.SwitchSpec, sw v1beta1.SwitchSpec) bool {
	if pinChanged(old, sw) {
		return true
	}
	return sw.Override != "" && !slices.Equal(followedStates(*old), followedStates(sw))
}

// followedStates are the states a switch follows, in its entries' order.
func followedStates(spec v1beta1.SwitchSpec) []v1beta1.StateReference {
	entries := spec.Entries()
	out := make([]v1beta1.StateReference, len(entries))
	for i, e := range entries {
		out[i] = e.State
	}
	return out
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

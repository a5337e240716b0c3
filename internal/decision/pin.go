package decision

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// Pin is where a switch's spec.override stands at one instant
// (docs/behaviour.md, "Pins that end").
type Pin struct {
	// Status is status.override: nil when the switch is not pinned.
	Status *v1beta1.OverrideStatus
	// EndsIn is how long until an in-effect pin's overrideUntil; 0 when
	// it has none, or the pin is not in effect.
	EndsIn time.Duration
}

// PinPhase is the phase of a pin at now: "" without spec.override;
// Expired once now reaches overrideUntil; PendingApproval while a pin that
// needs approval (needsApproval) has none (approvedBy empty); InEffect
// otherwise. Expiry comes first: a pin that ended needs no approval.
func PinPhase(spec v1beta1.SwitchSpec, needsApproval bool, approvedBy string, now time.Time) v1beta1.OverridePhase {
	switch {
	case spec.Override == "":
		return ""
	case spec.OverrideUntil != nil && !now.Before(spec.OverrideUntil.Time):
		return v1beta1.OverridePhaseExpired
	case needsApproval && approvedBy == "":
		return v1beta1.OverridePhasePendingApproval
	}
	return v1beta1.OverridePhaseInEffect
}

// PinOf is sw's pin at now, with who set it and when from the override
// audit annotations. No mode needs approval yet.
func PinOf(sw target.Switch, now time.Time) Pin {
	spec := sw.SwitchSpec()
	phase := PinPhase(spec, false, "", now)
	if phase == "" {
		return Pin{}
	}
	annotations := sw.GetAnnotations()
	status := &v1beta1.OverrideStatus{Mode: spec.Override, By: annotations[v1beta1.OverrideByAnnotation],
		Until: spec.OverrideUntil, Reason: spec.OverrideReason, Phase: phase, Summary: pinSummary(spec.Override, phase)}
	if at, err := time.Parse(v1beta1.OverrideAtFormat, annotations[v1beta1.OverrideAtAnnotation]); err == nil {
		// As the status holds it (to the second), or every reconcile
		// would find it changed.
		at := metav1.NewTime(at).Rfc3339Copy()
		status.At = &at
	}
	pin := Pin{Status: status}
	if phase == v1beta1.OverridePhaseInEffect && spec.OverrideUntil != nil {
		pin.EndsIn = spec.OverrideUntil.Sub(now)
	}
	return pin
}

// pinSummary is what the OVERRIDE column shows: the mode, and the phase
// when the pin is not in effect.
func pinSummary(mode v1beta1.Mode, phase v1beta1.OverridePhase) string {
	if phase == v1beta1.OverridePhaseInEffect {
		return string(mode)
	}
	return string(mode) + " (" + string(phase) + ")"
}

// Holds reports whether the pin decides the switch's mode.
func (p Pin) Holds() bool {
	return p.Status != nil && p.Status.Phase == v1beta1.OverridePhaseInEffect
}

// Unpinned is sw as the decisions read it when its pin does not hold: its
// spec without override, so that it follows its state. Pass it to the
// decision functions only: it is not the object to write.
func Unpinned(sw target.Switch) target.Switch { return unpinned{sw} }

type unpinned struct{ target.Switch }

// Underlying is the switch object (target.Underlying).
func (u unpinned) Underlying() target.Switch { return u.Switch }

func (u unpinned) SwitchSpec() v1beta1.SwitchSpec {
	spec := u.Switch.SwitchSpec()
	spec.Override, spec.OverrideUntil, spec.OverrideReason = "", nil, ""
	return spec
}

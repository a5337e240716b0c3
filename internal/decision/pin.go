package decision

import (
	"fmt"
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
	// EndsIn is how long until a pin's overrideUntil while it is in
	// effect or awaits approval; 0 when it has none, or it has expired.
	EndsIn time.Duration
	// AwaitsApprovalOf names the state whose override policy the pending
	// pin waits for approval under; "" unless PendingApproval.
	AwaitsApprovalOf string
	// Grandfathered names the state whose policy asks for an approval the
	// pin, in effect before it did, does not have (KeepInEffect).
	Grandfathered string
}

// KeepInEffect is pin as it holds for a switch whose status (shown, its
// status.override) says the same pin was in effect already: a pin made
// before a followed state's policy asked for approval stays in effect,
// as a pin made before any policy does (the Ready message names the
// policy it breaks: Grandfathered). Any other pin is returned as it is.
func KeepInEffect(pin Pin, shown *v1beta1.OverrideStatus) Pin {
	if pin.Status == nil || pin.Status.Phase != v1beta1.OverridePhasePendingApproval || !samePin(pin.Status, shown) ||
		shown.Phase != v1beta1.OverridePhaseInEffect {
		return pin
	}
	status := *pin.Status
	status.Phase, status.Summary = v1beta1.OverridePhaseInEffect, pinSummary(status.Mode, v1beta1.OverridePhaseInEffect)
	pin.Status, pin.Grandfathered, pin.AwaitsApprovalOf = &status, pin.AwaitsApprovalOf, ""
	return pin
}

// samePin says whether a and b are the status of the same pin: its mode,
// when it was set, its end and its reason (times to the second, as the
// status keeps them).
func samePin(a, b *v1beta1.OverrideStatus) bool {
	if a == nil || b == nil {
		return false
	}
	second := func(t *metav1.Time) int64 {
		if t == nil {
			return -1
		}
		return t.Unix()
	}
	return a.Mode == b.Mode && a.Reason == b.Reason && a.By == b.By && second(a.At) == second(b.At) && second(a.Until) == second(b.Until)
}

// ApprovedBy is the approver the override-approved-by annotation names:
// "" when it is missing, or carries no time in override-approved-at (a
// value only the defaulting webhook writes together).
func ApprovedBy(annotations map[string]string) string {
	by := annotations[v1beta1.OverrideApprovedByAnnotation]
	if _, err := time.Parse(v1beta1.OverrideAtFormat, annotations[v1beta1.OverrideApprovedAtAnnotation]); err != nil {
		return ""
	}
	return by
}

// AwaitsApproval is the phrase the Active condition's message adds for a
// pin that waits for approval.
func (p Pin) AwaitsApproval() string {
	if p.Status == nil || p.Status.Phase != v1beta1.OverridePhasePendingApproval {
		return ""
	}
	return fmt.Sprintf("the pin to %s mode by %s awaits approval (overridePolicy.approval of %s)", p.Status.Mode, orSomeone(p.Status.By), p.AwaitsApprovalOf)
}

// orSomeone is a user's name for a message, "someone" when unknown.
func orSomeone(user string) string {
	if user == "" {
		return "someone"
	}
	return user
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

// PinOf is sw's pin at now under policy (the merged override policy of
// the states it follows), with who set it and when from the override audit
// annotations, and who approved it from the approval annotations.
func PinOf(sw target.Switch, policy PinPolicy, now time.Time) Pin {
	spec := sw.SwitchSpec()
	annotations := sw.GetAnnotations()
	approvedBy := ApprovedBy(annotations)
	if approvedBy == annotations[v1beta1.OverrideByAnnotation] {
		// No one approves their own pin (admission refuses it too).
		approvedBy = ""
	}
	needsApproval := spec.Override != "" && policy.NeedsApproval(spec.Override) != ""
	phase := PinPhase(spec, needsApproval, approvedBy, now)
	if phase == "" {
		return Pin{}
	}
	status := &v1beta1.OverrideStatus{Mode: spec.Override, By: annotations[v1beta1.OverrideByAnnotation],
		Until: spec.OverrideUntil, Reason: spec.OverrideReason, Phase: phase, Summary: pinSummary(spec.Override, phase)}
	if phase != v1beta1.OverridePhasePendingApproval {
		// Approved: said also when the policy no longer asks for it.
		status.ApprovedBy = approvedBy
	}

	if at, err := time.Parse(v1beta1.OverrideAtFormat, annotations[v1beta1.OverrideAtAnnotation]); err == nil {
		// As the status holds it (to the second), or every reconcile
		// would find it changed.
		at := metav1.NewTime(at).Rfc3339Copy()
		status.At = &at
	}
	pin := Pin{Status: status}
	if phase == v1beta1.OverridePhasePendingApproval {
		pin.AwaitsApprovalOf = policy.NeedsApproval(spec.Override)
	}
	if phase != v1beta1.OverridePhaseExpired && spec.OverrideUntil != nil {
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

// ApprovalRefusal is why an approval by user of the pin in spec is
// refused before the user's permission is asked, "" when it is not: there
// is no pin, it has ended (at now), policy (the followed states' merged
// policy) asks no approval for its mode, or user is its author (the
// override-by annotation). docs/behaviour.md, "Approval".
func ApprovalRefusal(spec v1beta1.SwitchSpec, policy PinPolicy, author, user string, now time.Time) string {
	switch {
	case spec.Override == "":
		return "there is no pin to approve: spec.override is not set"
	case spec.OverrideUntil != nil && !now.Before(spec.OverrideUntil.Time):
		return fmt.Sprintf("the pin ended at %s (spec.overrideUntil): there is nothing to approve", spec.OverrideUntil.UTC().Format(time.RFC3339))
	case policy.NeedsApproval(spec.Override) == "":
		return fmt.Sprintf("the pin to %s mode needs no approval: no state the switch follows names %s in overridePolicy.approval.modes", spec.Override, spec.Override)
	case author == user:
		return fmt.Sprintf("%q set the pin and cannot approve it: a second person must (overridePolicy.approval of %s)", user, policy.NeedsApproval(spec.Override))
	}
	return ""
}

package controller

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// targetResult is what syncing the target came to.
type targetResult struct {
	reason  string // Synced, TargetConflict or ApplyFailed
	message string
	// from is the mode the target was in before a write, nil when its
	// shape did not tell or nothing was written.
	from *bool
}

// readyCondition says whether the target is what the selected template says.
// A state that is missing or not followed (why, nil when the switch follows
// its state) makes it False even though the target follows a known
// template: the switch points at nothing it may follow and needs a look.
// An override does not hide it.
func readyCondition(sw target.Switch, why *decision.Unfollowed, active metav1.Condition, result targetResult) metav1.Condition {
	cond := metav1.Condition{Type: v1beta1.ConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: sw.GetGeneration(),
		Reason: result.reason, Message: result.message}
	switch {
	case result.reason != v1beta1.ReasonSynced:
	case why != nil:
		cond.Reason = why.Reason
		cond.Message = fmt.Sprintf("%s; the target follows the %s template",
			why.Message, decision.ModeName(active.Status == metav1.ConditionTrue))
	default:
		cond.Status = metav1.ConditionTrue
	}
	return cond
}

// eventRecord is one event to record about a DynamicIngress.
type eventRecord struct {
	eventType, reason, action, note string
}

// transitionEvents are the events of a status change (docs/behaviour.md):
// Normal Switched when Active flips (not when it is first set) and the
// switch was not announced already when its target was written (announced),
// Normal Overridden and OverrideRemoved when spec.override starts and stops
// deciding, and a Warning named after Ready's reason when Ready turns False
// for a new reason.
func transitionEvents(prevActive, prevReady *metav1.Condition, active, ready metav1.Condition, announced bool) []eventRecord {
	var out []eventRecord
	if prevActive != nil && prevActive.Status != active.Status && !announced {
		out = append(out, switchedEvent(active))
	}
	overridden := func(c *metav1.Condition) bool { return c != nil && c.Reason == v1beta1.ReasonOverridden }
	switch {
	case overridden(&active) && !overridden(prevActive):
		out = append(out, eventRecord{corev1.EventTypeNormal, v1beta1.EventReasonOverridden, "Override", active.Message})
	case overridden(prevActive) && !overridden(&active):
		out = append(out, eventRecord{corev1.EventTypeNormal, v1beta1.EventReasonOverrideRemoved, "Override",
			"spec.override removed; following the state again: " + active.Message})
	}
	if ready.Status != metav1.ConditionTrue && (prevReady == nil || prevReady.Reason != ready.Reason) {
		out = append(out, eventRecord{corev1.EventTypeWarning, ready.Reason, "Sync", ready.Message})
	}
	return out
}

// switchedByWrite says whether a target write that left the target in the
// mode of active changed its mode, and so is a switch to announce. from is
// the mode the target was in before the write, nil when its shape did not
// tell; the status's Active condition says it then. A switch's first mode
// (no Active condition yet) is not a switch.
func switchedByWrite(sw target.Switch, from *bool, active metav1.Condition) bool {
	prev := meta.FindStatusCondition(sw.SwitchStatus().Conditions, v1beta1.ConditionActive)
	if prev == nil {
		return false
	}
	was := prev.Status == metav1.ConditionTrue
	if from != nil {
		was = *from
	}
	return was != (active.Status == metav1.ConditionTrue)
}

// switchedEvent is the Switched event of a switch to the mode of active.
// Its action names the mode: the events API folds events of one object
// with the same reason and action into one series, so a switch and the
// switch back are two events, not one event seen twice.
func switchedEvent(active metav1.Condition) eventRecord {
	isActive := active.Status == metav1.ConditionTrue
	action := "SwitchToPassive"
	if isActive {
		action = "SwitchToActive"
	}
	return eventRecord{corev1.EventTypeNormal, v1beta1.EventReasonSwitched, action,
		fmt.Sprintf("Switched to %s mode: %s", decision.ModeName(isActive), active.Message)}
}

// firstClaimant names the switch of list, other than sw, that names the
// same target and came first (created earlier; by name on a tie), so that
// of two switches with one target exactly one acts on it. "" when sw is the
// first.
func firstClaimant(list []target.Switch, sw target.Switch) string {
	var first target.Switch
	for _, o := range list {
		if o.GetUID() == sw.GetUID() || target.Key(o) != target.Key(sw) {
			continue
		}
		if claimsBefore(o, sw) && (first == nil || claimsBefore(o, first)) {
			first = o
		}
	}
	if first == nil {
		return ""
	}
	return first.GetName()
}

// claimsBefore says whether a was created before b (by name on a tie).
func claimsBefore(a, b target.Switch) bool {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	return a.GetName() < b.GetName()
}

// switchLatency is how long a switch took from the moment the state's
// response changed (its status.lastUpdateTime) until now, when the target
// has been written. It is known only for a switch that the response caused:
// an override, or a failure policy acting on a missing state, has no such
// moment.
func switchLatency(state *v1beta1.DynamicIngressState, active metav1.Condition, now time.Time) (time.Duration, bool) {
	if state == nil || state.Status.LastUpdateTime == nil {
		return 0, false
	}
	switch active.Reason {
	case v1beta1.ReasonMatched, v1beta1.ReasonNotMatched, v1beta1.ReasonNoResponse:
		return now.Sub(state.Status.LastUpdateTime.Time), true
	}
	return 0, false
}

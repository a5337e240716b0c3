package switches

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/trace"
	"strings"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/flip"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/regions"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/served"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

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

// pinBreaks is the message of a Ready condition whose switch holds a pin
// that breaks the override policy of a state it follows (a policy added or
// tightened after the pin was made: admission holds new pins to it), ""
// when it breaks none. The pin stays in effect.
func pinBreaks(spec v1beta1.SwitchSpec, policy decision.PinPolicy, pin decision.Pin, now time.Time) string {
	at := now
	if pin.Status.At != nil {
		at = pin.Status.At.Time
	}
	breaks := policy.Breaks(spec, at)
	var out []string
	for _, field := range []string{"overrideUntil", "overrideReason"} {
		if msg, ok := breaks[field]; ok {
			out = append(out, msg)
		}
	}
	if pin.Grandfathered != "" {
		out = append(out, fmt.Sprintf("%s has overridePolicy.approval for %s: a pin to %s mode needs a second person's approval", pin.Grandfathered, spec.Override, spec.Override))
	}
	if len(out) == 0 {
		return ""
	}
	return "The pin, made before the policy, breaks it and stays in effect: " + strings.Join(out, "; ")
}

// pinPolicy is the override policy a switch's pin is held to: the
// strictest of the policies of the states it follows that exist.
func pinPolicy(spec v1beta1.SwitchSpec, f followed) decision.PinPolicy {
	var policies []decision.NamedPolicy
	if f.entries == nil {
		if f.state != nil {
			policies = append(policies, decision.NamedPolicy{State: spec.State.String(), Policy: f.state.Spec.OverridePolicy})
		}
	} else {
		list := spec.Entries()
		for i, e := range f.entries {
			if e.State != nil && i < len(list) {
				policies = append(policies, decision.NamedPolicy{State: list[i].State.String(), Policy: e.State.Spec.OverridePolicy})
			}
		}
	}
	return decision.MergePolicies(policies)
}

// transitionEvents are the events of a status change (docs/behaviour.md):
// Normal Switched when Active flips (not when it is first set) and the
// switch was not announced already when its target was written (announced),
// Normal Overridden and OverrideRemoved when spec.override starts and stops
// deciding, and a Warning named after Ready's reason when Ready turns False
// for a new reason.
func transitionEvents(prevActive, prevReady *metav1.Condition, active, ready metav1.Condition, announced bool, expired *v1beta1.OverrideStatus) []flip.Event {
	var out []flip.Event
	if prevActive != nil && prevActive.Status != active.Status && !announced {
		out = append(out, switchedEvent(active))
	}
	overridden := func(c *metav1.Condition) bool { return c != nil && c.Reason == v1beta1.ReasonOverridden }
	switch {
	case overridden(&active) && !overridden(prevActive):
		out = append(out, flip.Event{Type: corev1.EventTypeNormal, Reason: v1beta1.EventReasonOverridden, Action: "Override", Note: active.Message})
	case expired != nil:
		out = append(out, flip.Event{Type: corev1.EventTypeNormal, Reason: v1beta1.EventReasonOverrideExpired, Action: "Override",
			Note: fmt.Sprintf("The pin to %s mode ended at %s (spec.overrideUntil); following the state again: %s",
				expired.Mode, expired.Until.UTC().Format(time.RFC3339), active.Message)})
	case overridden(prevActive) && !overridden(&active):
		out = append(out, flip.Event{Type: corev1.EventTypeNormal, Reason: v1beta1.EventReasonOverrideRemoved, Action: "Override", Note: "spec.override removed; following the state again: " + active.Message})
	}
	if ready.Status != metav1.ConditionTrue && (prevReady == nil || prevReady.Reason != ready.Reason) {
		out = append(out, flip.Event{Type: corev1.EventTypeWarning, Reason: ready.Reason, Action: "Sync", Note: ready.Message})
	}
	return out
}

// pinExpired is the pin after, when it turned Expired since before: the
// OverrideExpired event is recorded once, also for a pin that ended while
// no manager ran.
func pinExpired(before, after *v1beta1.OverrideStatus) *v1beta1.OverrideStatus {
	if after == nil || after.Phase != v1beta1.OverridePhaseExpired || after.Until == nil {
		return nil
	}
	if before != nil && before.Phase == v1beta1.OverridePhaseExpired {
		return nil
	}
	return after
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
func switchedEvent(active metav1.Condition) flip.Event {
	isActive := active.Status == metav1.ConditionTrue
	action := "SwitchToPassive"
	if isActive {
		action = "SwitchToActive"
	}
	return flip.Event{Type: corev1.EventTypeNormal, Reason: v1beta1.EventReasonSwitched, Action: action, Note: fmt.Sprintf("Switched to %s mode: %s", decision.ModeName(isActive), active.Message)}
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

// nextStatus is the switch's status with both conditions set, what the
// STATE column shows and each entry's verdict (status.states, for a list),
// nil when that is the status it has.
func nextStatus(sw target.Switch, active, ready metav1.Condition, entries []v1beta1.EntryStatus, view served.View, pin *v1beta1.OverrideStatus) *v1beta1.SwitchStatus {
	before := sw.SwitchStatus()
	// sw is the cache's own object: the new status is a copy.
	status := before.DeepCopy()
	meta.SetStatusCondition(&status.Conditions, active)
	meta.SetStatusCondition(&status.Conditions, ready)
	status.ObservedGeneration = sw.GetGeneration()
	status.State = sw.SwitchSpec().Summary()
	status.States = entries
	if view.Cond != nil {
		meta.SetStatusCondition(&status.Conditions, *view.Cond)
	} else {
		meta.RemoveStatusCondition(&status.Conditions, v1beta1.ConditionServed)
	}
	status.Served = view.Status
	status.Override = pin
	if equality.Semantic.DeepEqual(before, status) {
		return nil
	}
	return status
}

// writeStatus writes status (nothing when nil) and records events for the
// transitions. It reports whether the status it wrote is a switch between
// active and passive that was not announced already when the target was
// written (announced).
func (r *Reconciler) writeStatus(ctx context.Context, sw target.Switch, status *v1beta1.SwitchStatus, announced bool) (bool, error) {
	if status == nil {
		return false, nil
	}
	before := sw.SwitchStatus()
	patch, err := statusMergePatch(before, status)
	if err != nil {
		return false, err
	}
	var rv string
	trace.WithRegion(ctx, regions.SwitchStatus, func() {
		rv, err = r.metadata.PatchStatus(ctx, v1beta1.GroupVersion.WithKind(r.Kind.SwitchKind()), client.ObjectKeyFromObject(sw), patch)
	})
	if err != nil {
		return false, client.IgnoreNotFound(err)
	}
	r.writes.WroteVersion(sw, client.ObjectKeyFromObject(sw), rv)

	prevActive := meta.FindStatusCondition(before.Conditions, v1beta1.ConditionActive)
	prevReady := meta.FindStatusCondition(before.Conditions, v1beta1.ConditionReady)
	active := meta.FindStatusCondition(status.Conditions, v1beta1.ConditionActive)
	ready := meta.FindStatusCondition(status.Conditions, v1beta1.ConditionReady)
	for _, e := range transitionEvents(prevActive, prevReady, *active, *ready, announced, pinExpired(before.Override, status.Override)) {
		r.event(ctx, sw, e)
	}
	return prevActive != nil && prevActive.Status != active.Status && !announced, nil
}

// statusMergePatch is the JSON merge patch that turns the status before
// into after: what client.MergeFrom would send for a change of the status
// alone, without encoding the rest of the object twice.
func statusMergePatch(before, after *v1beta1.SwitchStatus) ([]byte, error) {
	from, err := json.Marshal(before)
	if err != nil {
		return nil, err
	}
	to, err := json.Marshal(after)
	if err != nil {
		return nil, err
	}
	diff, err := jsonpatch.CreateMergePatch(from, to)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]json.RawMessage{"status": diff})
}

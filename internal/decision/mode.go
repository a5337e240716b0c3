// Package decision is what the operator decides, as pure functions on
// values: the mode a switch's state selects (matching, failure policy,
// override) and the response a fixed or schedule state gives at a moment.
// The manager's reconcilers and the kubectl dynamic plugin both call it, so
// a preview cannot disagree with what the operator does
// (docs/behaviour.md, docs/kubectl-dynamic.md).
package decision

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/match"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// Active decides the mode (docs/behaviour.md, "Deciding the
// mode"): spec.override pins it; otherwise the state's response is compared
// with spec.expected, and when the state gives no answer spec.failurePolicy
// says which mode follows. state is nil when it does not exist. current is
// the mode the target is in now, nil when unknown (see retainedMode).
func Active(sw target.Switch, state *v1beta1.DynamicIngressState, current *bool) metav1.Condition {
	return overridden(sw, followState(sw, state, current, nil))
}

// ActiveKnown is Active with expected expressions' verdicts taken from
// known (match.EvaluateKnown): pending is true, and the condition
// meaningless, when the verdict the decision needs is not known yet.
//
// A switch that spec.override pins never waits: the pinned mode does not
// depend on the verdict, which the condition's message calls not known yet.
func ActiveKnown(sw target.Switch, state *v1beta1.DynamicIngressState, current *bool, known match.KnownVerdicts) (cond metav1.Condition, pending bool) {
	cond = followState(sw, state, current, known)
	if cond.Reason == reasonPending && sw.SwitchSpec().Override == "" {
		return cond, true
	}
	return overridden(sw, cond), false
}

// reasonPending marks a decision that waits for an expression's verdict.
const reasonPending = ReasonVerdictPending

// ReasonVerdictPending is the reason of an anyOf/allOf entry in
// status.states whose expression's verdict is being evaluated while the
// other entries decided the mode; the engine shows the entry's previous
// verdict instead when it has one.
const ReasonVerdictPending = "VerdictPending"

// ActiveUnfollowed is the Active condition of a switch that has no state
// to follow (why): the mode its failurePolicy selects, current as in
// Active, unless spec.override pins one.
func ActiveUnfollowed(sw target.Switch, why Unfollowed, current *bool) metav1.Condition {
	return overridden(sw, unfollowed(sw, why, current))
}

// unfollowed is the Active condition failurePolicy selects, override aside.
func unfollowed(sw target.Switch, why Unfollowed, current *bool) metav1.Condition {
	cond := metav1.Condition{Type: v1beta1.ConditionActive, ObservedGeneration: sw.GetGeneration(), Reason: why.Reason,
		Status: noAnswerStatus(sw, current)}
	cond.Message = fmt.Sprintf("%s; %s", why.Message, policyPhrase(sw.SwitchSpec(), cond.Status))
	return cond
}

// NotFound is why a switch whose state does not exist follows none.
func NotFound(ref v1beta1.StateReference) Unfollowed {
	return Unfollowed{Reason: v1beta1.ReasonStateNotFound, Message: ref.String() + " not found"}
}

// NamespaceNotKnown is why a switch in namespace does not follow the cluster
// state name while the manager does not know the namespace's labels yet:
// no grant admits a namespace whose labels are not known.
func NamespaceNotKnown(name, namespace string) Unfollowed {
	return Unfollowed{Reason: v1beta1.ReasonStateNotAdmitted,
		Message: fmt.Sprintf("ClusterDynamicIngressState %q does not admit namespace %q yet: the manager does not know the namespace's labels yet", name, namespace)}
}

// ClusterStatesNotWatched is why a switch that follows a cluster state
// follows none when the manager does not watch cluster states.
func ClusterStatesNotWatched(ref v1beta1.StateReference) Unfollowed {
	return Unfollowed{Reason: v1beta1.ReasonClusterStatesNotWatched,
		Message: ref.String() + " is not followed: this manager does not watch ClusterDynamicIngressStates (it runs in namespaced mode without the chart's clusterStates.followInNamespacedMode, docs/install.md)"}
}

// overridden is cond as spec.override changes it.
func overridden(sw target.Switch, cond metav1.Condition) metav1.Condition {
	if override := sw.SwitchSpec().Override; override != "" {
		would := cond
		cond.Status = ConditionStatus(override == v1beta1.ModeActive)
		cond.Reason = v1beta1.ReasonOverridden
		if would.Reason == reasonPending {
			cond.Message = fmt.Sprintf("spec.override pins %s mode; which mode the state would select is not known yet (an expected expression's verdict is being evaluated)",
				ModeName(cond.Status == metav1.ConditionTrue))
			return cond
		}
		cond.Message = fmt.Sprintf("spec.override pins %s mode; the state would select %s mode (%s)",
			ModeName(cond.Status == metav1.ConditionTrue), ModeName(would.Status == metav1.ConditionTrue), would.Message)
	}
	return cond
}

// followState is the Active condition the state selects.
func followState(sw target.Switch, state *v1beta1.DynamicIngressState, current *bool, known match.KnownVerdicts) metav1.Condition {
	spec := sw.SwitchSpec()
	cond := metav1.Condition{Type: v1beta1.ConditionActive, Status: metav1.ConditionFalse, ObservedGeneration: sw.GetGeneration()}
	if state == nil {
		return unfollowed(sw, NotFound(spec.State), current)
	}
	want := match.Expected{StatusCode: spec.Expected.StatusCode, Body: spec.Expected.Body,
		BodyMatch: match.BodyMatch(spec.Expected.BodyMatch), Expression: spec.Expected.Expression}
	got := match.Response{StatusCode: state.Status.StatusCode, Body: state.Status.Body}
	result := match.EvaluateKnown(want, got, known)
	switch result.Outcome {
	case match.Pending:
		cond.Reason = reasonPending
	case match.Matched:
		cond.Status = metav1.ConditionTrue
		cond.Reason = v1beta1.ReasonMatched
		cond.Message = fmt.Sprintf("State %q responded %s as expected", state.Name, got.StatusCode)
	case match.NotMatched:
		cond.Reason = v1beta1.ReasonNotMatched
		cond.Message = fmt.Sprintf("State %q responded %s, which does not match spec.expected: %s", state.Name, got.StatusCode, result.Detail)
	default:
		cond.Reason = v1beta1.ReasonNoResponse
		cond.Status = noAnswerStatus(sw, current)
		cond.Message = fmt.Sprintf("State %q has no response; %s", state.Name, policyPhrase(spec, cond.Status))
	}
	return cond
}

// noAnswerStatus is the Active status spec.failurePolicy selects while the
// state gives no answer. Retain keeps the mode the target is in now
// (current), not the one the status shows: statuses are written after a
// flip's targets, so the status may lag behind. When the target's shape
// does not tell, the status decides; a DynamicIngress that has none yet
// starts passive.
func noAnswerStatus(sw target.Switch, current *bool) metav1.ConditionStatus {
	switch sw.SwitchSpec().FailurePolicy {
	case v1beta1.FailurePolicyActive:
		return metav1.ConditionTrue
	case v1beta1.FailurePolicyRetain:
		if current != nil {
			return ConditionStatus(*current)
		}
		if prev := meta.FindStatusCondition(sw.SwitchStatus().Conditions, v1beta1.ConditionActive); prev != nil && prev.Status == metav1.ConditionTrue {
			return metav1.ConditionTrue
		}
	}
	return metav1.ConditionFalse
}

// RetainsMode says whether the mode depends on the target's current mode:
// failurePolicy Retain, no override, and a state that gives no answer.
func RetainsMode(sw target.Switch, state *v1beta1.DynamicIngressState) bool {
	return sw.SwitchSpec().Override == "" && policyRetains(sw, state)
}

// policyRetains says whether the state, override aside, selects the mode
// the target is in: failurePolicy Retain and a state that gives no answer.
func policyRetains(sw target.Switch, state *v1beta1.DynamicIngressState) bool {
	return sw.SwitchSpec().FailurePolicy == v1beta1.FailurePolicyRetain && (state == nil || state.Status.StatusCode == "")
}

// policyPhrase says which mode the failure policy selected.
func policyPhrase(spec v1beta1.SwitchSpec, status metav1.ConditionStatus) string {
	policy := spec.FailurePolicy
	if policy == "" {
		policy = v1beta1.FailurePolicyPassive
	}
	return fmt.Sprintf("spec.failurePolicy %s selects %s mode", policy, ModeName(status == metav1.ConditionTrue))
}

// ConditionStatus is True or False.
func ConditionStatus(b bool) metav1.ConditionStatus {
	if b {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

// ModeName names the mode a condition selects, for messages and events.
func ModeName(active bool) string {
	if active {
		return "active"
	}
	return "passive"
}

// TargetMode is the mode a live target (nil when there is none) is in, from
// its shape; nil when the shape does not tell (it follows neither template,
// or both alike) or the target is being deleted.
func TargetMode(kind target.Kind, sw target.Switch, live client.Object) *bool {
	if live != nil && !live.GetDeletionTimestamp().IsZero() {
		live = nil
	}
	active, known, err := target.ModeOf(kind, sw, live)
	if err != nil || !known {
		return nil
	}
	return &active
}

// Current is the mode the decision keeps under failurePolicy Retain while
// the state gives no answer (see RetainsMode): the mode the live target's
// shape tells (live is nil when there is none, and must be in the switch's
// namespace); when the shape tells nothing, pending, the mode of a target
// write whose status has not caught up yet (nil when there is none or the
// caller cannot know). It is nil when the decision does not depend on it,
// when the target is not the switch's, and for a switch that has written
// nothing yet (a new switch starts passive, even when a mode's template is
// null). Active(sw, state, Current(...)) is the decision.
func Current(kind target.Kind, sw target.Switch, state *v1beta1.DynamicIngressState, live client.Object, pending *bool) *bool {
	if !RetainsMode(sw, state) {
		return nil
	}
	return liveMode(kind, sw, live, pending)
}

// liveMode is the mode Retain keeps (see Current), whatever spec.override
// says.
func liveMode(kind target.Kind, sw target.Switch, live client.Object, pending *bool) *bool {
	if live != nil && !metav1.IsControlledBy(live, sw) {
		return nil
	}
	if live == nil && pending == nil && meta.FindStatusCondition(sw.SwitchStatus().Conditions, v1beta1.ConditionActive) == nil {
		return nil
	}
	if mode := TargetMode(kind, sw, live); mode != nil {
		return mode
	}
	return pending
}

// Decide is the Active condition of a switch whose target is live (nil when
// there is none): the decision the operator makes, as the plugin shows it,
// with no target write pending. Like the operator, it follows a fixed
// state's spec before its status shows it (Followed).
func Decide(kind target.Kind, sw target.Switch, state *v1beta1.DynamicIngressState, live client.Object) metav1.Condition {
	state = Followed(state, nil)
	return Active(sw, state, Current(kind, sw, state, live, nil))
}

// Selected is the Active condition the state selects for a switch whose
// target is live, spec.override aside: the mode the switch follows once its
// override is removed (what `kubectl dynamic override` reports).
func Selected(kind target.Kind, sw target.Switch, state *v1beta1.DynamicIngressState, live client.Object) metav1.Condition {
	state = Followed(state, nil)
	var current *bool
	if policyRetains(sw, state) {
		current = liveMode(kind, sw, live, nil)
	}
	return followState(sw, state, current, nil)
}

// FormatAfter writes how long after a write something happened as a
// status shows it: seconds with two decimals ("1.25s"), as in a flip
// summary's completedAfter and a served check's after.
func FormatAfter(d time.Duration) string {
	return fmt.Sprintf("%.2fs", d.Seconds())
}

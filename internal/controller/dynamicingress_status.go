package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/match"
)

// activeCondition evaluates the state against spec.expected (SPEC §3.1).
// state is nil when it does not exist.
func activeCondition(di *v1beta1.DynamicIngress, state *v1beta1.DynamicIngressState) metav1.Condition {
	cond := metav1.Condition{Type: v1beta1.ConditionActive, Status: metav1.ConditionFalse, ObservedGeneration: di.Generation}
	if state == nil {
		cond.Reason = v1beta1.ReasonStateNotFound
		cond.Message = fmt.Sprintf("DynamicIngressState %q not found", di.Spec.State)
		return cond
	}
	want := match.Expected{StatusCode: di.Spec.Expected.StatusCode, Body: di.Spec.Expected.Body}
	got := match.Response{StatusCode: state.Status.StatusCode, Body: state.Status.Body}
	switch match.Evaluate(want, got) {
	case match.Matched:
		cond.Status = metav1.ConditionTrue
		cond.Reason = v1beta1.ReasonMatched
		cond.Message = fmt.Sprintf("State %q responded %s as expected", state.Name, got.StatusCode)
	case match.NotMatched:
		cond.Reason = v1beta1.ReasonNotMatched
		cond.Message = fmt.Sprintf("State %q responded %s, which does not match spec.expected", state.Name, got.StatusCode)
	default:
		cond.Reason = v1beta1.ReasonNoResponse
		cond.Message = fmt.Sprintf("State %q has no response", state.Name)
	}
	return cond
}

// targetResult is what syncing the target Ingress came to.
type targetResult struct {
	reason  string // Synced, TargetConflict or ApplyFailed
	message string
}

// readyCondition says whether the target is what the selected template says.
// A missing state makes it False even though the target follows the passive
// template: the DynamicIngress points at nothing and needs a look.
func readyCondition(di *v1beta1.DynamicIngress, active metav1.Condition, target targetResult) metav1.Condition {
	cond := metav1.Condition{Type: v1beta1.ConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: di.Generation,
		Reason: target.reason, Message: target.message}
	switch {
	case target.reason != v1beta1.ReasonSynced:
	case active.Reason == v1beta1.ReasonStateNotFound:
		cond.Reason = v1beta1.ReasonStateNotFound
		cond.Message = active.Message + "; the target follows the passive template"
	default:
		cond.Status = metav1.ConditionTrue
	}
	return cond
}

// eventRecord is one event to record about a DynamicIngress.
type eventRecord struct {
	eventType, reason, action, note string
}

// transitionEvents are the events of a status change (SPEC §3.4): Normal
// Switched when Active flips (not when it is first set), and a Warning
// named after Ready's reason when Ready turns False for a new reason.
func transitionEvents(prevActive, prevReady *metav1.Condition, active, ready metav1.Condition) []eventRecord {
	var out []eventRecord
	if prevActive != nil && prevActive.Status != active.Status {
		out = append(out, eventRecord{corev1.EventTypeNormal, v1beta1.EventReasonSwitched, "Switch",
			fmt.Sprintf("Switched to %s mode: %s", modeName(active.Status == metav1.ConditionTrue), active.Message)})
	}
	if ready.Status != metav1.ConditionTrue && (prevReady == nil || prevReady.Reason != ready.Reason) {
		out = append(out, eventRecord{corev1.EventTypeWarning, ready.Reason, "Sync", ready.Message})
	}
	return out
}

// modeName names the mode a condition selects, for messages and events.
func modeName(active bool) string {
	if active {
		return "active"
	}
	return "passive"
}

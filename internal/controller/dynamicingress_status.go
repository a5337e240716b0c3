package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/ingress"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/match"
)

// activeCondition evaluates the state against spec.expected (docs/behaviour.md).
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
	switch match.Evaluate(want, got).Outcome {
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

// transitionEvents are the events of a status change (docs/behaviour.md): Normal
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

// firstClaimant names the DynamicIngress of list, other than di, that names
// the same target and came first (created earlier; by name on a tie), so
// that of two DynamicIngresses with one target exactly one acts on it. ""
// when di is the first.
func firstClaimant(list []v1beta1.DynamicIngress, di *v1beta1.DynamicIngress) string {
	var first *v1beta1.DynamicIngress
	for i := range list {
		o := &list[i]
		if o.UID == di.UID || ingress.TargetNamespace(o) != ingress.TargetNamespace(di) || o.Spec.Target.Name != di.Spec.Target.Name {
			continue
		}
		if claimsBefore(o, di) && (first == nil || claimsBefore(o, first)) {
			first = o
		}
	}
	if first == nil {
		return ""
	}
	return first.Name
}

// claimsBefore says whether a was created before b (by name on a tie).
func claimsBefore(a, b *v1beta1.DynamicIngress) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

package decision

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/schedule"
)

// Schedule responses (docs/behaviour.md): a schedule state answers 200 with
// whether a window is open, so DynamicIngresses match it like any response.
const (
	ScheduleOpenBody   = `{"open":true}`
	ScheduleClosedBody = `{"open":false}`
)

// FixedStatus is the status of a state with a fixed response.
func FixedStatus(state *v1beta1.DynamicIngressState, now metav1.Time) v1beta1.DynamicIngressStateStatus {
	fixed := state.Spec.FixedResponse
	out := WithResponse(state.Status, fixed.Status, fixed.Body, false, now)
	out.Mode = v1beta1.StateModeFixed
	out.ObservedGeneration = state.Generation
	meta.SetStatusCondition(&out.Conditions, metav1.Condition{Type: v1beta1.ConditionReady, Status: metav1.ConditionTrue,
		Reason: v1beta1.ReasonFixed, Message: "The response is fixed in spec.fixedResponse", ObservedGeneration: state.Generation})
	return out
}

// WithResponse sets the response, moving lastUpdateTime only when the
// status code or the body changed.
func WithResponse(status v1beta1.DynamicIngressStateStatus, code, body string, truncated bool, now metav1.Time) v1beta1.DynamicIngressStateStatus {
	out := *status.DeepCopy()
	if out.StatusCode != code || out.Body != body || out.LastUpdateTime == nil {
		out.LastUpdateTime = &metav1.MicroTime{Time: now.Time}
	}
	out.StatusCode, out.Body, out.BodyTruncated = code, body, truncated
	return out
}

// ScheduledStatus is the status of a schedule state at now, and when to
// look at it again: when it next changes, or, when no change lies within
// the schedule's search horizon, at the horizon and within a day
// (docs/behaviour.md); zero when it never changes.
func ScheduledStatus(state *v1beta1.DynamicIngressState, now metav1.Time) (v1beta1.DynamicIngressStateStatus, time.Time) {
	out := *state.Status.DeepCopy()
	out.Mode = v1beta1.StateModeSchedule
	out.ObservedGeneration = state.Generation
	cond := metav1.Condition{Type: v1beta1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1beta1.ReasonScheduled, ObservedGeneration: state.Generation}

	compiled, err := compileSchedule(state.Spec.Schedule)
	if err != nil {
		out = WithResponse(out, "", "", false, now)
		out.NextTransitionTime = nil
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, v1beta1.ReasonInvalidSchedule, "spec.schedule is invalid: "+err.Error()
		meta.SetStatusCondition(&out.Conditions, cond)
		return out, time.Time{}
	}
	outlook := compiled.At(now.Time)
	body, word := ScheduleClosedBody, "closed"
	if outlook.Open {
		body, word = ScheduleOpenBody, "open"
	}
	out = WithResponse(out, "200", body, false, now)
	out.NextTransitionTime = nil
	switch {
	case !outlook.Next.IsZero():
		out.NextTransitionTime = &metav1.Time{Time: outlook.Next.UTC()}
		cond.Message = fmt.Sprintf("The schedule is %s until %s", word, outlook.Next.UTC().Format(time.RFC3339))
	case !outlook.Horizon.IsZero():
		cond.Message = fmt.Sprintf("The schedule is %s with no change before %s, as far as the operator looks ahead; it looks again at %s",
			word, outlook.Horizon.UTC().Format(time.RFC3339), outlook.Recheck.UTC().Format(time.RFC3339))
	default:
		cond.Message = fmt.Sprintf("The schedule is %s; no window lies ahead", word)
	}
	meta.SetStatusCondition(&out.Conditions, cond)
	return out, outlook.Recheck
}

// compileSchedule reads and checks spec.schedule.
func compileSchedule(spec *v1beta1.Schedule) (*schedule.Compiled, error) {
	s, errs := schedule.FromSpec(spec)
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return schedule.Compile(s)
}

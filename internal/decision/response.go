package decision

import (
	"crypto/sha256"
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
	out := WithResponse(state.Status, fixed.Status, fixed.Body, false, now, v1beta1.HistoryCauseFixed)
	out.Mode = v1beta1.StateModeFixed
	out.ObservedGeneration = state.Generation
	meta.SetStatusCondition(&out.Conditions, metav1.Condition{Type: v1beta1.ConditionReady, Status: metav1.ConditionTrue,
		Reason: v1beta1.ReasonFixed, Message: "The response is fixed in spec.fixedResponse", ObservedGeneration: state.Generation})
	return out
}

// WithResponse sets the response, moving lastUpdateTime only when the
// status code or the body changed, and recording the change in
// status.history with its cause (NoResponse when code is empty): in the
// same status, so the same write (docs/behaviour.md, "History").
func WithResponse(status v1beta1.DynamicIngressStateStatus, code, body string, truncated bool, now metav1.Time, cause v1beta1.HistoryCause) v1beta1.DynamicIngressStateStatus {
	out := *status.DeepCopy()
	changed := out.StatusCode != code || out.Body != body
	first := out.LastUpdateTime == nil
	if changed || first {
		out.LastUpdateTime = &metav1.MicroTime{Time: now.Time}
	}
	if changed || (first && code != "") {
		if code == "" {
			cause = v1beta1.HistoryCauseNoResponse
		}
		out.History = WithChange(out.History, code, body, cause, now)
	}
	out.StatusCode, out.Body, out.BodyTruncated = code, body, truncated
	return out
}

// WithChange is history with a change to code and body added first, its
// sequence the next after the newest, trimmed to the last
// v1beta1.MaxHistory changes.
func WithChange(history []v1beta1.HistoryEntry, code, body string, cause v1beta1.HistoryCause, now metav1.Time) []v1beta1.HistoryEntry {
	seq := int64(1)
	if len(history) > 0 {
		seq = history[0].Sequence + 1
	}
	entry := v1beta1.HistoryEntry{Sequence: seq, Time: metav1.MicroTime(now), StatusCode: code, Cause: cause}
	if code != "" {
		entry.BodyDigest = BodyDigest(body)
	}
	out := make([]v1beta1.HistoryEntry, 0, min(len(history)+1, v1beta1.MaxHistory))
	out = append(out, entry)
	for _, e := range history {
		if len(out) == v1beta1.MaxHistory {
			break
		}
		out = append(out, e)
	}
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
		out = WithResponse(out, "", "", false, now, v1beta1.HistoryCauseNoResponse)
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
	out = WithResponse(out, "200", body, false, now, v1beta1.HistoryCauseSchedule)
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

// FollowedResponse is the response a state's switches compare with: a
// fixed state's is its spec.fixedResponse, known as soon as the spec is
// (its status is a pure function of the spec, FixedStatus, written
// a round trip later); a probed or schedule state's is its status's.
func FollowedResponse(state *v1beta1.DynamicIngressState) (code, body string) {
	if fixed := state.Spec.FixedResponse; fixed != nil {
		return fixed.Status, fixed.Body
	}
	return state.Status.StatusCode, state.Status.Body
}

// StatusLags reports whether a fixed state's status does not show its
// spec's response yet.
func StatusLags(state *v1beta1.DynamicIngressState) bool {
	if state.Spec.FixedResponse == nil {
		return false
	}
	code, body := FollowedResponse(state)
	return state.Status.StatusCode != code || state.Status.Body != body || state.Status.BodyTruncated
}

// Followed is state as its switches decide from: when a fixed state's
// status does not show its spec's response yet, a copy with that response
// in the status, so that a flip of a fixed state reaches its targets
// without waiting for the state's own status write to come back through
// the watch (docs/architecture.md). The copy's lastUpdateTime is seen, when
// the manager first saw the spec give that response (nil when it does not
// know: the switch is then counted without a latency). nil stays nil;
// state itself is never changed (it is the cache's own).
func Followed(state *v1beta1.DynamicIngressState, seen *metav1.MicroTime) *v1beta1.DynamicIngressState {
	if state == nil || !StatusLags(state) {
		return state
	}
	code, body := FollowedResponse(state)
	out := &v1beta1.DynamicIngressState{TypeMeta: state.TypeMeta, ObjectMeta: state.ObjectMeta, Spec: state.Spec}
	out.Status = *state.Status.DeepCopy()
	out.Status.StatusCode, out.Status.Body, out.Status.BodyTruncated = code, body, false
	out.Status.LastUpdateTime = seen
	return out
}

// BodyDigest is a body as status.history names it: "sha256:" and its hex
// digest.
func BodyDigest(body string) string {
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(body)))
}

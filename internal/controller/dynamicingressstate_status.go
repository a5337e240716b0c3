package controller

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/schedule"
)

// probeSpec turns a state's probe into what the scheduler runs, with the
// defaults of a probe that bypassed the defaulting webhook.
func probeSpec(p *v1beta1.HTTPProbe) probe.Spec {
	p = p.DeepCopy()
	p.Default()
	headers := make([]probe.Header, 0, len(p.Headers))
	for _, h := range p.Headers {
		headers = append(headers, probe.Header{Name: h.Name, Value: h.Value})
	}
	return probe.Spec{
		Request: probe.Request{Method: p.Method, URL: p.URL, Headers: headers, Timeout: p.Timeout.Duration,
			BodyExpression: p.BodyExpression},
		Interval:         p.Interval.Duration,
		FailureThreshold: int(p.FailureThresholdOrDefault()),
		SuccessThreshold: int(p.SuccessThresholdOrDefault()),
	}
}

// fixedStatus is the status of a state with a fixed response.
func fixedStatus(state *v1beta1.DynamicIngressState, now metav1.Time) v1beta1.DynamicIngressStateStatus {
	fixed := state.Spec.FixedResponse
	out := withResponse(state.Status, fixed.Status, fixed.Body, false, now)
	out.Mode = v1beta1.StateModeFixed
	out.ObservedGeneration = state.Generation
	meta.SetStatusCondition(&out.Conditions, metav1.Condition{Type: v1beta1.ConditionReady, Status: metav1.ConditionTrue,
		Reason: v1beta1.ReasonFixed, Message: "The response is fixed in spec.fixedResponse", ObservedGeneration: state.Generation})
	return out
}

// probedStatus is the status of a probed state after what its probes showed
// (docs/behaviour.md). Until the first probe of the current spec is done the last
// response is kept; a failure keeps it too, until failureThreshold
// consecutive failures clear it.
func probedStatus(state *v1beta1.DynamicIngressState, obs probe.Observation, now metav1.Time) v1beta1.DynamicIngressStateStatus {
	out := *state.Status.DeepCopy()
	out.Mode = v1beta1.StateModeProbe
	cond := metav1.Condition{Type: v1beta1.ConditionReady, ObservedGeneration: state.Generation}
	switch {
	case !obs.Probed:
		prev := meta.FindStatusCondition(out.Conditions, v1beta1.ConditionReady)
		if prev != nil && prev.ObservedGeneration == state.Generation && state.Status.Mode == v1beta1.StateModeProbe {
			// A restarted manager has not probed yet: what the status says
			// still stands, and rewriting it would only flap.
			return out
		}
		cond.Status, cond.Reason, cond.Message = metav1.ConditionUnknown, v1beta1.ReasonPending, "No probe has been done yet"
	case obs.Err == "":
		out = withResponse(out, obs.Response.StatusCode, obs.Response.Body, obs.Response.Truncated, now)
		cond.Status, cond.Reason = metav1.ConditionTrue, v1beta1.ReasonProbeSucceeded
		cond.Message = fmt.Sprintf("The probe got HTTP %s", obs.Response.StatusCode)
	default:
		if obs.ThresholdReached {
			out = withResponse(out, "", "", false, now)
		}
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, v1beta1.ReasonProbeFailed, obs.Err
	}
	out.ObservedGeneration = state.Generation
	meta.SetStatusCondition(&out.Conditions, cond)
	return out
}

// withResponse sets the response, moving lastUpdateTime only when the
// status code or the body changed.
func withResponse(status v1beta1.DynamicIngressStateStatus, code, body string, truncated bool, now metav1.Time) v1beta1.DynamicIngressStateStatus {
	out := *status.DeepCopy()
	if out.StatusCode != code || out.Body != body || out.LastUpdateTime == nil {
		out.LastUpdateTime = &metav1.MicroTime{Time: now.Time}
	}
	out.StatusCode, out.Body, out.BodyTruncated = code, body, truncated
	return out
}

// stateTransitionEvents are the events of a state's status change: a
// Warning ProbeFailed when Ready turns to ProbeFailed, not on every failed
// probe after it.
func stateTransitionEvents(prevReady, ready *metav1.Condition) []eventRecord {
	if ready == nil || ready.Reason != v1beta1.ReasonProbeFailed || (prevReady != nil && prevReady.Reason == ready.Reason) {
		return nil
	}
	return []eventRecord{{corev1.EventTypeWarning, v1beta1.ReasonProbeFailed, "Probe", ready.Message}}
}

// statusWriteFailedCondition is the Ready condition of a state whose status
// could not be written: the API server refused it (too large for etcd, for
// instance), so the status keeps the response it had.
func statusWriteFailedCondition(generation int64, err error) metav1.Condition {
	return metav1.Condition{Type: v1beta1.ConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: generation,
		Reason:  v1beta1.ReasonStatusWriteFailed,
		Message: "The current response could not be written to the status: " + err.Error()}
}

// Schedule responses (docs/behaviour.md): a schedule state answers 200 with
// whether a window is open, so DynamicIngresses match it like any response.
const (
	scheduleOpenBody   = `{"open":true}`
	scheduleClosedBody = `{"open":false}`
)

// scheduledStatus is the status of a schedule state at now, and when to
// look at it again: when it next changes, or, when no change lies within
// the schedule's search horizon, at the horizon and within a day
// (docs/behaviour.md); zero when it never changes.
func scheduledStatus(state *v1beta1.DynamicIngressState, now metav1.Time) (v1beta1.DynamicIngressStateStatus, time.Time) {
	out := *state.Status.DeepCopy()
	out.Mode = v1beta1.StateModeSchedule
	out.ObservedGeneration = state.Generation
	cond := metav1.Condition{Type: v1beta1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1beta1.ReasonScheduled, ObservedGeneration: state.Generation}

	compiled, err := compileSchedule(state.Spec.Schedule)
	if err != nil {
		out = withResponse(out, "", "", false, now)
		out.NextTransitionTime = nil
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, v1beta1.ReasonInvalidSchedule, "spec.schedule is invalid: "+err.Error()
		meta.SetStatusCondition(&out.Conditions, cond)
		return out, time.Time{}
	}
	outlook := compiled.At(now.Time)
	body, word := scheduleClosedBody, "closed"
	if outlook.Open {
		body, word = scheduleOpenBody, "open"
	}
	out = withResponse(out, "200", body, false, now)
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

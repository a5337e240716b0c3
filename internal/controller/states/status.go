package states

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/flip"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
)

// probeSpec turns the probe of a state into what the scheduler runs, with
// the defaults of a probe that bypassed the defaulting webhook. A header's
// Secret is in secretNamespace (the state's namespace, or the cluster
// resource namespace for a cluster state); tenant is the state's namespace,
// "" for a cluster state, whose share of the answers' memory it is.
func probeSpec(secretNamespace, tenant string, p *v1beta1.HTTPProbe) probe.Spec {
	p = p.DeepCopy()
	p.Default()
	return probe.Spec{
		Request: probe.Request{Method: p.Method, URL: p.URL, Headers: probe.HeadersOf(secretNamespace, p.Headers), Timeout: p.Timeout.Duration,
			BodyExpression: p.BodyExpression, Tenant: tenant},
		Interval:         p.Interval.Duration,
		FailureThreshold: int(p.FailureThresholdOrDefault()),
		SuccessThreshold: int(p.SuccessThresholdOrDefault()),
	}
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
		out = decision.WithResponse(out, obs.Response.StatusCode, obs.Response.Body, obs.Response.Truncated, now, v1beta1.HistoryCauseProbe)
		cond.Status, cond.Reason = metav1.ConditionTrue, v1beta1.ReasonProbeSucceeded
		cond.Message = fmt.Sprintf("The probe got HTTP %s", obs.Response.StatusCode)
	default:
		if obs.ThresholdReached {
			out = decision.WithResponse(out, "", "", false, now, v1beta1.HistoryCauseNoResponse)
		}
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, v1beta1.ReasonProbeFailed, obs.Err
	}
	out.ObservedGeneration = state.Generation
	meta.SetStatusCondition(&out.Conditions, cond)
	return out
}

// stateTransitionEvents are the events of a state's status change: a
// Warning ProbeFailed when Ready turns to ProbeFailed, not on every failed
// probe after it.
func stateTransitionEvents(prevReady, ready *metav1.Condition) []flip.Event {
	if ready == nil || ready.Reason != v1beta1.ReasonProbeFailed || (prevReady != nil && prevReady.Reason == ready.Reason) {
		return nil
	}
	return []flip.Event{{Type: corev1.EventTypeWarning, Reason: v1beta1.ReasonProbeFailed, Action: "Probe", Note: ready.Message}}
}

// statusWriteFailedCondition is the Ready condition of a state whose status
// could not be written: the API server refused it (too large for etcd, for
// instance), so the status keeps the response it had.
func statusWriteFailedCondition(generation int64, err error) metav1.Condition {
	return metav1.Condition{Type: v1beta1.ConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: generation,
		Reason:  v1beta1.ReasonStatusWriteFailed,
		Message: "The current response could not be written to the status: " + err.Error()}
}

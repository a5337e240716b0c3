package decision

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// The bodies of a service state's two answers.
const (
	ServiceAvailableBody   = `{"available":true}`
	ServiceUnavailableBody = `{"available":false}`
)

// ServiceCount is what the manager knows of a state's Service: whether it
// exists, and how many ready endpoints it has.
type ServiceCount struct {
	Exists bool
	Ready  int
}

// ServiceKey is the Service a service state follows: spec.service.namespace,
// or the state's own namespace when unset.
func ServiceKey(state *v1beta1.DynamicIngressState) types.NamespacedName {
	src := state.Spec.Service
	ns := src.Namespace
	if ns == "" {
		ns = state.Namespace
	}
	return types.NamespacedName{Namespace: ns, Name: src.Name}
}

// ServiceAvailable reports which side of minReady a count is on.
func ServiceAvailable(src *v1beta1.ServiceSource, ready int) bool {
	return ready >= src.MinReadyOrDefault()
}

// serviceAnswer is the answer a service state's status gives: nil when it
// has none (no response, or another source's).
func serviceAnswer(status *v1beta1.DynamicIngressStateStatus) *bool {
	if status.Mode != v1beta1.StateModeService {
		return nil
	}
	switch status.StatusCode {
	case "200":
		return new(true)
	case "503":
		return new(false)
	}
	return nil
}

// ServiceStatus is the status of a state that follows a Service
// (docs/behaviour.md, "A state that follows a Service"), given the
// Service's count and since when the count has been on its side of
// minReady, as the manager saw it. The answer changes only once the count
// has held its side for unavailableAfter (to 503) or availableAfter (to
// 200); until then the status stays as it is, and recheck says when to
// look again (0: no need). The first answer, and the answer after the
// Service came back, are given at once: there is no answer to hold. The
// counts in the Ready message are those of the last change of answer:
// a count that moves without changing the answer writes nothing.
func ServiceStatus(state *v1beta1.DynamicIngressState, svc ServiceCount, since, now time.Time) (out v1beta1.DynamicIngressStateStatus, recheck time.Duration) {
	out = *state.Status.DeepCopy()
	src := state.Spec.Service
	key := ServiceKey(state)
	at := metav1.NewTime(now)
	cond := metav1.Condition{Type: v1beta1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1beta1.ReasonEndpointsCounted, ObservedGeneration: state.Generation}
	defer func() {
		out.Mode = v1beta1.StateModeService
		out.ObservedGeneration = state.Generation
		out.NextTransitionTime = nil
	}()
	if !svc.Exists {
		out = WithResponse(out, "", "", false, at, v1beta1.HistoryCauseNoResponse)
		cond.Status, cond.Reason = metav1.ConditionFalse, v1beta1.ReasonServiceNotFound
		cond.Message = fmt.Sprintf("Service %s does not exist", key)
		meta.SetStatusCondition(&out.Conditions, cond)
		return out, 0
	}
	want := ServiceAvailable(src, svc.Ready)
	answer := serviceAnswer(&state.Status)
	if answer != nil && *answer != want {
		wait := src.AvailableAfterOrDefault()
		if !want {
			wait = src.UnavailableAfterOrDefault()
		}
		if held := now.Sub(since); held < wait {
			keepCondition(&out, state.Generation)
			return out, wait - held
		}
	}
	if answer != nil && *answer == want {
		prev := meta.FindStatusCondition(out.Conditions, v1beta1.ConditionReady)
		if prev != nil && prev.Reason == v1beta1.ReasonEndpointsCounted {
			keepCondition(&out, state.Generation)
			return out, 0
		}
	}
	code, body := "503", ServiceUnavailableBody
	if want {
		code, body = "200", ServiceAvailableBody
	}
	out = WithResponse(out, code, body, false, at, v1beta1.HistoryCauseService)
	cond.Message = fmt.Sprintf("Service %s had %d ready endpoints (minReady %d) when the answer turned %s", key, svc.Ready, src.MinReadyOrDefault(), code)
	meta.SetStatusCondition(&out.Conditions, cond)
	return out, 0
}

// keepCondition keeps the Ready condition's message (the counts of the
// last change of answer) while bringing its generation up to date.
func keepCondition(out *v1beta1.DynamicIngressStateStatus, generation int64) {
	if c := meta.FindStatusCondition(out.Conditions, v1beta1.ConditionReady); c != nil {
		c.ObservedGeneration = generation
	}
}

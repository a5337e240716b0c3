package plugin

import (
	"context"
	"fmt"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/endpoints"
)

// Values of ServiceReport.ReadyFrom: where the ready count comes from.
const (
	// ReadyFromEndpointSlices: the plugin counted the Service's
	// EndpointSlices as it read them, by the manager's rules.
	ReadyFromEndpointSlices = "EndpointSlices"
	// ReadyFromCondition: the plugin may not list them; the count is the
	// one the state's Ready condition recorded when the answer last
	// changed.
	ReadyFromCondition = "ReadyCondition"
)

// Values of ServiceReport.Side: which side of minReady the count is on.
const (
	SideAtOrAbove = "atOrAbove"
	SideBelow     = "below"
)

// ServiceReport is, for a state that follows a Service, the Service, its
// ready count, and how the count stands against the state's answer
// (docs/kubectl-dynamic.md; its -o json shape: fields may be added, never
// renamed).
type ServiceReport struct {
	Name             string `json:"name"`
	Namespace        string `json:"namespace"`
	MinReady         int    `json:"minReady"`
	UnavailableAfter string `json:"unavailableAfter"`
	AvailableAfter   string `json:"availableAfter"`
	// Exists is false when the state's status says the Service does not
	// exist (ServiceNotFound).
	Exists bool `json:"exists"`
	// Ready is the number of ready endpoints (ReadyFrom says whose count);
	// null when it is not known.
	Ready     *int   `json:"ready"`
	ReadyFrom string `json:"readyFrom,omitempty"`
	// Side is the side of minReady Ready is on: atOrAbove or below.
	Side string `json:"side,omitempty"`
	// Answer is the Service's answer in the state's status, 200 or 503;
	// empty when the status shows none (ServiceNotFound, or not written
	// yet).
	Answer string `json:"answer,omitempty"`
	// Since is status.lastUpdateTime, RFC 3339: when the answer last
	// changed; For is how long before the plugin read the state. While the
	// count is on the answer's side, it has not stayed on the other side
	// for longer than the delay since then.
	Since *string `json:"since"`
	For   string  `json:"for,omitempty"`
	// Turns is, when the count is on the other side of minReady than the
	// answer, the answer it turns to (200 or 503) once the count stays
	// there for TurnsAfter (availableAfter or unavailableAfter).
	Turns      string `json:"turns,omitempty"`
	TurnsAfter string `json:"turnsAfter,omitempty"`
}

// ServiceCount is a Service's ready count as the plugin read it.
type ServiceCount struct {
	Ready int
	// Listed says the plugin counted the Service's EndpointSlices; when
	// false, Ready is the Ready condition's count, if Known.
	Listed bool
	Known  bool
}

// ReadServiceCount counts the ready endpoints of the Service the state
// follows: it lists the Service's EndpointSlices (label
// kubernetes.io/service-name, in the Service's namespace) and counts them
// as the manager does (endpoints.Ready). When the user may not list them,
// the count is the one the state's Ready condition recorded when the
// answer last changed, and the note says so. Nothing is listed for a
// state whose status says the Service does not exist.
func ReadServiceCount(ctx context.Context, c client.Reader, state *v1beta1.DynamicIngressState) (ServiceCount, string, error) {
	key := decision.ServiceKey(state)
	if reasonIs(state, v1beta1.ReasonServiceNotFound) {
		return ServiceCount{}, "", nil
	}
	var slices discoveryv1.EndpointSliceList
	err := c.List(ctx, &slices, client.InNamespace(key.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: key.Name})
	switch {
	case err == nil:
		return ServiceCount{Ready: endpoints.Ready(slices.Items), Listed: true, Known: true}, "", nil
	case apierrors.IsForbidden(err):
		n, code, ok := recordedCount(state)
		if !ok {
			return ServiceCount{}, fmt.Sprintf("the ready count of Service %s is unknown: counting it needs list on %s in namespace %q, which you lack",
				key, resourceName(discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice")), key.Namespace), nil
		}
		return ServiceCount{Ready: n, Known: true}, fmt.Sprintf("the ready count of Service %s is the one the state's Ready condition recorded when the answer turned %s, not counted now: counting it needs list on %s in namespace %q, which you lack",
			key, code, resourceName(discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice")), key.Namespace), nil
	}
	return ServiceCount{}, "", fmt.Errorf("listing the EndpointSlices of Service %s: %w", key, err)
}

// recordedCount is the ready count the Ready condition's message recorded
// (decision.ServiceStatus writes it when the answer changes) and the
// answer it turned to; ok is false when the message has none.
func recordedCount(state *v1beta1.DynamicIngressState) (n int, code string, ok bool) {
	ready := meta.FindStatusCondition(state.Status.Conditions, v1beta1.ConditionReady)
	if ready == nil || ready.Reason != v1beta1.ReasonEndpointsCounted {
		return 0, "", false
	}
	var (
		key      string
		minReady int
	)
	if _, err := fmt.Sscanf(ready.Message, "Service %s had %d ready endpoints (minReady %d) when the answer turned %s", &key, &n, &minReady, &code); err != nil {
		return 0, "", false
	}
	return n, code, true
}

func reasonIs(state *v1beta1.DynamicIngressState, reason string) bool {
	ready := meta.FindStatusCondition(state.Status.Conditions, v1beta1.ConditionReady)
	return ready != nil && ready.Reason == reason
}

// ServiceOf is the report of a state that follows a Service, given its
// count and the moment the plugin read it; nil for any other state. The
// plugin cannot know when the count last crossed minReady, only when the
// answer last changed: a count on the answer's side has been there since
// then, but for crossings shorter than the delay, which the manager
// ignores too; a count on the other side turns the answer once it stays
// there for the delay.
func ServiceOf(state *v1beta1.DynamicIngressState, count ServiceCount, now time.Time) *ServiceReport {
	src := state.Spec.Service
	if src == nil {
		return nil
	}
	key := decision.ServiceKey(state)
	out := &ServiceReport{Name: key.Name, Namespace: key.Namespace, MinReady: src.MinReadyOrDefault(),
		UnavailableAfter: src.UnavailableAfterOrDefault().String(), AvailableAfter: src.AvailableAfterOrDefault().String(),
		Exists: !reasonIs(state, v1beta1.ReasonServiceNotFound)}
	if last := state.Status.LastUpdateTime; last != nil {
		out.Since = new(last.UTC().Format(time.RFC3339))
		out.For = max(now.Sub(last.Time), 0).Round(time.Second).String()
	}
	if answer := state.Status.StatusCode; state.Status.Mode == v1beta1.StateModeService && (answer == "200" || answer == "503") {
		out.Answer = answer
	}
	if !out.Exists || !count.Known {
		return out
	}
	out.Ready = new(count.Ready)
	out.ReadyFrom = ReadyFromCondition
	if count.Listed {
		out.ReadyFrom = ReadyFromEndpointSlices
	}
	available := decision.ServiceAvailable(src, count.Ready)
	out.Side = SideBelow
	if available {
		out.Side = SideAtOrAbove
	}
	switch {
	case available && out.Answer == "503":
		out.Turns, out.TurnsAfter = "200", out.AvailableAfter
	case !available && out.Answer == "200":
		out.Turns, out.TurnsAfter = "503", out.UnavailableAfter
	}
	return out
}

// Lines are what status prints of the Service under the state's line:
// the Service, its count and settings, then how the count stands against
// the answer. None for a state that does not follow a Service.
func (s *ServiceReport) Lines() []string {
	if s == nil {
		return nil
	}
	settings := fmt.Sprintf("minReady %d (unavailableAfter %s, availableAfter %s)", s.MinReady, s.UnavailableAfter, s.AvailableAfter)
	since := "since an unknown time"
	if s.Since != nil {
		since = fmt.Sprintf("since %s (%s)", *s.Since, s.For)
	}
	name := s.Namespace + "/" + s.Name
	if !s.Exists {
		return []string{
			fmt.Sprintf("Service %s: does not exist, %s", name, settings),
			fmt.Sprintf("No response %s: the answer comes at once when the Service does", since),
		}
	}
	count := "ready endpoints unknown"
	if s.Ready != nil {
		count = fmt.Sprintf("%d ready %s", *s.Ready, pluralOf(*s.Ready, "endpoint", "endpoints"))
		if s.ReadyFrom == ReadyFromCondition {
			count += " when the answer last changed"
		}
	}
	out := []string{fmt.Sprintf("Service %s: %s, %s", name, count, settings)}
	side := "at or above minReady"
	if s.Side == SideBelow {
		side = "below minReady"
	}
	switch {
	case s.Side == "":
	case s.Answer == "":
		out = append(out, fmt.Sprintf("The count is %s; the status shows no answer from the Service yet", side))
	case s.Turns != "":
		after := fmt.Sprintf("once it stays there for %s", s.TurnsAfter)
		if s.TurnsAfter == "0s" {
			after = "as soon as the manager sees it"
		}
		delay := "availableAfter"
		if s.Turns == "503" {
			delay = "unavailableAfter"
		}
		out = append(out, fmt.Sprintf("The count is %s now: the answer turns %s %s (%s); %s %s", side, s.Turns, after, delay, s.Answer, since))
	default:
		out = append(out, fmt.Sprintf("The count is %s: on its side %s, when the answer turned %s", side, since, s.Answer))
	}
	return out
}

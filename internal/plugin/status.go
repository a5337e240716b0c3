package plugin

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// Accepted values of SwitchStatus.Accepted: whether every parent of a
// DynamicHTTPRoute's HTTPRoute accepted its current generation.
const (
	AcceptedTrue    = "true"
	AcceptedFalse   = "false"
	AcceptedUnknown = "unknown"
)

// Values of SwitchReport.Served: whether the data plane serves the mode
// the decision selects, for a switch with spec.served.
const (
	ServedTrue     = "true"
	ServedFalse    = "false"
	ServedChecking = "checking"
)

// Report is what `kubectl dynamic status` prints (its -o json shape:
// fields may be added, never renamed).
type Report struct {
	State StateReport `json:"state"`
	// Switches are the followers the state's grant admits (every follower
	// of a DynamicIngressState): the ones wait waits for.
	Switches []SwitchReport `json:"switches"`
	Summary  Summary        `json:"summary"`
	// NotAdmitted are the followers of a cluster state whose status says
	// its grant does not admit their namespace, each in the mode its
	// failurePolicy selects: listed apart, and never waited for.
	NotAdmitted []SwitchReport `json:"notAdmitted,omitempty"`
	// Notes say what the plugin could not read (Snapshot.Notes).
	Notes []string `json:"notes,omitempty"`
}

// StateReport is the state's response.
type StateReport struct {
	Name       string `json:"name"`
	Namespace  string `json:"namespace"`
	StatusCode string `json:"statusCode"`
	Reason     string `json:"reason"`
	// NextTransitionTime is RFC 3339, null when no transition lies ahead
	// (and for a state that is not a schedule).
	NextTransitionTime *string `json:"nextTransitionTime"`
	// Message is the state's Ready message.
	Message string `json:"message,omitempty"`
	// Service is, for a state that follows a Service, the Service and its
	// ready count (StatusOfStateAt); absent for any other state.
	Service *ServiceReport `json:"service,omitempty"`
}

// SwitchReport is one switch that follows the state.
type SwitchReport struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Namespace is the switch's, for the followers of a cluster state.
	Namespace string `json:"namespace,omitempty"`
	Target    string `json:"target"`
	// Mode is the mode the operator decides for the switch now.
	Mode string `json:"mode"`
	// InShape says whether the target already is that mode's shape.
	InShape  bool   `json:"inShape"`
	Override string `json:"override"`
	// Pin is, while spec.override is set, the pin: who set it, until when,
	// why, and whether it holds at the snapshot's moment.
	Pin *PinReport `json:"pin,omitempty"`
	// Accepted is for DynamicHTTPRoutes only.
	Accepted string `json:"accepted,omitempty"`
	// Served is for switches with spec.served only (ServedOf): true,
	// false or checking; ServedMessage is the Served condition's message
	// when it is not true.
	Served        string `json:"served,omitempty"`
	ServedMessage string `json:"servedMessage,omitempty"`
	// Synced says whether the switch's status shows the mode, for the
	// switch's current generation, with its target synced.
	Synced bool `json:"synced"`
	// Reason and Message are the switch's Ready condition's when its
	// status is not synced.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Combination is anyOf or allOf for a switch with a list, whose mode
	// comes from all its Entries; absent for a single state.
	Combination string        `json:"combination,omitempty"`
	Entries     []EntryReport `json:"entries,omitempty"`
}

// Summary counts the switches (Report.Switches), and apart from them the
// followers the grant does not admit.
type Summary struct {
	Total       int `json:"total"`
	Active      int `json:"active"`
	Passive     int `json:"passive"`
	NotInShape  int `json:"notInShape"`
	NotAdmitted int `json:"notAdmitted,omitempty"`
}

// String is the summary line.
func (s Summary) String() string {
	line := fmt.Sprintf("%d %s: %d active, %d passive, %d not yet in shape", s.Total, pluralOf(s.Total, "switch", "switches"), s.Active, s.Passive, s.NotInShape)
	if s.NotAdmitted > 0 {
		line += fmt.Sprintf("; %d %s not admitted by the grant", s.NotAdmitted, pluralOf(s.NotAdmitted, "follower", "followers"))
	}
	return line
}

// LeftOut is the line wait prints about the followers it left out because
// the grant of state (e.g. cdis/global-killswitch) does not admit them,
// naming the first five; "" when there are none.
func (r Report) LeftOut(state string) string {
	if len(r.NotAdmitted) == 0 {
		return ""
	}
	const most = 5
	var names []string
	for _, sw := range r.NotAdmitted[:min(len(r.NotAdmitted), most)] {
		names = append(names, fmt.Sprintf("%s %s/%s", sw.Kind, sw.Namespace, sw.Name))
	}
	more := ""
	if n := len(r.NotAdmitted) - most; n > 0 {
		more = fmt.Sprintf("; and %d more", n)
	}
	return fmt.Sprintf("Left out %d %s not admitted by the grant of %s: %s%s", len(r.NotAdmitted),
		pluralOf(len(r.NotAdmitted), "follower", "followers"), state, strings.Join(names, ", "), more)
}

// pluralOf is one when n is 1, many otherwise.
func pluralOf(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Status is the report of a snapshot: for each switch, the mode the
// operator's decision selects from the state's current response, and
// whether its target is in that mode's shape; the followers the grant does
// not admit apart, in the mode their failurePolicy selects.
func Status(snap *Snapshot) (Report, error) {
	report := Report{State: stateReport(snap.State), Switches: []SwitchReport{}, Notes: snap.Notes}
	for _, item := range snap.Items {
		if item.NotAdmitted {
			// The operator decides it as if the state were gone.
			sw, err := switchReport(item, nil, snap.Cluster, snap.Now)
			if err != nil {
				return Report{}, err
			}
			report.NotAdmitted = append(report.NotAdmitted, sw)
			report.Summary.NotAdmitted++
			continue
		}
		sw, err := switchReport(item, snap.State, snap.Cluster, snap.Now)
		if err != nil {
			return Report{}, err
		}
		report.Switches = append(report.Switches, sw)
		report.Summary.Total++
		if sw.Mode == "active" {
			report.Summary.Active++
		} else {
			report.Summary.Passive++
		}
		if !sw.InShape {
			report.Summary.NotInShape++
		}
	}
	return report, nil
}

func stateReport(state *v1beta1.DynamicIngressState) StateReport {
	out := StateReport{Name: state.Name, Namespace: state.Namespace, StatusCode: state.Status.StatusCode}
	if ready := meta.FindStatusCondition(state.Status.Conditions, v1beta1.ConditionReady); ready != nil {
		out.Reason, out.Message = ready.Reason, ready.Message
	}
	if next := state.Status.NextTransitionTime; next != nil {
		out.NextTransitionTime = ptr.To(next.UTC().Format(time.RFC3339))
	}
	return out
}

// switchReport is the item's line at now, its mode decided with state
// (nil: as if there were none to follow); cluster says the snapshot is a
// cluster state's, whose followers are named with their namespace.
func switchReport(item Item, state *v1beta1.DynamicIngressState, cluster bool, now time.Time) (SwitchReport, error) {
	sw := item.Switch
	cond, verdicts := item.decide(state, now)
	active := cond.Status == metav1.ConditionTrue
	inShape, err := InShape(item.Kind, sw, active, item.Live)
	if err != nil {
		return SwitchReport{}, err
	}
	key := target.Key(sw)
	out := SwitchReport{Kind: item.Kind.SwitchKind(), Name: sw.GetName(), Target: key.String(),
		Mode: decision.ModeName(active), InShape: inShape, Override: overrideName(sw.SwitchSpec().Override), Pin: pinReport(pinAt(sw, item.pinPolicy(state), now), now)}
	out.Synced, out.Reason, out.Message = StatusShows(sw, active)
	out.Served, out.ServedMessage = ServedOf(sw, active)
	if cluster {
		out.Namespace = sw.GetNamespace()
	}
	if item.Entries != nil {
		out.Combination = string(sw.SwitchSpec().Combination())
		out.Entries = entryReports(item.Entries, verdicts)
	}
	if _, ok := item.Kind.(target.HTTPRoute); ok {
		out.Accepted = accepted(item.Live)
	}
	return out, nil
}

// overrideName is spec.override as the plugin's override command takes it.
func overrideName(m v1beta1.Mode) string {
	switch m {
	case v1beta1.ModeActive:
		return "active"
	case v1beta1.ModePassive:
		return "passive"
	}
	return "none"
}

// InShape says whether the live target (nil when there is none) is the
// shape of the mode: the target the operator renders for it, with the
// fields the operator owns exactly those (the check the operator makes
// before it writes), or no target when the mode has none. A target the
// switch does not control is never in shape.
func InShape(kind target.Kind, sw target.Switch, active bool, live client.Object) (bool, error) {
	if target.Key(sw).Namespace != sw.GetNamespace() {
		return false, nil
	}
	desired, err := target.Render(kind, sw, active)
	if err != nil {
		return false, err
	}
	if live != nil && !metav1.IsControlledBy(live, sw) {
		return false, nil
	}
	if desired == nil {
		return live == nil || !live.GetDeletionTimestamp().IsZero(), nil
	}
	if live == nil || !live.GetDeletionTimestamp().IsZero() {
		return false, nil
	}
	return target.UpToDate(kind, live, desired)
}

// StatusShows says whether the switch's status shows the mode, as `wait`
// requires it: Active for it and Ready True, both for the switch's current
// generation; otherwise the reason and message of what it shows.
func StatusShows(sw target.Switch, active bool) (bool, string, string) {
	conds := sw.SwitchStatus().Conditions
	act := meta.FindStatusCondition(conds, v1beta1.ConditionActive)
	ready := meta.FindStatusCondition(conds, v1beta1.ConditionReady)
	gen := sw.GetGeneration()
	switch {
	case act == nil || ready == nil || act.ObservedGeneration != gen || ready.ObservedGeneration != gen:
		return false, "NotObserved", fmt.Sprintf("the status does not show generation %d yet", gen)
	case ready.Status != metav1.ConditionTrue:
		return false, ready.Reason, ready.Message
	case (act.Status == metav1.ConditionTrue) != active:
		return false, act.Reason, fmt.Sprintf("the status shows %s mode yet", decision.ModeName(!active))
	}
	return true, "", ""
}

// ServedOf says whether the status shows the mode served, as
// `wait --for=served` requires it: "" for a switch without spec.served;
// true when the Served condition is True, for the switch's current
// generation, with status.served showing the mode; false when it is False
// (NotServed) with the status showing the mode (StatusShows); checking
// otherwise, the mode not yet written or its check under way. The message
// says why when it is not true.
func ServedOf(sw target.Switch, active bool) (string, string) {
	if sw.SwitchSpec().Served == nil {
		return "", ""
	}
	status := sw.SwitchStatus()
	cond := meta.FindStatusCondition(status.Conditions, v1beta1.ConditionServed)
	gen := sw.GetGeneration()
	if cond == nil || cond.ObservedGeneration != gen {
		return ServedChecking, fmt.Sprintf("the status does not show the Served condition of generation %d yet", gen)
	}
	// A Served condition is about the mode the target was written in: one
	// of the other mode says nothing of this one.
	if shows, _, _ := StatusShows(sw, active); !shows {
		return ServedChecking, fmt.Sprintf("the status does not show %s mode yet", decision.ModeName(active))
	}
	mode := v1beta1.ModePassive
	if active {
		mode = v1beta1.ModeActive
	}
	switch cond.Status {
	case metav1.ConditionTrue:
		if status.Served != nil && status.Served.Mode == mode {
			return ServedTrue, ""
		}
		return ServedChecking, fmt.Sprintf("status.served does not show %s mode yet", decision.ModeName(active))
	case metav1.ConditionFalse:
		return ServedFalse, fmt.Sprintf("%s: %s", cond.Reason, cond.Message)
	}
	return ServedChecking, fmt.Sprintf("%s: %s", cond.Reason, cond.Message)
}

// accepted says whether every parent of the HTTPRoute accepted its current
// generation: its status.parents[].conditions type Accepted True with
// observedGeneration equal to the route's generation. Unknown when there
// is no route, or no parent has reported on it.
func accepted(live client.Object) string {
	route, ok := live.(*gatewayv1.HTTPRoute)
	if !ok || route == nil || len(route.Status.Parents) == 0 {
		return AcceptedUnknown
	}
	for _, parent := range route.Status.Parents {
		cond := meta.FindStatusCondition(parent.Conditions, string(gatewayv1.RouteConditionAccepted))
		if cond == nil || cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != route.Generation {
			return AcceptedFalse
		}
	}
	return AcceptedTrue
}

// StatusOf reads the state name in namespace ns and its switches of kinds
// (Read) and reports on them (Status): what `kubectl dynamic status` shows.
func StatusOf(ctx context.Context, c client.Reader, kinds []target.Kind, ns, name string) (*Snapshot, Report, error) {
	return StatusOfState(ctx, c, kinds, ns, v1beta1.StateReference{Kind: v1beta1.StateKindNamespaced, Name: name})
}

// StatusOfState is StatusOf for a state of either kind (ReadState).
func StatusOfState(ctx context.Context, c client.Reader, kinds []target.Kind, ns string, ref v1beta1.StateReference) (*Snapshot, Report, error) {
	return StatusOfStateAt(ctx, c, kinds, ns, ref, time.Now())
}

// StatusOfStateAt is StatusOfState read at now; for a state that follows a
// Service, the report also has the Service's ready count
// (ReadServiceCount) and how it stands against the answer (ServiceOf).
func StatusOfStateAt(ctx context.Context, c client.Reader, kinds []target.Kind, ns string, ref v1beta1.StateReference, now time.Time) (*Snapshot, Report, error) {
	snap, err := ReadState(ctx, c, kinds, ns, ref)
	if err != nil {
		return nil, Report{}, err
	}
	snap.Now = now
	report, err := Status(snap)
	if err != nil || snap.State.Spec.Service == nil {
		return snap, report, err
	}
	count, note, err := ReadServiceCount(ctx, c, snap.State)
	if err != nil {
		return nil, Report{}, err
	}
	if note != "" {
		report.Notes = append(report.Notes, note)
	}
	report.State.Service = ServiceOf(snap.State, count, now)
	return snap, report, nil
}

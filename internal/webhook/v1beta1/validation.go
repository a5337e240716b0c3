package v1beta1

import (
	"fmt"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/match"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/schedule"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

var statusCodePattern = regexp.MustCompile(`^[1-5][0-9][0-9]$`)

// Probe interval bounds (docs/behaviour.md).
const (
	MinProbeInterval = time.Second
	MaxProbeInterval = 24 * time.Hour
)

// MaxProbeSuccessThreshold bounds spec.probe.successThreshold
// (docs/behaviour.md): a change waits that many probes to be recorded.
const MaxProbeSuccessThreshold = 10

// MaxFixedBodyBytes bounds spec.fixedResponse.body. The body is copied into
// the state's status, and a status beyond etcd's request size limit could
// never be written.
const MaxFixedBodyBytes = v1beta1.MaxBodyBytes

// ValidateDynamicIngress checks what needs no cluster access. old is nil on
// create; guard is the manager's --probe-deny-cidrs and --probe-allow-hosts,
// which spec.served.url is held to. The object is expected to be defaulted.
func ValidateDynamicIngress(old, di *v1beta1.DynamicIngress, guard probe.Guard) field.ErrorList {
	if old == nil {
		return validateSwitch(target.Ingress{}, nil, di, guard)
	}
	return validateSwitch(target.Ingress{}, old, di, guard)
}

// ValidateDynamicHTTPRoute checks what needs no cluster access, as
// ValidateDynamicIngress does.
func ValidateDynamicHTTPRoute(old, dhr *v1beta1.DynamicHTTPRoute, guard probe.Guard) field.ErrorList {
	if old == nil {
		return validateSwitch(target.HTTPRoute{}, nil, dhr, guard)
	}
	return validateSwitch(target.HTTPRoute{}, old, dhr, guard)
}

// validateSwitch checks what every kind of switch shares: the target, at
// least one template, the state with expected or the list of them (anyOf,
// allOf), failurePolicy, override and served.
func validateSwitch(kind target.Kind, old, sw target.Switch, guard probe.Guard) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	targetPath := spec.Child("target")
	sws := sw.SwitchSpec()
	switchKind, targetKind := kind.SwitchKind(), kind.TargetGVK().Kind

	if sws.Target.Name == "" {
		errs = append(errs, field.Required(targetPath.Child("name"), fmt.Sprintf("the name of the %s to create and own", targetKind)))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(sws.Target.Name) {
			errs = append(errs, field.Invalid(targetPath.Child("name"), sws.Target.Name, msg))
		}
	}
	if ns := sws.Target.Namespace; ns != "" && ns != sw.GetNamespace() {
		errs = append(errs, field.Forbidden(targetPath.Child("namespace"),
			fmt.Sprintf("must be the %s's own namespace %q, not %q: a %s manages an %s of its own namespace only", switchKind, sw.GetNamespace(), ns, switchKind, targetKind)))
	}
	if old != nil && targetKey(old) != targetKey(sw) {
		errs = append(errs, field.Invalid(targetPath, targetKey(sw), fmt.Sprintf("field is immutable (it was %s): create a new %s for another target", targetKey(old), switchKind)))
	}

	_, hasPassive := kind.Template(sw, false)
	_, hasActive := kind.Template(sw, true)
	if !hasPassive && !hasActive {
		errs = append(errs, field.Required(spec, fmt.Sprintf("at least one of %s and %s must be set (null means no %s in that mode)",
			strings.TrimPrefix(kind.TemplateField(false), "spec."), strings.TrimPrefix(kind.TemplateField(true), "spec."), targetKind)))
	}
	errs = append(errs, validateFollowed(spec, followedOf(sw))...)
	errs = append(errs, validateEnum(spec.Child("failurePolicy"), sws.FailurePolicy,
		v1beta1.FailurePolicyPassive, v1beta1.FailurePolicyActive, v1beta1.FailurePolicyRetain)...)
	errs = append(errs, validateEnum(spec.Child("override"), sws.Override, v1beta1.ModeActive, v1beta1.ModePassive)...)
	if sws.Served != nil {
		errs = append(errs, validateServed(spec.Child("served"), sws.Served, guard)...)
	}
	return errs
}

// Bounds of spec.served.period and spec.served.timeout (docs/behaviour.md).
const (
	MinServedPeriod  = 250 * time.Millisecond
	MaxServedPeriod  = 10 * time.Second
	MinServedTimeout = 5 * time.Second
	MaxServedTimeout = 30 * time.Minute
)

// validateServed checks spec.served: its URL and headers as a probe's
// (the address guard and --probe-allow-hosts included), both matchers as
// expected is checked, and period and timeout within their bounds.
func validateServed(path *field.Path, served *v1beta1.ServedCheck, guard probe.Guard) field.ErrorList {
	var errs field.ErrorList
	if served.URL == "" {
		errs = append(errs, field.Required(path.Child("url"), "the absolute http or https URL, reached through the data plane, that answers as the current mode's shape once it is served"))
	} else {
		errs = append(errs, validateProbeURL(path.Child("url"), served.URL, guard)...)
	}
	errs = append(errs, validateHeaders(path.Child("headers"), served.Headers, guard)...)
	errs = append(errs, validateExpected(path.Child("active"), &served.Active)...)
	errs = append(errs, validateExpected(path.Child("passive"), &served.Passive)...)
	errs = append(errs, validateDurationRange(path.Child("period"), served.Period, MinServedPeriod, MaxServedPeriod)...)
	errs = append(errs, validateDurationRange(path.Child("timeout"), served.Timeout, MinServedTimeout, MaxServedTimeout)...)
	return errs
}

// validateDurationRange refuses a duration that is set and outside
// [lowest, highest].
func validateDurationRange(path *field.Path, d *metav1.Duration, lowest, highest time.Duration) field.ErrorList {
	if d == nil || (d.Duration >= lowest && d.Duration <= highest) {
		return nil
	}
	return field.ErrorList{field.Invalid(path, d.Duration.String(), fmt.Sprintf("must be at least %s and at most %s", decision.DurationText(lowest), decision.DurationText(highest)))}
}

// MaxStateEntries bounds spec.anyOf and spec.allOf, as the CRD's MaxItems
// does (docs/behaviour.md).
const MaxStateEntries = 8

// followed is how a switch names its states, as written: one state
// (state or stateRef, with expected) or a list (anyOf or allOf). The
// switch's SwitchSpec leaves the single fields out once a list is set;
// admission reads them all, to refuse a switch that sets both.
type followed struct {
	state        string
	stateRef     *v1beta1.StateReference
	expected     v1beta1.ExpectedResponse
	anyOf, allOf []v1beta1.StateEntry
}

// followedOf reads the state fields of a switch of either kind.
func followedOf(sw target.Switch) followed {
	switch o := sw.(type) {
	case *v1beta1.DynamicIngress:
		return followed{o.Spec.State, o.Spec.StateRef, o.Spec.Expected, o.Spec.AnyOf, o.Spec.AllOf}
	case *v1beta1.DynamicHTTPRoute:
		return followed{o.Spec.State, o.Spec.StateRef, o.Spec.Expected, o.Spec.AnyOf, o.Spec.AllOf}
	}
	sws := sw.SwitchSpec()
	return followed{sws.StateName, sws.StateRef, sws.Expected, sws.AnyOf, sws.AllOf}
}

// singleSet names the single-state fields that are set.
func (f followed) singleSet() []string {
	var set []string
	if f.state != "" {
		set = append(set, "state")
	}
	if f.stateRef != nil {
		set = append(set, "stateRef")
	}
	if f.expected != (v1beta1.ExpectedResponse{}) {
		set = append(set, "expected")
	}
	return set
}

// validateFollowed checks that the switch follows exactly one of a single
// state (state or stateRef, with expected), an anyOf list and an allOf
// list, and checks what it follows. A list that is present but empty
// counts as set: the schema refuses it, and so does validateEntries.
func validateFollowed(spec *field.Path, f followed) field.ErrorList {
	if f.anyOf == nil && f.allOf == nil {
		errs := validateStateReference(spec, f.state, f.stateRef)
		return append(errs, validateExpected(spec.Child("expected"), &f.expected)...)
	}
	var errs field.ErrorList
	lists := []struct {
		name    string
		entries []v1beta1.StateEntry
	}{{"anyOf", f.anyOf}, {"allOf", f.allOf}}
	if set := f.singleSet(); len(set) > 0 {
		list := lists[0].name
		if f.anyOf == nil {
			list = lists[1].name
		}
		verb := "is"
		if len(set) > 1 {
			verb = "are"
		}
		errs = append(errs, field.Forbidden(spec.Child(list), fmt.Sprintf(
			"anyOf and allOf replace state, stateRef and expected: set a list or a single state, not both, and %s %s set", strings.Join(set, " and "), verb)))
	}
	if f.anyOf != nil && f.allOf != nil {
		errs = append(errs, field.Forbidden(spec.Child("allOf"), "at most one of anyOf and allOf may be set, and anyOf is set"))
	}
	for _, l := range lists {
		if l.entries != nil {
			errs = append(errs, validateEntries(spec.Child(l.name), l.entries)...)
		}
	}
	return errs
}

// validateEntries checks spec.anyOf or spec.allOf: 1 to MaxStateEntries
// entries, each named by a DNS label unique in the list, and each checked
// as a single state is: exactly one of state and stateRef, and expected.
func validateEntries(path *field.Path, entries []v1beta1.StateEntry) field.ErrorList {
	var errs field.ErrorList
	switch n := len(entries); {
	case n == 0:
		errs = append(errs, field.Required(path, fmt.Sprintf("1 to %d entries, each a state or stateRef with its expected", MaxStateEntries)))
	case n > MaxStateEntries:
		errs = append(errs, field.TooMany(path, n, MaxStateEntries))
	}
	seen := make(map[string]bool, len(entries))
	for i, e := range entries {
		entry := path.Index(i)
		name := entry.Child("name")
		switch {
		case e.Name == "":
			errs = append(errs, field.Required(name, "a DNS label naming the entry in status.states, conditions and events"))
		case seen[e.Name]:
			errs = append(errs, field.Duplicate(name, e.Name))
		default:
			for _, msg := range validation.IsDNS1123Label(e.Name) {
				errs = append(errs, field.Invalid(name, e.Name, msg))
			}
		}
		seen[e.Name] = true
		errs = append(errs, validateStateReference(entry, e.State, e.StateRef)...)
		errs = append(errs, validateExpected(entry.Child("expected"), &e.Expected)...)
	}
	return errs
}

// validateStateReference checks that exactly one of state and stateRef
// under path (spec, or an entry of spec.anyOf or spec.allOf) names the
// state, and that the name is one an object can have.
func validateStateReference(path *field.Path, state string, stateRef *v1beta1.StateReference) field.ErrorList {
	var errs field.ErrorList
	switch {
	case state == "" && stateRef == nil:
		return field.ErrorList{field.Required(path, "exactly one of state and stateRef must be set: state names a DynamicIngressState in the same namespace, stateRef a state of either kind")}
	case state != "" && stateRef != nil:
		return field.ErrorList{field.Forbidden(path.Child("stateRef"), "exactly one of state and stateRef must be set, and state is set")}
	case state != "":
		for _, msg := range validation.IsDNS1123Subdomain(state) {
			errs = append(errs, field.Invalid(path.Child("state"), state, msg))
		}
		return errs
	}
	ref := path.Child("stateRef")
	errs = append(errs, validateEnum(ref.Child("kind"), stateRef.Kind, v1beta1.StateKindNamespaced, v1beta1.StateKindCluster)...)
	if stateRef.Name == "" {
		return append(errs, field.Required(ref.Child("name"), "the name of the state"))
	}
	for _, msg := range validation.IsDNS1123Subdomain(stateRef.Name) {
		errs = append(errs, field.Invalid(ref.Child("name"), stateRef.Name, msg))
	}
	return errs
}

// validateExpected checks an expected response at path (spec.expected, or
// an entry's): at least one field, a valid status code, a known bodyMatch,
// and an expression that compiles within the API server's CEL cost limits.
func validateExpected(path *field.Path, expected *v1beta1.ExpectedResponse) field.ErrorList {
	var errs field.ErrorList
	if expected.StatusCode == "" && expected.Body == nil && expected.Expression == "" {
		errs = append(errs, field.Required(path, "at least one of statusCode, body and expression must be set"))
	}
	errs = append(errs, validateStatusCode(path.Child("statusCode"), expected.StatusCode, true)...)
	errs = append(errs, validateEnum(path.Child("bodyMatch"), expected.BodyMatch, v1beta1.BodyMatchExact, v1beta1.BodyMatchContains)...)
	if err := match.CompileExpression(expected.Expression); err != nil {
		errs = append(errs, field.Invalid(path.Child("expression"), expected.Expression, err.Error()))
	}
	return errs
}

// validateEnum refuses a value that is set and not one of allowed.
func validateEnum[T ~string](path *field.Path, value T, allowed ...T) field.ErrorList {
	if value == "" || slices.Contains(allowed, value) {
		return nil
	}
	return field.ErrorList{field.NotSupported(path, value, allowed)}
}

// targetKey is "<namespace>/<name>" of the target, the namespace defaulted.
func targetKey(sw target.Switch) string {
	return target.Key(sw).String()
}

// targetTaken is the rejection of a new switch whose target another switch
// of its kind in the namespace already names: the two would take the
// target from each other whenever one of them is in a mode without it.
func targetTaken(kind target.Kind, namespace, name, other string) *field.Error {
	key := namespace + "/" + name
	return field.Invalid(field.NewPath("spec", "target"), key,
		fmt.Sprintf("%s %q already targets %s %s; each %s has at most one %s", kind.SwitchKind(), other, kind.TargetGVK().Kind, key, kind.TargetGVK().Kind, kind.SwitchKind()))
}

// otherTargeting returns the name of a switch in list, other than sw, that
// names the same target as sw; "" when there is none.
func otherTargeting(list []target.Switch, sw target.Switch) string {
	for _, o := range list {
		if o.GetName() != sw.GetName() && targetKey(o) == targetKey(sw) {
			return o.GetName()
		}
	}
	return ""
}

// targetExists is the rejection of a new switch whose target is already
// there.
func targetExists(kind target.Kind, namespace, name string) *field.Error {
	key := namespace + "/" + name
	targetKind := kind.TargetGVK().Kind
	return field.Invalid(field.NewPath("spec", "target"), key,
		fmt.Sprintf("%s %s already exists; a %s creates its target and never takes over an existing %s: delete it first or choose another name",
			targetKind, key, kind.SwitchKind(), targetKind))
}

// noTargetAPI is the rejection of a switch whose target kind the cluster
// does not serve (the Gateway API CRDs are not installed).
func noTargetAPI(kind target.Kind, name string) *field.Error {
	gvk := kind.TargetGVK()
	return field.Invalid(field.NewPath("spec", "target"), name,
		fmt.Sprintf("the cluster has no %s/%s %s API (install the Gateway API CRDs)", gvk.Group, gvk.Version, gvk.Kind))
}

func validateStatusCode(path *field.Path, code string, optional bool) field.ErrorList {
	if code == "" && optional {
		return nil
	}
	if !statusCodePattern.MatchString(code) {
		return field.ErrorList{field.Invalid(path, code, "must be an HTTP status code: three digits from 100 to 599")}
	}
	return nil
}

// ValidateDynamicIngressState checks a state; guard is the manager's
// --probe-deny-cidrs. The object is expected to be defaulted. A Service it
// follows is in its own namespace: spec.service.namespace may only repeat
// it.
func ValidateDynamicIngressState(state *v1beta1.DynamicIngressState, guard probe.Guard) field.ErrorList {
	errs := validateStateSpec(state, guard)
	if s := state.Spec.Service; s != nil && s.Namespace != "" && s.Namespace != state.Namespace && len(validation.IsDNS1123Label(s.Namespace)) == 0 {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "service", "namespace"), fmt.Sprintf(
			"must be the DynamicIngressState's own namespace %q, not %q: a DynamicIngressState may only follow a Service in its own namespace; use a ClusterDynamicIngressState to follow a Service in another namespace",
			state.Namespace, s.Namespace)))
	}
	return errs
}

// ValidateClusterDynamicIngressState checks a cluster state: its source as
// ValidateDynamicIngressState does, a Service's namespace (a cluster state
// has none of its own to default to), and its grant (spec.followers): from
// All or Selector, and with Selector a valid label selector.
func ValidateClusterDynamicIngressState(state *v1beta1.ClusterDynamicIngressState, guard probe.Guard) field.ErrorList {
	errs := validateStateSpec(state.StateView(), guard)
	if s := state.Spec.Service; s != nil && s.Namespace == "" {
		errs = append(errs, field.Required(field.NewPath("spec", "service", "namespace"), "a ClusterDynamicIngressState's service needs a namespace"))
	}
	return append(errs, validateGrant(field.NewPath("spec", "followers", "namespaces"), state.Spec.Followers.Namespaces)...)
}

// validateGrant checks spec.followers.namespaces.
func validateGrant(path *field.Path, grant v1beta1.FollowerNamespaces) field.ErrorList {
	switch grant.From {
	case "":
		return field.ErrorList{field.Required(path.Child("from"), "All or Selector: which namespaces' switches may follow this state")}
	case v1beta1.NamespacesFromAll:
		return nil
	case v1beta1.NamespacesFromSelector:
		if grant.Selector == nil {
			return field.ErrorList{field.Required(path.Child("selector"), "selector is required when from is Selector")}
		}
		return metav1validation.ValidateLabelSelector(grant.Selector, metav1validation.LabelSelectorValidationOptions{}, path.Child("selector"))
	}
	return field.ErrorList{field.NotSupported(path.Child("from"), grant.From, []v1beta1.FromNamespaces{v1beta1.NamespacesFromAll, v1beta1.NamespacesFromSelector})}
}

// validateStateSpec checks the source of a state of either kind.
func validateStateSpec(state *v1beta1.DynamicIngressState, guard probe.Guard) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	var set []string
	for name, isSet := range map[string]bool{"fixedResponse": state.Spec.FixedResponse != nil, "probe": state.Spec.Probe != nil,
		"schedule": state.Spec.Schedule != nil, "service": state.Spec.Service != nil} {
		if isSet {
			set = append(set, name)
		}
	}
	slices.Sort(set)
	switch {
	case len(set) > 1:
		errs = append(errs, field.Forbidden(spec, fmt.Sprintf("exactly one of fixedResponse, probe, schedule and service must be set, not %s", strings.Join(set, " and "))))
	case len(set) == 0:
		errs = append(errs, field.Required(spec, "exactly one of fixedResponse, probe, schedule and service must be set"))
	}
	if f := state.Spec.FixedResponse; f != nil {
		errs = append(errs, validateStatusCode(spec.Child("fixedResponse", "status"), f.Status, false)...)
		if len(f.Body) > MaxFixedBodyBytes {
			errs = append(errs, field.TooLong(spec.Child("fixedResponse", "body"), f.Body, MaxFixedBodyBytes))
		}
	}
	if p := state.Spec.Probe; p != nil {
		errs = append(errs, validateProbe(spec.Child("probe"), p, guard)...)
	}
	if s := state.Spec.Schedule; s != nil {
		errs = append(errs, validateSchedule(spec.Child("schedule"), s)...)
	}
	if s := state.Spec.Service; s != nil {
		errs = append(errs, validateServiceSource(spec.Child("service"), s)...)
	}
	return errs
}

// Bounds of spec.service (docs/behaviour.md), as the CRD's schema has them.
const (
	MinServiceMinReady = 1
	MaxServiceMinReady = 100000
	MaxServiceAfter    = time.Hour
)

// validateServiceSource checks what spec.service holds on either kind of
// state: a Service name, a namespace name when one is set (which namespace
// it may be is each kind's rule), minReady, and unavailableAfter and
// availableAfter within 0s-1h.
func validateServiceSource(path *field.Path, s *v1beta1.ServiceSource) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), "the name of the Service whose ready endpoints give the response"))
	} else {
		for _, msg := range validation.IsDNS1035Label(s.Name) {
			errs = append(errs, field.Invalid(path.Child("name"), s.Name, msg))
		}
	}
	// A namespace is a DNS-1123 label (it may start with a digit), a
	// Service's name a DNS-1035 label.
	if s.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(s.Namespace) {
			errs = append(errs, field.Invalid(path.Child("namespace"), s.Namespace, msg))
		}
	}
	if n := s.MinReady; n != nil && (*n < MinServiceMinReady || *n > MaxServiceMinReady) {
		errs = append(errs, field.Invalid(path.Child("minReady"), *n, fmt.Sprintf("must be at least %d and at most %d", MinServiceMinReady, MaxServiceMinReady)))
	}
	errs = append(errs, validateDurationRange(path.Child("unavailableAfter"), s.UnavailableAfter, 0, MaxServiceAfter)...)
	errs = append(errs, validateDurationRange(path.Child("availableAfter"), s.AvailableAfter, 0, MaxServiceAfter)...)
	return errs
}

// validateSchedule checks spec.schedule: the time zone, the cron
// expressions, durations and one-off times (docs/behaviour.md).
func validateSchedule(path *field.Path, spec *v1beta1.Schedule) field.ErrorList {
	s, problems := schedule.FromSpec(spec)
	if len(problems) == 0 {
		problems = schedule.Validate(s)
	}
	var errs field.ErrorList
	for _, p := range problems {
		errType := field.ErrorTypeInvalid
		if p.Value == "" {
			errType = field.ErrorTypeRequired
		}
		errs = append(errs, &field.Error{Type: errType, Field: path.String() + "." + p.Field, BadValue: p.Value, Detail: p.Detail})
	}
	return errs
}

func validateProbe(path *field.Path, p *v1beta1.HTTPProbe, guard probe.Guard) field.ErrorList {
	var errs field.ErrorList
	if p.Type != v1beta1.ProbeTypeHTTP {
		errs = append(errs, field.NotSupported(path.Child("type"), p.Type, []v1beta1.ProbeType{v1beta1.ProbeTypeHTTP}))
	}
	switch p.Method {
	case "GET", "HEAD", "POST":
	default:
		errs = append(errs, field.NotSupported(path.Child("method"), p.Method, []string{"GET", "HEAD", "POST"}))
	}
	errs = append(errs, validateProbeURL(path.Child("url"), p.URL, guard)...)

	interval := p.IntervalOrDefault()
	if interval < MinProbeInterval || interval > MaxProbeInterval {
		errs = append(errs, field.Invalid(path.Child("interval"), interval.String(), "must be at least 1s and at most 24h"))
	}
	if p.Timeout != nil {
		switch timeout := p.Timeout.Duration; {
		case timeout <= 0:
			errs = append(errs, field.Invalid(path.Child("timeout"), timeout.String(), "must be more than 0"))
		case timeout > interval:
			errs = append(errs, field.Invalid(path.Child("timeout"), timeout.String(), fmt.Sprintf("must not be longer than the interval (%s)", interval)))
		}
	}
	if p.FailureThreshold != nil && *p.FailureThreshold < 1 {
		errs = append(errs, field.Invalid(path.Child("failureThreshold"), *p.FailureThreshold, "must be at least 1"))
	}
	if n := p.SuccessThreshold; n != nil && (*n < 1 || *n > MaxProbeSuccessThreshold) {
		errs = append(errs, field.Invalid(path.Child("successThreshold"), *n, fmt.Sprintf("must be at least 1 and at most %d", MaxProbeSuccessThreshold)))
	}
	if err := match.CompileBodyExpression(p.BodyExpression); err != nil {
		errs = append(errs, field.Invalid(path.Child("bodyExpression"), p.BodyExpression, err.Error()))
	}
	errs = append(errs, validateHeaders(path.Child("headers"), p.Headers, guard)...)
	return errs
}

// validateHeaders checks the headers of a probe or of spec.served at path:
// a Host header held to the guard, valid names and values, and exactly one
// of value and valueFrom.
func validateHeaders(path *field.Path, headers []v1beta1.HTTPHeader, guard probe.Guard) field.ErrorList {
	errs := validateHostHeaders(path, headers, guard)
	for i, h := range headers {
		// Neither is shown: a value is often a bearer token, and an
		// invalid name is most often a whole "Name: value" line.
		if !httpguts.ValidHeaderFieldName(h.Name) {
			errs = append(errs, field.Invalid(path.Index(i).Child("name"), field.OmitValueType{}, headerNameProblem(h.Name)))
		}
		// Neither is the CRD's to refuse: `value: ""` is an empty literal,
		// which the schema sees and Go's omitempty field cannot tell from
		// none.
		if h.Value != "" && h.ValueFrom != nil {
			errs = append(errs, field.Invalid(path.Index(i), field.OmitValueType{}, "exactly one of value and valueFrom must be set"))
		}
		if h.ValueFrom != nil {
			errs = append(errs, validateSecretKeyRef(path.Index(i).Child("valueFrom", "secretKeyRef"), h.ValueFrom.SecretKeyRef)...)
		}
		if !httpguts.ValidHeaderFieldValue(h.Value) {
			errs = append(errs, field.Invalid(path.Index(i).Child("value"), field.OmitValueType{}, headerValueProblem(h.Value)))
		}
	}
	return errs
}

// validateSecretKeyRef checks that a Secret reference names a Secret and a
// key that can exist, so that a typo is refused at once rather than failing
// every probe.
func validateSecretKeyRef(path *field.Path, ref v1beta1.SecretKeySelector) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(ref.Name) {
		errs = append(errs, field.Invalid(path.Child("name"), ref.Name, msg))
	}
	for _, msg := range validation.IsConfigMapKey(ref.Key) {
		errs = append(errs, field.Invalid(path.Child("key"), ref.Key, msg))
	}
	return errs
}

// sensitiveHeaderWarnings returns an admission warning for every header at
// path (a probe's or spec.served's headers) whose literal value looks like
// a credential: Authorization, Proxy-Authorization and Cookie, and any
// name holding "token", "key" or "secret". Such a value is readable by
// everyone who can read the object of that kind (the view role included);
// valueFrom.secretKeyRef keeps it in a Secret.
func sensitiveHeaderWarnings(path *field.Path, kind string, headers []v1beta1.HTTPHeader) []string {
	var warnings []string
	for i, h := range headers {
		if h.Value == "" || !sensitiveHeader(h.Name) {
			continue
		}
		warnings = append(warnings, fmt.Sprintf("%s: header %q has a literal value that anyone who can read this %s can read; "+
			"put it in a Secret and use valueFrom.secretKeyRef", path.Index(i).Child("value"), h.Name, kind))
	}
	return warnings
}

// sensitiveHeader says whether a header's name suggests its value is a
// credential.
func sensitiveHeader(name string) bool {
	lower := strings.ToLower(name)
	switch lower {
	case "authorization", "proxy-authorization", "cookie":
		return true
	}
	return strings.Contains(lower, "token") || strings.Contains(lower, "key") || strings.Contains(lower, "secret")
}

// headerNameProblem says what is wrong with an invalid header name,
// without repeating it.
func headerNameProblem(name string) string {
	if strings.Contains(name, ":") {
		return "must be the header name alone, without a colon (what follows it goes in value); the name is not shown, it may hold a secret"
	}
	return "must be an HTTP header name (letters, digits and !#$%&'*+-.^_`|~ only); the name is not shown, it may hold a secret"
}

// headerValueProblem says what is wrong with an invalid header value,
// without repeating it: the most common mistake, a token written as a YAML
// block scalar, gets its own advice.
func headerValueProblem(value string) string {
	if trimmed := strings.TrimRight(value, "\r\n"); trimmed != value && httpguts.ValidHeaderFieldValue(trimmed) {
		return "must not end with a newline (a YAML block scalar `|` adds one: use `|-` or a quoted string); the value is not shown, it may hold a secret"
	}
	return "must not contain control characters (line breaks, bytes below 0x20 other than tab, 0x7f); the value is not shown, it may hold a secret"
}

// validateProbeURL checks the URL's form and host. Rejections show the URL
// as statuses and events do (probe.RedactURL): without userinfo, query and
// fragment, which may hold tokens.
func validateProbeURL(path *field.Path, raw string, guard probe.Guard) field.ErrorList {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return field.ErrorList{field.Invalid(path, probe.RedactURL(raw), "must be an absolute http or https URL with a host")}
	}
	if err := guard.CheckHost(u.Hostname()); err != nil {
		return field.ErrorList{field.Invalid(path, probe.RedactURL(raw), err.Error())}
	}
	return nil
}

// validateHostHeaders holds a Host header to the manager's
// --probe-allow-hosts like the URL's host (probe.Guard.CheckHostHeader):
// it names the virtual host the probe reads. The rejection names the host
// it found, never the value as written nor any other header.
func validateHostHeaders(path *field.Path, headers []v1beta1.HTTPHeader, guard probe.Guard) field.ErrorList {
	var errs field.ErrorList
	for i, h := range headers {
		if !strings.EqualFold(h.Name, "Host") || !httpguts.ValidHeaderFieldValue(h.Value) {
			continue
		}
		if err := guard.CheckHostHeader(h.Value); err != nil {
			errs = append(errs, field.Invalid(path.Index(i).Child("value"), field.OmitValueType{}, err.Error()))
		}
	}
	return errs
}

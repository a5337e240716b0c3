package v1beta1

import (
	"fmt"
	"net/url"
	"regexp"
	"time"

	"golang.org/x/net/http/httpguts"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/ingress"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
)

var statusCodePattern = regexp.MustCompile(`^[1-5][0-9][0-9]$`)

// Probe interval bounds (docs/behaviour.md).
const (
	MinProbeInterval = time.Second
	MaxProbeInterval = 24 * time.Hour
)

// MaxFixedBodyBytes bounds spec.fixedResponse.body. The body is copied into
// the state's status, and a status beyond etcd's request size limit could
// never be written.
const MaxFixedBodyBytes = 64 << 10

// ValidateDynamicIngress checks what needs no cluster access. old is nil on
// create. The object is expected to be defaulted.
func ValidateDynamicIngress(old, di *v1beta1.DynamicIngress) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	target := spec.Child("target")

	if di.Spec.Target.Name == "" {
		errs = append(errs, field.Required(target.Child("name"), "the name of the Ingress to create and own"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(di.Spec.Target.Name) {
			errs = append(errs, field.Invalid(target.Child("name"), di.Spec.Target.Name, msg))
		}
	}
	if ns := di.Spec.Target.Namespace; ns != "" && ns != di.Namespace {
		errs = append(errs, field.Forbidden(target.Child("namespace"),
			fmt.Sprintf("must be the DynamicIngress's own namespace %q, not %q: a DynamicIngress manages an Ingress of its own namespace only", di.Namespace, ns)))
	}
	if old != nil && targetKey(old) != targetKey(di) {
		errs = append(errs, field.Invalid(target, targetKey(di), fmt.Sprintf("field is immutable (it was %s): create a new DynamicIngress for another target", targetKey(old))))
	}

	if di.Spec.PassiveIngress == nil && di.Spec.ActiveIngress == nil {
		errs = append(errs, field.Required(spec, "at least one of passiveIngress and activeIngress must be set (null means no Ingress in that mode)"))
	}
	if di.Spec.State == "" {
		errs = append(errs, field.Required(spec.Child("state"), "the name of a DynamicIngressState in the same namespace"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(di.Spec.State) {
			errs = append(errs, field.Invalid(spec.Child("state"), di.Spec.State, msg))
		}
	}

	expected := spec.Child("expected")
	if di.Spec.Expected.StatusCode == "" && di.Spec.Expected.Body == nil {
		errs = append(errs, field.Required(expected, "at least one of statusCode and body must be set"))
	}
	errs = append(errs, validateStatusCode(expected.Child("statusCode"), di.Spec.Expected.StatusCode, true)...)
	return errs
}

// targetKey is "<namespace>/<name>" of the target, the namespace defaulted.
func targetKey(di *v1beta1.DynamicIngress) string {
	return ingress.TargetNamespace(di) + "/" + di.Spec.Target.Name
}

// targetTaken is the rejection of a new DynamicIngress whose target another
// DynamicIngress of the namespace already names: the two would take the
// Ingress from each other whenever one of them is in a mode without it.
func targetTaken(namespace, name, other string) *field.Error {
	key := namespace + "/" + name
	return field.Invalid(field.NewPath("spec", "target"), key,
		fmt.Sprintf("DynamicIngress %q already targets Ingress %s; each Ingress has at most one DynamicIngress", other, key))
}

// otherTargeting returns the name of a DynamicIngress in list, other than
// di, that names the same target as di; "" when there is none.
func otherTargeting(list []v1beta1.DynamicIngress, di *v1beta1.DynamicIngress) string {
	for i := range list {
		o := &list[i]
		if o.Name != di.Name && targetKey(o) == targetKey(di) {
			return o.Name
		}
	}
	return ""
}

// targetExists is the rejection of a new DynamicIngress whose target
// Ingress is already there.
func targetExists(namespace, name string) *field.Error {
	key := namespace + "/" + name
	return field.Invalid(field.NewPath("spec", "target"), key,
		fmt.Sprintf("Ingress %s already exists; a DynamicIngress creates its target and never takes over an existing Ingress: delete it first or choose another name", key))
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
// --probe-deny-cidrs. The object is expected to be defaulted.
func ValidateDynamicIngressState(state *v1beta1.DynamicIngressState, guard probe.Guard) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	switch {
	case state.Spec.FixedResponse != nil && state.Spec.Probe != nil:
		errs = append(errs, field.Forbidden(spec.Child("probe"), "exactly one of fixedResponse and probe may be set, and fixedResponse is set too"))
	case state.Spec.FixedResponse == nil && state.Spec.Probe == nil:
		errs = append(errs, field.Required(spec, "exactly one of fixedResponse and probe must be set"))
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
	for i, h := range p.Headers {
		if !httpguts.ValidHeaderFieldName(h.Name) {
			errs = append(errs, field.Invalid(path.Child("headers").Index(i).Child("name"), h.Name, "must be a valid HTTP header name"))
		}
		if !httpguts.ValidHeaderFieldValue(h.Value) {
			errs = append(errs, field.Invalid(path.Child("headers").Index(i).Child("value"), h.Value, "must be a valid HTTP header value (no control characters)"))
		}
	}
	return errs
}

func validateProbeURL(path *field.Path, raw string, guard probe.Guard) field.ErrorList {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return field.ErrorList{field.Invalid(path, raw, "must be an absolute http or https URL with a host")}
	}
	if err := guard.CheckHost(u.Hostname()); err != nil {
		return field.ErrorList{field.Invalid(path, probe.RedactURL(raw), err.Error())}
	}
	return nil
}

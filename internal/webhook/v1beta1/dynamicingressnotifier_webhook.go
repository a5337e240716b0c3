package v1beta1

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
)

// +kubebuilder:webhook:path=/mutate-ingress-dynamicingress-io-v1beta1-dynamicingressnotifier,mutating=true,failurePolicy=fail,sideEffects=None,groups=ingress.dynamicingress.io,resources=dynamicingressnotifiers,verbs=create;update,versions=v1beta1,name=mdynamicingressnotifier.ingress.dynamicingress.io,admissionReviewVersions=v1,timeoutSeconds=5,patch=`{"matchConditions":[{"name":"not-being-deleted","expression":"!has(object.metadata.deletionTimestamp)"},{"name":"spec-changed","expression":"request.operation != 'UPDATE' || object.spec != oldObject.spec"}]}`
// +kubebuilder:webhook:path=/validate-ingress-dynamicingress-io-v1beta1-dynamicingressnotifier,mutating=false,failurePolicy=fail,sideEffects=None,groups=ingress.dynamicingress.io,resources=dynamicingressnotifiers,verbs=create;update,versions=v1beta1,name=vdynamicingressnotifier.ingress.dynamicingress.io,admissionReviewVersions=v1,timeoutSeconds=5,patch=`{"matchConditions":[{"name":"not-being-deleted","expression":"!has(object.metadata.deletionTimestamp)"},{"name":"spec-changed","expression":"request.operation != 'UPDATE' || object.spec != oldObject.spec"}]}`

// DynamicIngressNotifierDefaulter sets a notifier's defaults.
type DynamicIngressNotifierDefaulter struct{}

var _ admission.Defaulter[*v1beta1.DynamicIngressNotifier] = DynamicIngressNotifierDefaulter{}

// Default applies DefaultDynamicIngressNotifier.
func (DynamicIngressNotifierDefaulter) Default(_ context.Context, n *v1beta1.DynamicIngressNotifier) error {
	DefaultDynamicIngressNotifier(n)
	return nil
}

// DefaultDynamicIngressNotifier sets the sink's format to CloudEvents,
// every event type when none is listed, and each state's kind, so that
// `kubectl get -o yaml` shows what is sent.
func DefaultDynamicIngressNotifier(n *v1beta1.DynamicIngressNotifier) {
	if n.Spec.Sink.Format == "" {
		n.Spec.Sink.Format = v1beta1.SinkFormatCloudEvents
	}
	if len(n.Spec.Events) == 0 {
		n.Spec.Events = slices.Clone(v1beta1.NotificationTypes)
	}
	for i := range n.Spec.States {
		if n.Spec.States[i].Kind == "" {
			n.Spec.States[i].Kind = v1beta1.StateKindNamespaced
		}
	}
}

// DynamicIngressNotifierValidator checks a notifier.
type DynamicIngressNotifierValidator struct {
	Guard probe.Guard
	// Requests decides who may set or change spec.sink: only a user who
	// may create DynamicIngressStates in the namespace (docs/security.md).
	Requests RequestAuthorizer
}

var _ admission.Validator[*v1beta1.DynamicIngressNotifier] = DynamicIngressNotifierValidator{}

const notifierKind = "DynamicIngressNotifier"

// ValidateCreate rejects an invalid notifier, and one created by a user
// who may not have the manager send requests from its namespace.
func (v DynamicIngressNotifierValidator) ValidateCreate(ctx context.Context, n *v1beta1.DynamicIngressNotifier) (admission.Warnings, error) {
	return v.validate(ctx, nil, n)
}

// ValidateUpdate rejects an invalid change; an update that leaves the spec
// alone passes.
func (v DynamicIngressNotifierValidator) ValidateUpdate(ctx context.Context, old, n *v1beta1.DynamicIngressNotifier) (admission.Warnings, error) {
	if !n.DeletionTimestamp.IsZero() || equality.Semantic.DeepEqual(old.Spec, n.Spec) {
		return nil, nil
	}
	return v.validate(ctx, old, n)
}

// validate checks n (old nil on create): the static rules, and a sink set
// or changed only by a user who may create DynamicIngressStates in the
// namespace (a notification is a request the manager sends). Other changes
// (the states, the events) need nothing more.
func (v DynamicIngressNotifierValidator) validate(ctx context.Context, old, n *v1beta1.DynamicIngressNotifier) (admission.Warnings, error) {
	errs := ValidateDynamicIngressNotifier(n, v.Guard)
	if sinkSetOrChanged(old, n) {
		errs = append(errs, checkRequestPermission(ctx, v.Requests, field.NewPath("spec", "sink"), sinkRequests, n.Namespace)...)
	}
	return notifierWarnings(n), invalid(n.Name, notifierKind, errs)
}

// ValidateDelete allows every deletion.
func (DynamicIngressNotifierValidator) ValidateDelete(context.Context, *v1beta1.DynamicIngressNotifier) (admission.Warnings, error) {
	return nil, nil
}

// notifierWarnings warn of credentials written in the sink's headers.
func notifierWarnings(n *v1beta1.DynamicIngressNotifier) admission.Warnings {
	return sensitiveHeaderWarnings(field.NewPath("spec", "sink", "headers"), notifierKind, n.Spec.Sink.Headers)
}

// ValidateDynamicIngressNotifier checks the states (1 to 32, each once,
// of a known kind), the event types, and the sink: an http or https URL
// the address guard admits, and valid headers.
func ValidateDynamicIngressNotifier(n *v1beta1.DynamicIngressNotifier, guard probe.Guard) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	states := spec.Child("states")
	switch l := len(n.Spec.States); {
	case l == 0:
		errs = append(errs, field.Required(states, "name at least one state"))
	case l > v1beta1.MaxNotifierStates:
		errs = append(errs, field.TooMany(states, l, v1beta1.MaxNotifierStates))
	}
	seen := map[v1beta1.StateReference]bool{}
	for i, ref := range n.Spec.States {
		path := states.Index(i)
		if ref.Kind == "" {
			ref.Kind = v1beta1.StateKindNamespaced
		}
		if ref.Kind != v1beta1.StateKindNamespaced && ref.Kind != v1beta1.StateKindCluster {
			errs = append(errs, field.NotSupported(path.Child("kind"), ref.Kind, []string{string(v1beta1.StateKindNamespaced), string(v1beta1.StateKindCluster)}))
		}
		for _, msg := range validation.IsDNS1123Subdomain(ref.Name) {
			errs = append(errs, field.Invalid(path.Child("name"), ref.Name, msg))
		}
		if seen[ref] {
			errs = append(errs, field.Duplicate(path, fmt.Sprintf("%s %s", ref.Kind, ref.Name)))
		}
		seen[ref] = true
	}
	for i, e := range n.Spec.Events {
		if !slices.Contains(v1beta1.NotificationTypes, e) {
			errs = append(errs, field.NotSupported(spec.Child("events").Index(i), e, notificationTypeNames()))
		}
	}
	sink := spec.Child("sink")
	errs = append(errs, validateProbeURL(sink.Child("url"), n.Spec.Sink.URL, guard)...)
	if f := n.Spec.Sink.Format; f != "" && f != v1beta1.SinkFormatCloudEvents && f != v1beta1.SinkFormatSlack {
		errs = append(errs, field.NotSupported(sink.Child("format"), f, []string{string(v1beta1.SinkFormatCloudEvents), string(v1beta1.SinkFormatSlack)}))
	}
	errs = append(errs, validateHeaders(sink.Child("headers"), n.Spec.Sink.Headers, guard)...)
	return errs
}

func notificationTypeNames() []string {
	out := make([]string, 0, len(v1beta1.NotificationTypes))
	for _, t := range v1beta1.NotificationTypes {
		out = append(out, string(t))
	}
	return out
}

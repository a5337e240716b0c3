package v1beta1

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
)

// +kubebuilder:webhook:path=/mutate-ingress-dynamicingress-io-v1beta1-dynamicingressstate,mutating=true,failurePolicy=fail,sideEffects=None,groups=ingress.dynamicingress.io,resources=dynamicingressstates,verbs=create;update,versions=v1beta1,name=mdynamicingressstate.ingress.dynamicingress.io,admissionReviewVersions=v1,timeoutSeconds=5,patch=`{"matchConditions":[{"name":"not-being-deleted","expression":"!has(object.metadata.deletionTimestamp)"},{"name":"spec-changed","expression":"request.operation != 'UPDATE' || object.spec != oldObject.spec"}]}`
// +kubebuilder:webhook:path=/validate-ingress-dynamicingress-io-v1beta1-dynamicingressstate,mutating=false,failurePolicy=fail,sideEffects=None,groups=ingress.dynamicingress.io,resources=dynamicingressstates,verbs=create;update,versions=v1beta1,name=vdynamicingressstate.ingress.dynamicingress.io,admissionReviewVersions=v1,timeoutSeconds=5,patch=`{"matchConditions":[{"name":"not-being-deleted","expression":"!has(object.metadata.deletionTimestamp)"},{"name":"spec-changed","expression":"request.operation != 'UPDATE' || object.spec != oldObject.spec"}]}`

// DynamicIngressStateDefaulter defaults DynamicIngressStates.
type DynamicIngressStateDefaulter struct{}

var _ admission.Defaulter[*v1beta1.DynamicIngressState] = DynamicIngressStateDefaulter{}

// Default implements admission.Defaulter.
func (DynamicIngressStateDefaulter) Default(_ context.Context, state *v1beta1.DynamicIngressState) error {
	DefaultDynamicIngressState(state)
	return nil
}

// DynamicIngressStateValidator validates DynamicIngressStates against the
// admission rules of docs/behaviour.md and the manager's probe guard.
type DynamicIngressStateValidator struct {
	Guard probe.Guard
}

var _ admission.Validator[*v1beta1.DynamicIngressState] = DynamicIngressStateValidator{}

// ValidateCreate implements admission.Validator.
func (v DynamicIngressStateValidator) ValidateCreate(_ context.Context, state *v1beta1.DynamicIngressState) (admission.Warnings, error) {
	return stateWarnings(state), invalid(state.Name, "DynamicIngressState", ValidateDynamicIngressState(state, v.Guard))
}

// stateWarnings are the admission warnings of a state that is accepted.
func stateWarnings(state *v1beta1.DynamicIngressState) admission.Warnings {
	if state.Spec.Probe == nil {
		return nil
	}
	return sensitiveHeaderWarnings(field.NewPath("spec", "probe", "headers"), "DynamicIngressState", state.Spec.Probe.Headers)
}

// ValidateUpdate implements admission.Validator. As for DynamicIngresses,
// an update that leaves the spec alone or comes during deletion is let
// through, so that a changed --probe-deny-cidrs does not block relabelling
// or deleting an existing state.
func (v DynamicIngressStateValidator) ValidateUpdate(_ context.Context, old, state *v1beta1.DynamicIngressState) (admission.Warnings, error) {
	if !state.DeletionTimestamp.IsZero() || equality.Semantic.DeepEqual(old.Spec, state.Spec) {
		return nil, nil
	}
	return stateWarnings(state), invalid(state.Name, "DynamicIngressState", ValidateDynamicIngressState(state, v.Guard))
}

// ValidateDelete implements admission.Validator.
func (DynamicIngressStateValidator) ValidateDelete(context.Context, *v1beta1.DynamicIngressState) (admission.Warnings, error) {
	return nil, nil
}

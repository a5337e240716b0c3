package v1beta1

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
)

// +kubebuilder:webhook:path=/mutate-ingress-dynamicingress-io-v1beta1-clusterdynamicingressstate,mutating=true,failurePolicy=fail,sideEffects=None,groups=ingress.dynamicingress.io,resources=clusterdynamicingressstates,verbs=create;update,versions=v1beta1,name=mclusterdynamicingressstate.ingress.dynamicingress.io,admissionReviewVersions=v1,timeoutSeconds=5,patch=`{"matchConditions":[{"name":"not-being-deleted","expression":"!has(object.metadata.deletionTimestamp)"},{"name":"spec-changed","expression":"request.operation != 'UPDATE' || object.spec != oldObject.spec"}]}`
// +kubebuilder:webhook:path=/validate-ingress-dynamicingress-io-v1beta1-clusterdynamicingressstate,mutating=false,failurePolicy=fail,sideEffects=None,groups=ingress.dynamicingress.io,resources=clusterdynamicingressstates,verbs=create;update,versions=v1beta1,name=vclusterdynamicingressstate.ingress.dynamicingress.io,admissionReviewVersions=v1,timeoutSeconds=5,patch=`{"matchConditions":[{"name":"not-being-deleted","expression":"!has(object.metadata.deletionTimestamp)"},{"name":"spec-changed","expression":"request.operation != 'UPDATE' || object.spec != oldObject.spec"}]}`

// ClusterDynamicIngressStateDefaulter sets a cluster state's probe and
// Service defaults, as a DynamicIngressState's.
type ClusterDynamicIngressStateDefaulter struct{}

var _ admission.Defaulter[*v1beta1.ClusterDynamicIngressState] = ClusterDynamicIngressStateDefaulter{}

// Default applies DefaultDynamicIngressState to the state's source: the
// view shares its probe and service with the cluster state.
func (ClusterDynamicIngressStateDefaulter) Default(_ context.Context, state *v1beta1.ClusterDynamicIngressState) error {
	DefaultDynamicIngressState(state.StateView())
	return nil
}

// ClusterDynamicIngressStateValidator checks a cluster state: its source
// as a DynamicIngressState's, and its grant.
type ClusterDynamicIngressStateValidator struct {
	Guard probe.Guard
}

var _ admission.Validator[*v1beta1.ClusterDynamicIngressState] = ClusterDynamicIngressStateValidator{}

// ValidateCreate rejects an invalid cluster state.
func (v ClusterDynamicIngressStateValidator) ValidateCreate(_ context.Context, state *v1beta1.ClusterDynamicIngressState) (admission.Warnings, error) {
	return clusterStateWarnings(state), invalid(state.Name, string(v1beta1.StateKindCluster), ValidateClusterDynamicIngressState(state, v.Guard))
}

// ValidateUpdate rejects an invalid change; an update that leaves the spec
// alone, or of a state being deleted, passes.
func (v ClusterDynamicIngressStateValidator) ValidateUpdate(_ context.Context, old, state *v1beta1.ClusterDynamicIngressState) (admission.Warnings, error) {
	if !state.DeletionTimestamp.IsZero() || equality.Semantic.DeepEqual(old.Spec, state.Spec) {
		return nil, nil
	}
	return clusterStateWarnings(state), invalid(state.Name, string(v1beta1.StateKindCluster), ValidateClusterDynamicIngressState(state, v.Guard))
}

// ValidateDelete allows every deletion: the followers fall back on their
// failurePolicy with StateNotFound.
func (ClusterDynamicIngressStateValidator) ValidateDelete(context.Context, *v1beta1.ClusterDynamicIngressState) (admission.Warnings, error) {
	return nil, nil
}

// clusterStateWarnings are a DynamicIngressState's warnings, and one for a
// selector that from All ignores.
func clusterStateWarnings(state *v1beta1.ClusterDynamicIngressState) admission.Warnings {
	warnings := stateWarnings(state.StateView())
	if grant := state.Spec.Followers.Namespaces; grant.From == v1beta1.NamespacesFromAll && grant.Selector != nil {
		warnings = append(warnings, "spec.followers.namespaces.selector: ignored: from is All, which admits every namespace; use from: Selector to admit only the namespaces it selects")
	}
	return warnings
}

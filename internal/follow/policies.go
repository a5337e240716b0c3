package follow

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
)

// Policies reads the override policies of the states a switch in
// namespace follows (spec's entries), for decision.MergePolicies. A state
// that does not exist, or that the reader may not read, holds the pin to
// nothing and is left out. Another error of a read is returned, with the
// policies of the states read.
func Policies(ctx context.Context, r client.Reader, namespace string, spec v1beta1.SwitchSpec) ([]decision.NamedPolicy, error) {
	var (
		out  []decision.NamedPolicy
		errs []error
	)
	for _, e := range spec.Entries() {
		var state interface {
			client.Object
			StateView() *v1beta1.DynamicIngressState
		} = &v1beta1.DynamicIngressState{}
		key := client.ObjectKey{Namespace: namespace, Name: e.State.Name}
		if e.State.IsCluster() {
			state, key = &v1beta1.ClusterDynamicIngressState{}, client.ObjectKey{Name: e.State.Name}
		}
		err := r.Get(ctx, key, state)
		switch {
		case apierrors.IsNotFound(err), apierrors.IsForbidden(err), meta.IsNoMatchError(err):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("reading %s: %w", e.State, err))
			continue
		}
		out = append(out, decision.NamedPolicy{State: e.State.String(), Policy: state.StateView().Spec.OverridePolicy})
	}
	return out, errors.Join(errs...)
}

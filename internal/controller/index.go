package controller

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// IndexDynamicIngressState is the field index of DynamicIngresses by the
// name of their state (spec.state). It lets a state change find every
// DynamicIngress it drives without a full list.
const IndexDynamicIngressState = "spec.state"

// SetupIndexes registers the field indexes the controllers use. Call it once,
// before the manager starts.
func SetupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	return mgr.GetFieldIndexer().IndexField(ctx, &v1beta1.DynamicIngress{}, IndexDynamicIngressState,
		func(obj client.Object) []string {
			return []string{obj.(*v1beta1.DynamicIngress).Spec.State}
		})
}

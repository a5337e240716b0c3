// Package index holds the field indexes of the manager's cache, shared by the
// reconcilers, their map functions and the admission webhooks. Each key is a
// constant registered once, by Setup, before the manager starts.
package index

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

const (
	// DynamicIngressState indexes DynamicIngresses by the name of their
	// state (spec.state), so a state change finds every DynamicIngress it
	// drives without a full list.
	DynamicIngressState = "spec.state"
	// DynamicIngressTarget indexes DynamicIngresses by the name of their
	// target Ingress (spec.target.name), so that two DynamicIngresses never
	// share one target.
	DynamicIngressTarget = "spec.target.name"
)

// Setup registers every index with the manager's field indexer.
func Setup(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &v1beta1.DynamicIngress{}, DynamicIngressState, func(obj client.Object) []string {
		return []string{obj.(*v1beta1.DynamicIngress).Spec.State}
	}); err != nil {
		return err
	}
	return indexer.IndexField(ctx, &v1beta1.DynamicIngress{}, DynamicIngressTarget, func(obj client.Object) []string {
		return []string{obj.(*v1beta1.DynamicIngress).Spec.Target.Name}
	})
}

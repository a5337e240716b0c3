// Package index holds the field indexes of the manager's cache, shared by the
// reconcilers, their map functions and the admission webhooks. Each key is a
// constant registered once, by Setup, before the manager starts.
package index

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

const (
	// State indexes switches (DynamicIngresses, DynamicHTTPRoutes) by the
	// name of the DynamicIngressStates they follow (spec.state, or
	// spec.stateRef of that kind, or any entry of spec.anyOf / spec.allOf),
	// so a state change finds every switch it drives without a full list.
	State = "spec.state"
	// ClusterState indexes switches by the name of the
	// ClusterDynamicIngressStates they follow (spec.stateRef of that kind,
	// or an entry's), in every namespace.
	ClusterState = "spec.stateRef.cluster"
	// Target indexes switches by the name of their target (spec.target.name),
	// so that two switches never share one target.
	Target = "spec.target.name"
	// NotifierState indexes DynamicIngressNotifiers by the states they
	// name (NotifierStateKey), so a state's change finds its notifiers.
	NotifierState = "spec.states"
	// Service indexes states of either kind by the Service they follow
	// (ServiceKey), so a change of its ready endpoints finds them.
	Service = "spec.service"
)

// ServiceKey is the Service index key of a Service: "namespace/name".
func ServiceKey(key types.NamespacedName) string { return key.String() }

// SetupStates registers the Service index of DynamicIngressStates and, with
// clusterStates, of ClusterDynamicIngressStates.
func SetupStates(ctx context.Context, indexer client.FieldIndexer, clusterStates bool) error {
	objs := []client.Object{&v1beta1.DynamicIngressState{}}
	if clusterStates {
		objs = append(objs, &v1beta1.ClusterDynamicIngressState{})
	}
	for _, obj := range objs {
		err := indexer.IndexField(ctx, obj, Service, func(o client.Object) []string {
			state := o.(interface {
				StateView() *v1beta1.DynamicIngressState
			}).StateView()
			src := state.Spec.Service
			if src == nil {
				return nil
			}
			ns := src.Namespace
			if ns == "" {
				ns = state.Namespace
			}
			return []string{ServiceKey(types.NamespacedName{Namespace: ns, Name: src.Name})}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// NotifierStateKey is the NotifierState key of a state: its kind and name.
func NotifierStateKey(ref v1beta1.StateReference) string {
	if ref.IsCluster() {
		return string(v1beta1.StateKindCluster) + "/" + ref.Name
	}
	return string(v1beta1.StateKindNamespaced) + "/" + ref.Name
}

// switchSpec is what both kinds of switch have.
type switchSpec interface {
	client.Object
	SwitchSpec() v1beta1.SwitchSpec
}

// Setup registers every index, for both kinds of switch and for
// notifiers, with the manager's cache. State and Target are asked within a
// namespace only, so they are kept in namespaces only (InNamespace).
func Setup(ctx context.Context, c cache.Cache) error {
	for _, obj := range []switchSpec{&v1beta1.DynamicIngress{}, &v1beta1.DynamicHTTPRoute{}} {
		if err := InNamespace(ctx, c, obj, State, func(o client.Object) []string {
			return followed(o.(switchSpec).SwitchSpec(), false)
		}); err != nil {
			return err
		}
		if err := c.IndexField(ctx, obj, ClusterState, func(o client.Object) []string {
			return followed(o.(switchSpec).SwitchSpec(), true)
		}); err != nil {
			return err
		}
		if err := InNamespace(ctx, c, obj, Target, func(o client.Object) []string {
			return []string{o.(switchSpec).SwitchSpec().Target.Name}
		}); err != nil {
			return err
		}
	}
	return c.IndexField(ctx, &v1beta1.DynamicIngressNotifier{}, NotifierState, func(o client.Object) []string {
		var keys []string
		for _, ref := range o.(*v1beta1.DynamicIngressNotifier).Spec.States {
			keys = append(keys, NotifierStateKey(ref))
		}
		return keys
	})
}

// InNamespace registers a field index of obj's kind like
// client.FieldIndexer.IndexField, but keeps each value under its
// namespace only: IndexField keeps it twice, under its namespace and under
// all namespaces, and at 10 000 switches the second copy of a one-to-one
// index such as Target costs about 3 MiB (docs/benchmarks.md, "Memory at
// rest"). A List with client.MatchingFields on such a field must name a
// namespace (client.InNamespace); without one it finds nothing.
//
// The index's name and keys are the ones controller-runtime's cache reader
// looks up ("field:" + field, "namespace/value"). A namespace-restricted
// cache (--namespaces) hands AddIndexers to each namespace's informer. The
// envtest suites list through both indexes: a state's flip finds its
// followers by State, and a second switch naming a taken target is
// refused by Target.
func InNamespace(ctx context.Context, c cache.Informers, obj client.Object, field string, extract client.IndexerFunc) error {
	inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	return inf.AddIndexers(toolscache.Indexers{"field:" + field: func(raw any) ([]string, error) {
		o, ok := raw.(client.Object)
		if !ok {
			return nil, fmt.Errorf("object of type %T is not an Object", raw)
		}
		vals := extract(o)
		keys := make([]string, len(vals))
		for i, v := range vals {
			keys[i] = o.GetNamespace() + "/" + v
		}
		return keys, nil
	}})
}

// followed are the names of the states of one kind (cluster or not) that a
// switch follows: its state, or every entry's of spec.anyOf / spec.allOf,
// each name once.
func followed(spec v1beta1.SwitchSpec, cluster bool) []string {
	if spec.Combination() == v1beta1.CombinationSingle {
		if spec.State.IsCluster() == cluster {
			return []string{spec.State.Name}
		}
		return nil
	}
	var out []string
	for _, e := range spec.Entries() {
		if e.State.IsCluster() == cluster && !slices.Contains(out, e.State.Name) {
			out = append(out, e.State.Name)
		}
	}
	return out
}

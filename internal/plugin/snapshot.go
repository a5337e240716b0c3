// Package plugin is what the kubectl dynamic plugin computes
// (docs/kubectl-dynamic.md): a snapshot of one state and the switches that
// follow it, read with list calls, and pure functions over it that call the
// operator's own decision (package decision) and rendering (package target).
// The commands in cmd/kubectl-dynamic are thin shells around it.
package plugin

import (
	"context"
	"errors"
	"fmt"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// Item is one switch that follows the state, with its live target (nil
// when there is none).
type Item struct {
	Kind   target.Kind
	Switch target.Switch
	Live   client.Object
}

// Snapshot is a state and every switch of its namespace that follows it,
// as read at one moment.
type Snapshot struct {
	State *v1beta1.DynamicIngressState
	Items []Item
}

// NotFoundError says that an object the command names does not exist.
type NotFoundError struct {
	Kind, Name, Namespace string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s %q not found in namespace %q", e.Kind, e.Name, e.Namespace)
}

// Kinds are the adapters of the switch kinds the cluster serves: Ingress
// always, HTTPRoute when the Gateway API CRD is installed (with its
// defaults when the CRD can be read).
func Kinds(ctx context.Context, c client.Reader) []target.Kind {
	kinds := []target.Kind{target.Ingress{}}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	err := c.Get(ctx, types.NamespacedName{Name: target.HTTPRouteCRDName}, crd)
	switch {
	case err == nil:
		if kind, err := target.NewHTTPRoute(crd); err == nil {
			return append(kinds, kind)
		}
		return append(kinds, target.HTTPRoute{})
	case apierrors.IsNotFound(err):
		return kinds
	default:
		// Not allowed to read CRDs: HTTPRoutes without their defaults
		// (an in-shape check may then see a difference in a defaulted
		// field; the operator itself reads the defaults).
		return append(kinds, target.HTTPRoute{})
	}
}

// Read reads the state name in namespace ns and the switches of every kind
// that follow it, with their targets: one list per switch kind and one per
// target kind (the targets the operator manages carry its managed-by
// label), and a get only for a target the list did not have (an object at
// the target's name that the operator does not manage).
func Read(ctx context.Context, c client.Reader, kinds []target.Kind, ns, name string) (*Snapshot, error) {
	state := &v1beta1.DynamicIngressState{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, state); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &NotFoundError{Kind: "state", Name: name, Namespace: ns}
		}
		return nil, fmt.Errorf("reading state %q in namespace %q: %w", name, ns, err)
	}
	snap := &Snapshot{State: state}
	for _, kind := range kinds {
		items, err := readKind(ctx, c, kind, ns, name)
		if err != nil {
			return nil, err
		}
		snap.Items = append(snap.Items, items...)
	}
	return snap, nil
}

// readKind reads the switches of one kind that follow the state, and their
// targets.
func readKind(ctx context.Context, c client.Reader, kind target.Kind, ns, state string) ([]Item, error) {
	list := kind.NewSwitchList()
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing %ss in namespace %q: %w", kind.SwitchKind(), ns, err)
	}
	var items []Item
	for _, sw := range kind.SwitchItems(list) {
		if ref := sw.SwitchSpec().State; !ref.IsCluster() && ref.Name == state {
			items = append(items, Item{Kind: kind, Switch: sw})
		}
	}
	if len(items) == 0 {
		return nil, nil
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Switch.GetName() < items[j].Switch.GetName() })
	targets, err := listTargets(ctx, c, kind, ns)
	if err != nil {
		return nil, err
	}
	for i := range items {
		key := target.Key(items[i].Switch)
		if key.Namespace != ns {
			// The operator refuses a target in another namespace and
			// writes nothing there: there is no target to show.
			continue
		}
		if live, ok := targets[key.Name]; ok {
			items[i].Live = live
			continue
		}
		live := kind.NewTarget()
		err := c.Get(ctx, key, live)
		switch {
		case err == nil:
			items[i].Live = live
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("reading %s %s: %w", kind.TargetGVK().Kind, key, err)
		}
	}
	return items, nil
}

// listTargets lists the targets of kind in ns that the operator manages,
// by name.
func listTargets(ctx context.Context, c client.Reader, kind target.Kind, ns string) (map[string]client.Object, error) {
	list := kind.NewTargetList()
	if err := c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{v1beta1.LabelManagedBy: v1beta1.ManagedByValue}); err != nil {
		return nil, fmt.Errorf("listing %ss in namespace %q: %w", kind.TargetGVK().Kind, ns, err)
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make(map[string]client.Object, len(objs))
	for _, o := range objs {
		obj, ok := o.(client.Object)
		if !ok {
			return nil, errors.New("a listed target is not an object")
		}
		out[obj.GetName()] = obj
	}
	return out, nil
}

// RESTConfig is cfg as the plugin uses it: a copy without a client-side
// rate limit (client-go's default of 5 requests/s made a preview of 2000
// switches take minutes). The API server's priority and fairness still
// limits what it accepts, and the plugin keeps at most a bounded number of
// requests in flight (DryRunDiffs' workers).
func RESTConfig(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.QPS = -1
	return out
}

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
	"maps"
	"sort"
	"time"

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
	// NotAdmitted is set for a follower of a cluster state whose status
	// says the state's grant does not admit its namespace: the operator
	// decides it as if the state were gone (its failurePolicy; for a list,
	// its other entries and then its failurePolicy).
	NotAdmitted bool
	// Entries are, for a switch with spec.anyOf or spec.allOf, its
	// entries with the states of the others than the snapshot's own
	// (resolveEntries); nil for a single state.
	Entries []ItemEntry
}

// notAdmitted says whether a follower's status, at its current generation,
// says its cluster state does not admit its namespace. The plugin reads no
// Namespace (view does not grant cluster-scoped reads), so it takes the
// operator's word, which follows a label change within a second or two.
func notAdmitted(sw target.Switch) bool {
	ready := meta.FindStatusCondition(sw.SwitchStatus().Conditions, v1beta1.ConditionReady)
	return ready != nil && ready.Reason == v1beta1.ReasonStateNotAdmitted && ready.ObservedGeneration == sw.GetGeneration()
}

// Snapshot is a state and every switch that follows it (in the state's
// namespace; for a cluster state, in the namespaces read), as read at one
// moment. A cluster state's State is its view (StateView).
type Snapshot struct {
	State   *v1beta1.DynamicIngressState
	Cluster bool
	Items   []Item
	// Notes say what the plugin could not read: the switches with a list
	// it may not list, the states of entries it may not read (counted
	// Unknown).
	Notes []string
	// Now is the moment the switches' pins are judged at, as the operator
	// judges them: a pin whose spec.overrideUntil is not after Now has
	// ended, and its switch follows its state (docs/behaviour.md, "Pins
	// that end"). ReadState sets the clock's.
	Now time.Time
}

// NotFoundError says that an object the command names does not exist.
type NotFoundError struct {
	Kind, Name, Namespace string
}

func (e *NotFoundError) Error() string {
	if e.Namespace == "" {
		return fmt.Sprintf("%s %q not found", e.Kind, e.Name)
	}
	return fmt.Sprintf("%s %q not found in namespace %q", e.Kind, e.Name, e.Namespace)
}

// ReadState reads the state ref names and its followers: a
// DynamicIngressState's in ns (Read), a ClusterDynamicIngressState's in ns,
// or in every namespace when ns is "" (readCluster).
func ReadState(ctx context.Context, c client.Reader, kinds []target.Kind, ns string, ref v1beta1.StateReference) (*Snapshot, error) {
	read := Read
	if ref.IsCluster() {
		read = readCluster
	}
	snap, err := read(ctx, c, kinds, ns, ref.Name)
	if err != nil {
		return nil, err
	}
	snap.Now = time.Now()
	return snap, nil
}

// readCluster reads a cluster state and its followers in ns (every
// namespace when ""): one list per switch kind, selected on the server by
// spec.stateRef.name where the CRD allows it, and one list of managed
// targets per kind and namespace that has followers.
func readCluster(ctx context.Context, c client.Reader, kinds []target.Kind, ns, name string) (*Snapshot, error) {
	state := &v1beta1.ClusterDynamicIngressState{}
	if err := c.Get(ctx, types.NamespacedName{Name: name}, state); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &NotFoundError{Kind: "cluster state", Name: name}
		}
		return nil, fmt.Errorf("reading cluster state %q: %w", name, err)
	}
	snap := &Snapshot{State: state.StateView(), Cluster: true}
	ref := v1beta1.StateReference{Kind: v1beta1.StateKindCluster, Name: name}
	reader := newStateReader(ctx, c)
	for _, kind := range kinds {
		listedNamespaces := map[string]struct{}{}
		items, note, err := listClusterFollowers(ctx, c, kind, ns, name)
		if err != nil {
			return nil, err
		}
		if note != "" {
			snap.Notes = append(snap.Notes, note)
		}
		withEntries(items, ref, reader.lookup)
		// The targets of the namespaces that have followers, a list each:
		// a user may read only some namespaces.
		targets := map[types.NamespacedName]client.Object{}
		for _, item := range items {
			namespace := item.Switch.GetNamespace()
			if _, listed := listedNamespaces[namespace]; listed {
				continue
			}
			listedNamespaces[namespace] = struct{}{}
			inNamespace, err := listTargets(ctx, c, kind, namespace)
			if err != nil {
				return nil, err
			}
			maps.Copy(targets, inNamespace)
		}
		if err := attachTargets(items, targets, nil); err != nil {
			return nil, err
		}
		snap.Items = append(snap.Items, items...)
	}
	snap.Notes = append(snap.Notes, unreadableNotes(snap.Items)...)
	return snap, nil
}

// listClusterFollowers lists the switches of kind in ns ("" every
// namespace) that follow the cluster state name (clusterFollowers):
// selected on the server by spec.stateRef.name where the CRD allows it,
// with those that have a list (listLists; note says when the user may not
// list them). None when the cluster does not serve the kind.
func listClusterFollowers(ctx context.Context, c client.Reader, kind target.Kind, ns, name string) (items []Item, note string, err error) {
	list := kind.NewSwitchList()
	err = c.List(ctx, list, client.InNamespace(ns), client.MatchingFields{stateRefField: name})
	unselected := false
	if apierrors.IsBadRequest(err) {
		// A CRD without selectable fields: select here.
		err, unselected = c.List(ctx, list, client.InNamespace(ns)), true
	}
	if meta.IsNoMatchError(err) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("listing %s: %w", kindPlural(kind.SwitchKind()), err)
	}
	switches := kind.SwitchItems(list)
	if !unselected {
		// spec.stateRef.name cannot see the states a list names: the
		// switches with a list come with a list of their own.
		lists, listsNote, err := listLists(ctx, c, kind, ns)
		if err != nil {
			return nil, "", err
		}
		note = listsNote
		switches = append(switches, lists...)
	}
	return clusterFollowers(kind, switches, name), note, nil
}

// listLists lists the switches of kind in ns ("" every namespace) that
// have a list (spec.anyOf or spec.allOf), selected on the server as those
// with neither spec.state nor spec.stateRef.name (an absent selectable
// field is empty). A user who may list switches only by state (an
// authorizer that reads field selectors) gets a note instead.
func listLists(ctx context.Context, c client.Reader, kind target.Kind, ns string) ([]target.Switch, string, error) {
	list := kind.NewSwitchList()
	err := c.List(ctx, list, client.InNamespace(ns), listsSelector())
	switch {
	case err == nil:
		return kind.SwitchItems(list), "", nil
	case apierrors.IsForbidden(err):
		return nil, listsForbidden(kind, ns, err), nil
	}
	return nil, "", fmt.Errorf("listing %s with anyOf or allOf: %w", kindPlural(kind.SwitchKind()), err)
}

// listsSelector selects the switches with neither spec.state nor
// spec.stateRef.name: those with spec.anyOf or spec.allOf.
func listsSelector() client.MatchingFields {
	return client.MatchingFields{stateField: "", stateRefField: ""}
}

// listsForbidden is the note for switches with a list that the user may
// not list.
func listsForbidden(kind target.Kind, ns string, err error) string {
	where := fmt.Sprintf("in namespace %q", ns)
	if ns == "" {
		where = "in every namespace"
	}
	return fmt.Sprintf("%s with anyOf or allOf are left out: listing them %s needs list on %s without a selector on the state: %s",
		kindPlural(kind.SwitchKind()), where, resourceName(v1beta1.GroupVersion.WithKind(kind.SwitchKind())), oneLineError(err))
}

// clusterFollowers are the switches of kind among switches that follow the
// cluster state name (its single state, or an entry of a list), by
// namespace and name, each once.
func clusterFollowers(kind target.Kind, switches []target.Switch, name string) []Item {
	var items []Item
	seen := map[types.NamespacedName]bool{}
	for _, sw := range switches {
		key := client.ObjectKeyFromObject(sw)
		if seen[key] {
			continue
		}
		seen[key] = true
		if follows(sw, v1beta1.StateReference{Kind: v1beta1.StateKindCluster, Name: name}) {
			items = append(items, Item{Kind: kind, Switch: sw, NotAdmitted: notAdmitted(sw)})
		}
	}
	sort.Slice(items, func(i, j int) bool {
		a, b := items[i].Switch, items[j].Switch
		return a.GetNamespace() < b.GetNamespace() || a.GetNamespace() == b.GetNamespace() && a.GetName() < b.GetName()
	})
	return items
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
	ref := v1beta1.StateReference{Kind: v1beta1.StateKindNamespaced, Name: name}
	reader := newStateReader(ctx, c)
	for _, kind := range kinds {
		items, err := readKind(ctx, c, kind, ns, name)
		if err != nil {
			return nil, err
		}
		withEntries(items, ref, reader.lookup)
		snap.Items = append(snap.Items, items...)
	}
	snap.Notes = unreadableNotes(snap.Items)
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
		return nil, fmt.Errorf("listing %s in namespace %q: %w", kindPlural(kind.SwitchKind()), ns, err)
	}
	items := followers(kind, kind.SwitchItems(list), state)
	if len(items) == 0 {
		return nil, nil
	}
	targets, err := listTargets(ctx, c, kind, ns)
	if err != nil {
		return nil, err
	}
	return items, attachTargets(items, targets, func(key types.NamespacedName) (client.Object, error) {
		live := kind.NewTarget()
		err := c.Get(ctx, key, live)
		switch {
		case err == nil:
			return live, nil
		case apierrors.IsNotFound(err):
			return nil, nil
		}
		return nil, fmt.Errorf("reading %s %s: %w", kind.TargetGVK().Kind, key, err)
	})
}

// followers are the switches of kind among switches that follow the
// DynamicIngressState state (their single state, or an entry of a list),
// by name, each once.
func followers(kind target.Kind, switches []target.Switch, state string) []Item {
	var items []Item
	seen := map[string]bool{}
	for _, sw := range switches {
		if seen[sw.GetName()] {
			continue
		}
		seen[sw.GetName()] = true
		if follows(sw, v1beta1.StateReference{Kind: v1beta1.StateKindNamespaced, Name: state}) {
			items = append(items, Item{Kind: kind, Switch: sw})
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Switch.GetName() < items[j].Switch.GetName() })
	return items
}

// attachTargets gives each item its live target: the managed one at its
// key in targets, else what get reads (nil when there is none; get nil
// leaves it so).
func attachTargets(items []Item, targets map[types.NamespacedName]client.Object, get func(types.NamespacedName) (client.Object, error)) error {
	for i := range items {
		key := target.Key(items[i].Switch)
		if key.Namespace != items[i].Switch.GetNamespace() {
			// The operator refuses a target in another namespace and
			// writes nothing there: there is no target to show.
			continue
		}
		if live, ok := targets[key]; ok {
			items[i].Live = live
			continue
		}
		if get == nil {
			continue
		}
		live, err := get(key)
		if err != nil {
			return err
		}
		items[i].Live = live
	}
	return nil
}

// listTargets lists the targets of kind in ns that the operator manages,
// by key.
func listTargets(ctx context.Context, c client.Reader, kind target.Kind, ns string) (map[types.NamespacedName]client.Object, error) {
	list := kind.NewTargetList()
	if err := c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{v1beta1.LabelManagedBy: v1beta1.ManagedByValue}); err != nil {
		return nil, fmt.Errorf("listing %s in namespace %q: %w", kindPlural(kind.TargetGVK().Kind), ns, err)
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make(map[types.NamespacedName]client.Object, len(objs))
	for _, o := range objs {
		obj, ok := o.(client.Object)
		if !ok {
			return nil, errors.New("a listed target is not an object")
		}
		out[client.ObjectKeyFromObject(obj)] = obj
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

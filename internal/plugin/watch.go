package plugin

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// The switch fields the CRDs make selectable, so that the API server
// sends only the switches of one state: spec.state, and spec.stateRef.name
// for a switch that names its state with its kind.
const (
	stateField    = "spec.state"
	stateRefField = "spec.stateRef.name"
)

// watchedSnapshot keeps a state and the switches that follow it, with
// their targets, from watches: one list and one watch per source, the
// switches selected on the server by state name, the targets by the
// operator's managed-by label. Every change signals changed.
type watchedSnapshot struct {
	// ns is the namespace watched, "" for every namespace (the followers
	// of a cluster state with -A).
	ns      string
	ref     v1beta1.StateReference
	state   toolscache.SharedIndexInformer
	kinds   []watchedKind
	changed chan struct{}
	// failed holds the first error of a list or watch that ends the wait
	// (endsWait: a Forbidden, as a *PermissionError). Other errors are
	// retried by the informers; the last one is kept in lastRetried, to
	// say why nothing could be read should the wait time out first.
	failed      chan error
	mu          sync.Mutex
	lastRetried error
	// entryStates watch the other states that the followers' anyOf and
	// allOf name, once one does (startEntryStates): the namespaced states
	// of ns in one informer, each cluster state in one of its own.
	nsStates      toolscache.SharedIndexInformer
	clusterStates map[string]toolscache.SharedIndexInformer
	client        client.WithWatch
	// notes say which switches with a list the user may not list.
	notes []string
}

// source is what one informer lists and watches, as a PermissionError
// names it.
type source struct {
	resource      string
	namespace     string
	clusterScoped bool
}

// watchedKind is what is watched of one switch kind: its switches, from
// one informer per selected field (or one unselected informer when the
// CRD predates selectable fields), and its managed targets.
type watchedKind struct {
	kind     target.Kind
	switches []toolscache.SharedIndexInformer
	// targets is watched once some switch of the kind follows the state
	// (startTargets): a user bound to view may read HTTPRoutes nowhere,
	// and needs to only when a DynamicHTTPRoute follows the state.
	targets toolscache.SharedIndexInformer
	// client and targetList make the targets' informer.
	client     client.WithWatch
	targetList *client.ListOptions
}

// newWatchedSnapshot sets up the informers of state name in ns; start
// runs them.
// Transient errors of the one list it makes itself (switchSelections) are
// retried until ctx is done.
func newWatchedSnapshot(ctx context.Context, c client.WithWatch, kinds []target.Kind, ns string, ref v1beta1.StateReference) (*watchedSnapshot, error) {
	w := &watchedSnapshot{ns: ns, ref: ref, changed: make(chan struct{}, 1), failed: make(chan error, 1),
		clusterStates: map[string]toolscache.SharedIndexInformer{}, client: c}
	byName := fields.OneTermEqualSelector("metadata.name", ref.Name)
	if ref.IsCluster() {
		w.state = w.informer(c, func() client.ObjectList { return &v1beta1.ClusterDynamicIngressStateList{} }, &v1beta1.ClusterDynamicIngressState{},
			&client.ListOptions{FieldSelector: byName}, true)
	} else {
		w.state = w.informer(c, func() client.ObjectList { return &v1beta1.DynamicIngressStateList{} }, &v1beta1.DynamicIngressState{},
			&client.ListOptions{Namespace: ns, FieldSelector: byName}, false)
	}
	for _, kind := range kinds {
		selected, err := retried(ctx, func() (selections, error) { return switchSelections(ctx, c, kind, ns, ref) })
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			// The kind's CRD is not installed: no switches of it.
			continue
		}
		if err != nil {
			return nil, err
		}
		if selected.note != "" {
			w.notes = append(w.notes, selected.note)
		}
		wk := watchedKind{kind: kind, client: c,
			targetList: &client.ListOptions{Namespace: ns, LabelSelector: labels.SelectorFromSet(labels.Set{v1beta1.LabelManagedBy: v1beta1.ManagedByValue})}}
		for _, sel := range selected.options {
			wk.switches = append(wk.switches, w.informer(c, kind.NewSwitchList, kind.NewSwitch(), sel, false))
		}
		w.kinds = append(w.kinds, wk)
	}
	return w, nil
}

// selections are the list options that select the switches of kind
// following a state, and a note when some could not be selected.
type selections struct {
	options []*client.ListOptions
	note    string
}

// switchSelections are the list options that select the switches of kind
// following the state: by spec.state and by spec.stateRef.name on the
// server (a cluster state's followers by spec.stateRef.name alone), and
// the switches with a list (anyOf, allOf: neither field set), which those
// cannot select; or, when the cluster's CRD has no selectable fields yet
// (one list of a single item tells), every switch of the namespace. A user
// who may list switches by state only (an authorizer that reads field
// selectors) waits for those, and a note says the lists are left out.
func switchSelections(ctx context.Context, c client.Reader, kind target.Kind, ns string, ref v1beta1.StateReference) (selections, error) {
	by := func(field string) *client.ListOptions {
		return &client.ListOptions{Namespace: ns, FieldSelector: fields.OneTermEqualSelector(field, ref.Name)}
	}
	lists := &client.ListOptions{Namespace: ns}
	listsSelector().ApplyToList(lists)
	probe := by(stateRefField)
	probe.Limit = 1
	err := c.List(ctx, kind.NewSwitchList(), probe)
	var out selections
	switch {
	case err == nil && ref.IsCluster():
		out.options = []*client.ListOptions{by(stateRefField)}
	case err == nil:
		out.options = []*client.ListOptions{by(stateField), by(stateRefField)}
	case apierrors.IsBadRequest(err):
		return selections{options: []*client.ListOptions{{Namespace: ns}}}, nil
	case apierrors.IsForbidden(err):
		return selections{}, &PermissionError{Command: "wait", Verb: "list", Resource: resourceName(v1beta1.GroupVersion.WithKind(kind.SwitchKind())), Namespace: ns, Err: err}
	default:
		return selections{}, listFailed(kind, ns, err)
	}
	probe = &client.ListOptions{}
	*probe = *lists
	probe.Limit = 1
	err = c.List(ctx, kind.NewSwitchList(), probe)
	switch {
	case err == nil:
		out.options = append(out.options, lists)
	case apierrors.IsForbidden(err):
		out.note = listsForbidden(kind, ns, err)
	default:
		return selections{}, listFailed(kind, ns, err)
	}
	return out, nil
}

// listFailed is the error of a failed list of the switches of kind in ns
// ("" every namespace).
func listFailed(kind target.Kind, ns string, err error) error {
	where := fmt.Sprintf("in namespace %q", ns)
	if ns == "" {
		where = "in every namespace"
	}
	return fmt.Errorf("listing %s %s: %w", kindPlural(kind.SwitchKind()), where, err)
}

// retried is what list returns, sent again while it fails with a
// transient error (transient: 429, 5xx, a dropped connection), with a
// backoff from 100 ms to 2 s, until ctx is done (then the last error).
func retried[T any](ctx context.Context, list func() (T, error)) (T, error) {
	delay := 100 * time.Millisecond
	for {
		out, err := list()
		if !transient(err) {
			return out, err
		}
		select {
		case <-ctx.Done():
			return out, err
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// informer lists and watches the objects opts select (of a cluster-scoped
// kind when clusterScoped), signalling changed at every event. A list or
// watch that fails is retried by the informer, with backoff, unless the
// error ends the wait (failed).
func (w *watchedSnapshot) informer(c client.WithWatch, newList func() client.ObjectList, example client.Object, opts *client.ListOptions, clusterScoped bool) toolscache.SharedIndexInformer {
	with := func(raw metav1.ListOptions) *client.ListOptions {
		o := *opts
		o.Raw = &raw
		return &o
	}
	src := source{namespace: opts.Namespace, clusterScoped: clusterScoped}
	if gvk, err := apiutil.GVKForObject(example, c.Scheme()); err == nil {
		src.resource = resourceName(gvk)
	}
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, raw metav1.ListOptions) (runtime.Object, error) {
			list := newList()
			err := c.List(ctx, list, with(raw))
			return list, w.sawError(src, "list", err)
		},
		WatchFuncWithContext: func(ctx context.Context, raw metav1.ListOptions) (watch.Interface, error) {
			watcher, err := c.Watch(ctx, newList(), with(raw))
			return watcher, w.sawError(src, "watch", err)
		},
	}
	inf := toolscache.NewSharedIndexInformer(lw, example, 0, toolscache.Indexers{})
	// The errors were seen above (sawError): the informer retries them,
	// with no line in klog's log.
	_ = inf.SetWatchErrorHandlerWithContext(func(context.Context, *toolscache.Reflector, error) {})
	signal := func(any) {
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    signal,
		UpdateFunc: func(_, obj any) { signal(obj) },
		DeleteFunc: signal,
	})
	return inf
}

// sawError looks at the error (nil or not) of a list or watch of src and
// returns it: one that ends the wait goes to failed, as a
// *PermissionError for a Forbidden; any other is kept as the last one
// retried.
func (w *watchedSnapshot) sawError(src source, verb string, err error) error {
	if err == nil {
		return nil
	}
	if !endsWait(err) {
		w.mu.Lock()
		w.lastRetried = err
		w.mu.Unlock()
		return err
	}
	end := err
	if apierrors.IsForbidden(err) {
		end = &PermissionError{Command: "wait", Verb: verb, Resource: src.resource, Namespace: src.namespace, ClusterScoped: src.clusterScoped, Err: err}
	}
	select {
	case w.failed <- end:
	default:
	}
	return err
}

// retriedError is the last error retried, nil when there was none.
func (w *watchedSnapshot) retriedError() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastRetried
}

// start runs the informers until ctx is done and waits for their first
// lists until syncBy is: false when it ended first, an error when a list or
// watch failed.
func (w *watchedSnapshot) start(ctx, syncBy context.Context) (bool, error) {
	all := []toolscache.SharedIndexInformer{w.state}
	for _, wk := range w.kinds {
		all = append(all, wk.switches...)
	}
	return w.run(ctx, syncBy, all)
}

// startTargets starts watching the targets of every kind that has a
// follower and whose targets are not watched yet, as start does.
func (w *watchedSnapshot) startTargets(ctx, syncBy context.Context) (bool, error) {
	var started []toolscache.SharedIndexInformer
	for i := range w.kinds {
		wk := &w.kinds[i]
		if wk.targets != nil || !w.hasFollowers(wk) {
			continue
		}
		wk.targets = w.informer(wk.client, wk.kind.NewTargetList, wk.kind.NewTarget(), wk.targetList, false)
		started = append(started, wk.targets)
	}
	if len(started) == 0 {
		return true, nil
	}
	return w.run(ctx, syncBy, started)
}

// hasFollowers says whether some switch of wk follows the state.
func (w *watchedSnapshot) hasFollowers(wk *watchedKind) bool {
	for _, inf := range wk.switches {
		for _, obj := range inf.GetStore().List() {
			if sw, ok := obj.(target.Switch); ok && follows(sw, w.ref) {
				return true
			}
		}
	}
	return false
}

// startEntryStates starts watching the states that the followers' lists
// name besides the state waited for, those not watched yet, as start
// does: the DynamicIngressStates of the namespace watched (one informer),
// and each cluster state by name.
func (w *watchedSnapshot) startEntryStates(ctx, syncBy context.Context) (bool, error) {
	var started []toolscache.SharedIndexInformer
	for _, wk := range w.kinds {
		for _, inf := range wk.switches {
			for _, obj := range inf.GetStore().List() {
				sw, ok := obj.(target.Switch)
				if !ok || sw.SwitchSpec().Combination() == v1beta1.CombinationSingle || !follows(sw, w.ref) {
					continue
				}
				for _, e := range sw.SwitchSpec().Entries() {
					switch {
					case sameState(e.State, w.ref):
					case e.State.IsCluster() && w.clusterStates[e.State.Name] == nil:
						inf := w.informer(w.client, func() client.ObjectList { return &v1beta1.ClusterDynamicIngressStateList{} }, &v1beta1.ClusterDynamicIngressState{},
							&client.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", e.State.Name)}, true)
						w.clusterStates[e.State.Name] = inf
						started = append(started, inf)
					case !e.State.IsCluster() && w.nsStates == nil:
						w.nsStates = w.informer(w.client, func() client.ObjectList { return &v1beta1.DynamicIngressStateList{} }, &v1beta1.DynamicIngressState{},
							&client.ListOptions{Namespace: w.ns}, false)
						started = append(started, w.nsStates)
					}
				}
			}
		}
	}
	if len(started) == 0 {
		return true, nil
	}
	return w.run(ctx, syncBy, started)
}

// entryState is a stateLookup over the watched states: nil when the state
// does not exist.
func (w *watchedSnapshot) entryState(k stateKey) (*v1beta1.DynamicIngressState, string) {
	inf := w.nsStates
	key := k.namespace + "/" + k.name
	if k.cluster {
		inf, key = w.clusterStates[k.name], k.name
	}
	if inf == nil {
		return nil, ""
	}
	obj, ok, _ := inf.GetStore().GetByKey(key)
	if !ok {
		return nil, ""
	}
	switch s := obj.(type) {
	case *v1beta1.DynamicIngressState:
		return s, ""
	case *v1beta1.ClusterDynamicIngressState:
		return s.StateView(), ""
	}
	return nil, ""
}

// run runs informers until ctx is done and waits for their first lists, as
// start says.
func (w *watchedSnapshot) run(ctx, syncBy context.Context, all []toolscache.SharedIndexInformer) (bool, error) {
	synced := make([]toolscache.InformerSynced, 0, len(all))
	for _, inf := range all {
		go inf.RunWithContext(ctx)
		synced = append(synced, inf.HasSynced)
	}
	done := make(chan bool, 1)
	go func() { done <- toolscache.WaitForCacheSync(syncBy.Done(), synced...) }()
	select {
	case ok := <-done:
		return ok, nil
	case err := <-w.failed:
		return false, err
	}
}

// snapshot is the state and its switches as the watches show them now.
// A target that is not the operator's (no managed-by label) is not
// watched, and shows as none: such a switch is not in shape anyway (its
// status says TargetConflict).
func (w *watchedSnapshot) snapshot() (*Snapshot, error) {
	var state *v1beta1.DynamicIngressState
	for _, obj := range w.state.GetStore().List() {
		if s, ok := obj.(interface {
			client.Object
			StateView() *v1beta1.DynamicIngressState
		}); ok && s.GetName() == w.ref.Name {
			state = s.StateView()
		}
	}
	if state == nil {
		if w.ref.IsCluster() {
			return nil, &NotFoundError{Kind: "cluster state", Name: w.ref.Name}
		}
		return nil, &NotFoundError{Kind: "state", Name: w.ref.Name, Namespace: w.ns}
	}
	snap := &Snapshot{State: state, Cluster: w.ref.IsCluster(), Notes: w.notes}
	for _, wk := range w.kinds {
		seen := map[string]bool{}
		var switches []target.Switch
		for _, inf := range wk.switches {
			for _, obj := range inf.GetStore().List() {
				sw, ok := obj.(target.Switch)
				if !ok {
					continue
				}
				if key := sw.GetNamespace() + "/" + sw.GetName(); !seen[key] {
					seen[key] = true
					switches = append(switches, sw)
				}
			}
		}
		items := followers(wk.kind, switches, w.ref.Name)
		if w.ref.IsCluster() {
			items = clusterFollowers(wk.kind, switches, w.ref.Name)
		}
		withEntries(items, w.ref, w.entryState)
		targets := map[types.NamespacedName]client.Object{}
		if wk.targets != nil {
			for _, obj := range wk.targets.GetStore().List() {
				if o, ok := obj.(client.Object); ok {
					targets[client.ObjectKeyFromObject(o)] = o
				}
			}
		}
		if err := attachTargets(items, targets, nil); err != nil {
			return nil, err
		}
		snap.Items = append(snap.Items, items...)
	}
	return snap, nil
}

// recheckEvery is how often Wait looks again without an event: a schedule
// state's answer depends on the time. Looking reads the watched copies,
// not the API server.
const recheckEvery = time.Second

package switches

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/flip"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/follow"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/index"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/workers"
)

// SetupWithManager registers the engine for its kind. Call index.Setup
// first.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.Add(manager.RunnableFunc(r.writes.RunPrune)); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(r.Kind.NewSwitch(), builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, approvalChanged()))).
		Watches(r.Kind.NewTarget(), targetChanged(handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(),
			r.Kind.NewSwitch(), handler.OnlyControllerOwner())), builder.WithPredicates(r.notAnEchoOfOurApply())).
		Watches(&v1beta1.DynamicIngressState{}, r.stateChanged(), builder.WithPredicates(responseChanged()))
	if r.ClusterStates {
		// A cluster state's followers, and the followers in a namespace
		// whose labels changed: the grant decides again (getState).
		b = b.Watches(&v1beta1.ClusterDynamicIngressState{}, r.stateChanged(), builder.WithPredicates(responseChanged())).
			WatchesMetadata(&corev1.Namespace{}, r.namespaceRelabelled(), builder.WithPredicates(follow.LabelsChanged()))
	}
	return b.WatchesRawSource(source.Func(r.releaseHeld)).WatchesRawSource(source.Func(r.keepQueue)).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles, RateLimiter: workers.RetryRateLimiter(),
			LogConstructor: workers.Logger(mgr, kindName(r.Kind), r.Kind.SwitchKind())}).
		Named(kindName(r.Kind)).
		Complete(r)
}

// releaseHeld has the status gate enqueue the switches it held in q, at
// low priority: the source that hands the gate this controller's queue.
func (r *Reconciler) releaseHeld(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	q = lowPriority(q)
	r.gate.Register(r.Kind.SwitchKind(), func(key types.NamespacedName) { q.Add(reconcile.Request{NamespacedName: key}) })
	return nil
}

// keepQueue keeps this controller's queue, for wake: the source that hands
// it over.
func (r *Reconciler) keepQueue(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	r.queue.Store(&q)
	return nil
}

// wake returns what enqueues req again.
func (r *Reconciler) wake(req ctrl.Request) func() {
	return func() {
		if q := r.queue.Load(); q != nil {
			(*q).Add(req)
		}
	}
}

// targetChanged enqueues the switch controlling a target that changed at
// low priority: during a flip, the reconciles that write targets go first,
// and those that these events cause (the status of a switch whose target
// was just written) wait behind them.
func targetChanged(h handler.EventHandler) handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(ctx, e, lowPriority(q))
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, e, lowPriority(q))
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Delete(ctx, e, lowPriority(q))
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Generic(ctx, e, lowPriority(q))
		},
	}
}

// notAnEchoOfOurApply drops the update of a target that only shows this
// manager's last apply to it (the target is at the resourceVersion that
// apply returned). The reconcile that applied it has already asked to be
// run again, for the status (see Reconcile), so the event would only add
// a reconcile; during a flip there is one per target, finding the status
// held and competing with the target writes still to come
// (docs/benchmarks.md). Every other change of a target (someone else's
// write, a delete, or anything after a restart) passes.
func (r *Reconciler) notAnEchoOfOurApply() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		owner := metav1.GetControllerOfNoCopy(e.ObjectNew)
		if owner == nil || owner.Kind != r.Kind.SwitchKind() || owner.APIVersion != v1beta1.GroupVersion.String() {
			return true
		}
		key := types.NamespacedName{Namespace: e.ObjectNew.GetNamespace(), Name: owner.Name}
		_, ours := r.applied.Last(key, e.ObjectNew.GetResourceVersion())
		return !ours
	}}
}

// lowPriority makes q add at handler.LowPriority, when it is a priority
// queue.
func lowPriority(q workqueue.TypedRateLimitingInterface[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		return lowPriorityQueue{pq}
	}
	return q
}

type lowPriorityQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
}

func (q lowPriorityQueue) Add(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(handler.LowPriority)}, item)
}

// stateChanged enqueues the switches of a state that changed, each one
// expected by the status gate first. It lists them once per event (from
// the new object of an update: a state's name does not change), and adds
// at low priority what the cache's first list or a resync delivers.
func (r *Reconciler) stateChanged() handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.enqueueSwitchesOf(ctx, e.Object, q, e.IsInInitialList, nil)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.enqueueSwitchesOf(ctx, e.ObjectNew, q, e.ObjectOld.GetResourceVersion() == e.ObjectNew.GetResourceVersion(), e.ObjectOld)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.enqueueSwitchesOf(ctx, e.Object, q, false, nil)
			r.fixed.forget(client.ObjectKeyFromObject(e.Object))
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.enqueueSwitchesOf(ctx, e.Object, q, false, nil)
		},
	}
}

// enqueueSwitchesOf adds every switch of this kind that state drives to q;
// before is the state before an update (nil for other events), so that a
// change of its response is followed until they show it (expectFlip)
// from before any of them is reconciled.
func (r *Reconciler) enqueueSwitchesOf(ctx context.Context, state client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request], low bool, before client.Object) {
	r.fixed.note(state)
	if low {
		q = lowPriority(q)
	}
	keys := r.switchesOf(ctx, state)
	if before != nil {
		r.expectFlip(before, state, keys)
	}
	r.gate.ExpectAndAdd(r.Kind.SwitchKind(), keys, q)
}

// expectFlip has the flip tracker follow a change of a state's response
// (before to after) to the switches of this kind that follow it (keys).
func (r *Reconciler) expectFlip(before, after client.Object, keys []types.NamespacedName) {
	b, ok1 := before.(stateViewer)
	a, ok2 := after.(stateViewer)
	if r.Flips == nil || !ok1 || !ok2 {
		return
	}
	code0, body0 := decision.FollowedResponse(b.StateView())
	code1, body1 := decision.FollowedResponse(a.StateView())
	if code0 == code1 && body0 == body1 {
		return
	}
	r.Flips.Expect(flip.StateKey(after.GetNamespace(), after.GetName()), code1, body1, r.Kind.SwitchKind(), keys)
}

// switchesOf lists the switches of this kind that a state drives: a
// DynamicIngressState's in its namespace, a ClusterDynamicIngressState's
// in every namespace.
func (r *Reconciler) switchesOf(ctx context.Context, state client.Object) []types.NamespacedName {
	list := r.Kind.NewSwitchList()
	selection := []client.ListOption{client.InNamespace(state.GetNamespace()), client.MatchingFields{index.State: state.GetName()}}
	if _, cluster := state.(*v1beta1.ClusterDynamicIngressState); cluster {
		selection = []client.ListOption{client.MatchingFields{index.ClusterState: state.GetName()}}
	}
	if err := r.List(ctx, list, append(selection, client.UnsafeDisableDeepCopy)...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the switches of a state", "kind", r.Kind.SwitchKind(), "state", client.ObjectKeyFromObject(state))
		return nil
	}
	items := r.Kind.SwitchItems(list)
	keys := make([]types.NamespacedName, 0, len(items))
	for _, sw := range items {
		keys = append(keys, client.ObjectKeyFromObject(sw))
	}
	return keys
}

// responseChanged passes state creations and deletions, and updates that
// change the response switches compare with (followedResponse: a fixed
// state's spec, so that its switches are enqueued by the spec change
// itself, and not again by the status write that follows it), its
// override policy (the Ready message of a pin that breaks it) or, for a
// cluster state, its grant; a state's condition changing alone does not
// concern them.
func responseChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			before, ok1 := e.ObjectOld.(stateViewer)
			after, ok2 := e.ObjectNew.(stateViewer)
			if !ok1 || !ok2 {
				return true
			}
			code0, body0 := decision.FollowedResponse(before.StateView())
			code1, body1 := decision.FollowedResponse(after.StateView())
			return code0 != code1 || body0 != body1 || grantChanged(e.ObjectOld, e.ObjectNew) ||
				!equality.Semantic.DeepEqual(before.StateView().Spec.OverridePolicy, after.StateView().Spec.OverridePolicy)
		},
	}
}

// grantChanged says whether a cluster state's spec.followers changed.
func grantChanged(before, after client.Object) bool {
	c0, ok1 := before.(*v1beta1.ClusterDynamicIngressState)
	c1, ok2 := after.(*v1beta1.ClusterDynamicIngressState)
	return ok1 && ok2 && !equality.Semantic.DeepEqual(c0.Spec.Followers, c1.Spec.Followers)
}

// namespaceRelabelled enqueues the switches of this kind that follow a
// cluster state in a namespace whose labels changed or became known (it
// was created, or the manager's cache first listed it), each expected by
// the status gate first, as a flip's: the grant may now admit them, or no
// longer.
func (r *Reconciler) namespaceRelabelled() handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.enqueueClusterFollowers(ctx, e.Object.GetName(), q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.enqueueClusterFollowers(ctx, e.ObjectNew.GetName(), q)
		},
	}
}

// enqueueClusterFollowers enqueues the switches of this kind in namespace
// that follow a cluster state, each expected by the status gate first.
func (r *Reconciler) enqueueClusterFollowers(ctx context.Context, namespace string, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	list := r.Kind.NewSwitchList()
	if err := r.List(ctx, list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		if strings.Contains(err.Error(), "unknown namespace for the cache") {
			// A manager started with --namespaces watches every
			// Namespace's labels but the switches of its namespaces only;
			// controller-runtime's multi-namespace cache says so in words,
			// not by an error type.
			return
		}
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the switches of a namespace", "kind", r.Kind.SwitchKind(), "namespace", namespace)
		return
	}
	var keys []types.NamespacedName
	for _, sw := range r.Kind.SwitchItems(list) {
		if sw.SwitchSpec().FollowsCluster() {
			keys = append(keys, client.ObjectKeyFromObject(sw))
		}
	}
	r.gate.ExpectAndAdd(r.Kind.SwitchKind(), keys, q)
}

// approvalChanged passes an update that changes a switch's approval
// annotations: an approval changes no spec, and no generation, yet it
// makes the pin take effect (docs/behaviour.md, "Approval").
func approvalChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			for _, key := range []string{v1beta1.OverrideApprovedByAnnotation, v1beta1.OverrideApprovedAtAnnotation} {
				if e.ObjectOld.GetAnnotations()[key] != e.ObjectNew.GetAnnotations()[key] {
					return true
				}
			}
			return false
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

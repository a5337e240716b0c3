// Package states keeps each DynamicIngressState's and
// ClusterDynamicIngressState's status on its current response: the fixed
// one, what its probes show, or whether its schedule is open, with the
// history entries and flip summaries the flip tracker gives (package flip).
// It imports no other reconciler (docs/architecture.md).
package states

import (
	"context"
	"runtime/trace"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/endpoints"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/flip"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/index"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/metrics"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/regions"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/workers"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/writes"
)

// Reconciler keeps each state's status on its current response: the
// fixed one, what its probes show, or whether its schedule is open. It is
// one engine for both kinds of state, DynamicIngressState and the
// cluster-scoped ClusterDynamicIngressState: one probe scheduler, one set
// of schedule timers and one status writer, each kind a controller of its
// own (stateKind) that reconciles through it. Probes run in the
// probe.Scheduler beside the controllers; a changed observation comes back
// through the work queue of the state's kind.
type Reconciler struct {
	client.Client
	Recorder  events.EventRecorder
	Clock     Clock
	Scheduler *probe.Scheduler
	// boundaries wakes schedule states when their windows open or close.
	boundaries *boundaryTimers
	// MaxConcurrentReconciles bounds how many states of each kind have
	// their status written at once, so one state that changes often never
	// delays another.
	MaxConcurrentReconciles int
	// ClusterResourceNamespace is where the Secrets of cluster states'
	// probe headers are.
	ClusterResourceNamespace string

	writes *writes.OwnWrites
	// Flips has the summaries of complete Flips to write on the history
	// entries of their changes; nil writes none.
	Flips *flip.Tracker
	// probes and clusterProbes queue the namespaced and the cluster
	// states whose observation changed.
	probes, clusterProbes probeNotifications

	// Endpoints counts the ready endpoints of the Services that service
	// states follow; nil when the manager does not watch them.
	Endpoints *endpoints.Tracker
	// sides holds each service state's count side and since when.
	sides           serviceSides
	clusterStatesOn bool
}

// Clock is what the state engine needs of a clock: tickers for probes and
// timers for schedule boundaries.
type Clock interface {
	clock.WithTicker
	AfterFunc(d time.Duration, f func()) clock.Timer
}

// stateObject is what the engine reads and writes of either kind of state:
// the DynamicIngressState view the decisions read, and the status.
type stateObject interface {
	client.Object
	StateView() *v1beta1.DynamicIngressState
	StateStatus() *v1beta1.DynamicIngressStateStatus
}

// stateKind adapts the engine to one kind of state.
type stateKind struct {
	engine *Reconciler
	// name of the controller, and kind of the state.
	name, kind string
	// newObject returns an empty object of the kind.
	newObject func() stateObject
	// secretNamespace is where the state's header Secrets are.
	secretNamespace func(key types.NamespacedName) string
	// notifications is the kind's work queue, for the probes and timers.
	notifications *probeNotifications
}

// NewReconciler wires the state engine to a new probe scheduler.
// SetupWithManager adds the scheduler to the manager.
func NewReconciler(c client.Client, recorder events.EventRecorder, clk Clock, prober *probe.Prober) *Reconciler {
	r := &Reconciler{
		Client:   c,
		Recorder: recorder,
		Clock:    clk,
		writes:   writes.NewOwnWrites(clk),
	}
	r.Scheduler = probe.NewScheduler(prober, clk, r.Notify)
	r.Scheduler.Observe = func(key string, took time.Duration, reason probe.FailureReason) {
		ns, name, _ := strings.Cut(key, "/")
		metrics.ObserveProbe(ns, name, took, string(reason))
	}
	r.boundaries = newBoundaryTimers(clk, r.Notify)
	return r
}

// Notify queues the state with this "namespace/name" key in its kind's
// queue: a cluster state's key has no namespace ("/name").
func (r *Reconciler) Notify(key string) {
	if strings.HasPrefix(key, "/") {
		r.clusterProbes.notify(key)
		return
	}
	r.probes.notify(key)
}

// namespacedStates and clusterStates are the engine's two kinds.
func (r *Reconciler) namespacedStates() *stateKind {
	return &stateKind{engine: r, name: "dynamicingressstate", kind: string(v1beta1.StateKindNamespaced), notifications: &r.probes,
		newObject:       func() stateObject { return &v1beta1.DynamicIngressState{} },
		secretNamespace: func(key types.NamespacedName) string { return key.Namespace }}
}

func (r *Reconciler) clusterStates() *stateKind {
	return &stateKind{engine: r, name: "clusterdynamicingressstate", kind: string(v1beta1.StateKindCluster), notifications: &r.clusterProbes,
		newObject:       func() stateObject { return &v1beta1.ClusterDynamicIngressState{} },
		secretNamespace: func(types.NamespacedName) string { return r.ClusterResourceNamespace }}
}

// probeNotifications hands a state whose observation changed to the
// controller's work queue. Adding to the queue never blocks, and repeats
// of a key not yet reconciled collapse into one, so a probe worker is never
// held up, whether the reconciler is busy or the manager shutting down.
type probeNotifications struct {
	queue atomic.Pointer[workqueue.TypedRateLimitingInterface[reconcile.Request]]
}

// start is the controller's source.Func: it receives the work queue.
func (p *probeNotifications) start(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	p.queue.Store(&q)
	return nil
}

// notify queues the state with this "namespace/name" key. Before the
// controller starts there is no queue, and nothing to do: its first sync
// reconciles every state anyway.
func (p *probeNotifications) notify(key string) {
	q := p.queue.Load()
	if q == nil {
		return
	}
	ns, name, _ := strings.Cut(key, "/")
	(*q).Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
}

// +kubebuilder:rbac:groups=ingress.dynamicingress.io,resources=dynamicingressstates,verbs=get;list;watch
// +kubebuilder:rbac:groups=ingress.dynamicingress.io,resources=dynamicingressstates/status,verbs=patch
// +kubebuilder:rbac:groups=ingress.dynamicingress.io,resources=clusterdynamicingressstates,verbs=get;list;watch
// +kubebuilder:rbac:groups=ingress.dynamicingress.io,resources=clusterdynamicingressstates/status,verbs=patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=services,verbs=list;watch
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=list;watch

// Reconcile registers or removes the state's probe and writes its status
// when it changed.
func (k *stateKind) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	defer trace.StartRegion(ctx, regions.StateReconcile).End()
	r := k.engine
	key := req.String()
	obj := k.newObject()
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.Scheduler.Remove(key)
			r.boundaries.remove(key)
			r.sides.forget(key)
			r.writes.Forget(obj, req.NamespacedName)
			r.Flips.ForgetState(key)
			metrics.ForgetState(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.writes.CacheHolds(obj) {
		// Comparing with a status this manager already replaced could
		// skip a write that is needed (docs/architecture.md).
		return ctrl.Result{RequeueAfter: r.writes.RetryAfter(obj)}, nil
	}
	state := obj.StateView()
	if !state.DeletionTimestamp.IsZero() {
		r.Scheduler.Remove(key)
		r.boundaries.remove(key)
		r.sides.forget(key)
		return ctrl.Result{}, nil
	}

	now := metav1.NewTime(r.Clock.Now())
	var status v1beta1.DynamicIngressStateStatus
	var nextBoundary time.Time
	if state.Spec.Service == nil {
		r.sides.forget(key)
	}
	switch {
	case state.Spec.Probe != nil:
		// The status's response is the state's current one: a restarted
		// manager holds it against a blip like a running one would.
		current := probe.Response{StatusCode: state.Status.StatusCode, Body: state.Status.Body, Truncated: state.Status.BodyTruncated}
		r.Scheduler.Ensure(key, probeSpec(k.secretNamespace(req.NamespacedName), req.Namespace, state.Spec.Probe), current)
		obs, _ := r.Scheduler.Observation(key)
		status = probedStatus(state, obs, now)
	case state.Spec.FixedResponse != nil:
		r.stopProbing(key, req)
		status = decision.FixedStatus(state, now)
	case state.Spec.Schedule != nil:
		r.stopProbing(key, req)
		status, nextBoundary = decision.ScheduledStatus(state, now)
	case state.Spec.Service != nil:
		r.stopProbing(key, req)
		var known bool
		var recheck time.Duration
		if status, recheck, known = r.serviceStatus(key, state, now.Time); !known {
			return ctrl.Result{RequeueAfter: recheck}, nil
		}
		if recheck > 0 {
			// The count must hold its side until then: a timer on the
			// manager's clock, like a schedule's boundary.
			nextBoundary = now.Add(recheck)
		}
	default:
		// The schema forbids this; nothing to report.
		r.Scheduler.Remove(key)
		r.boundaries.remove(key)
		return ctrl.Result{}, nil
	}
	r.boundaries.set(key, nextBoundary)
	metrics.SetStateUp(req.Namespace, req.Name, status.StatusCode != "")
	summarised := r.Flips.Summarise(key, status.History)
	if err := r.writeStatus(ctx, obj, status); err != nil {
		return ctrl.Result{}, err
	}
	if summarised {
		r.Flips.Written(key)
	}
	return ctrl.Result{}, nil
}

// stopProbing stops the probes of a state that is not probed (any more),
// and forgets their metrics.
func (r *Reconciler) stopProbing(key string, req ctrl.Request) {
	if _, probed := r.Scheduler.Observation(key); probed {
		r.Scheduler.Remove(key)
		metrics.ForgetProbes(req.Namespace, req.Name)
	}
}

// writeStatus writes status when it differs and records ProbeFailed when the
// state turns to it. When the write fails for another reason than a
// conflict (the status too large for etcd, say), it tries to say so on the
// Ready condition, keeping the response the status had, and returns the
// error so that the write is retried with backoff.
func (r *Reconciler) writeStatus(ctx context.Context, state stateObject, status v1beta1.DynamicIngressStateStatus) error {
	if equality.Semantic.DeepEqual(*state.StateStatus(), status) {
		return nil
	}
	before := state.DeepCopyObject().(stateObject)
	prev := meta.FindStatusCondition(before.StateStatus().Conditions, v1beta1.ConditionReady)
	*state.StateStatus() = status
	// Conditional on the version read: a status computed from a cache that
	// lags behind this manager's own last write (past the wait of
	// ownWrites) would give a new history entry the sequence of the one it
	// replaces; the API server refuses it, and the retry reads anew.
	var err error
	trace.WithRegion(ctx, regions.StateStatus, func() {
		err = r.Status().Patch(ctx, state, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return err
	case err != nil:
		return r.reportWriteFailure(ctx, before, err)
	}
	r.writes.Wrote(state)
	ctrl.LoggerFrom(ctx).V(1).Info("Updated state status", "statusCode", status.StatusCode)
	for _, e := range stateTransitionEvents(prev, meta.FindStatusCondition(status.Conditions, v1beta1.ConditionReady)) {
		r.Recorder.Eventf(state, nil, e.Type, e.Reason, e.Action, "%s", e.Note)
	}
	return nil
}

// reportWriteFailure sets Ready=False/StatusWriteFailed on the status as it
// was, when that differs from what is there, and returns writeErr.
func (r *Reconciler) reportWriteFailure(ctx context.Context, before stateObject, writeErr error) error {
	state := before.DeepCopyObject().(stateObject)
	cond := statusWriteFailedCondition(state.GetGeneration(), writeErr)
	prev := meta.FindStatusCondition(state.StateStatus().Conditions, v1beta1.ConditionReady)
	if prev != nil && prev.Reason == cond.Reason && prev.Message == cond.Message {
		return writeErr
	}
	meta.SetStatusCondition(&state.StateStatus().Conditions, cond)
	if err := r.Status().Patch(ctx, state, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err == nil {
		r.writes.Wrote(state)
		r.Recorder.Eventf(state, nil, corev1.EventTypeWarning, v1beta1.ReasonStatusWriteFailed, "WriteStatus", "%s", cond.Message)
	}
	return writeErr
}

// SetupWithManager registers the probe scheduler and a controller for
// DynamicIngressStates and, with clusterStates, one for
// ClusterDynamicIngressStates, both reconciling through this engine.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, clusterStates bool) error {
	if err := mgr.Add(r.Scheduler); err != nil {
		return err
	}
	if err := mgr.Add(manager.RunnableFunc(r.writes.RunPrune)); err != nil {
		return err
	}
	r.clusterStatesOn = clusterStates
	if err := index.SetupStates(ctx, mgr.GetFieldIndexer(), clusterStates); err != nil {
		return err
	}
	kinds := []*stateKind{r.namespacedStates()}
	if clusterStates {
		kinds = append(kinds, r.clusterStates())
	}
	for _, k := range kinds {
		err := ctrl.NewControllerManagedBy(mgr).
			For(k.newObject(), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
			WatchesRawSource(source.Func(k.notifications.start)).
			WithOptions(controller.Options{
				MaxConcurrentReconciles: r.MaxConcurrentReconciles,
				RateLimiter:             workers.RetryRateLimiter(),
				LogConstructor:          workers.Logger(mgr, k.name, k.kind),
			}).
			Named(k.name).
			Complete(k)
		if err != nil {
			return err
		}
	}
	return nil
}

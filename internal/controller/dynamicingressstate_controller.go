package controller

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
)

// DynamicIngressStateReconciler keeps each state's status on its current
// response: the fixed one, or what its probes show. Probes run in a
// probe.Scheduler beside the reconciler; a changed observation comes back
// here as an event.
type DynamicIngressStateReconciler struct {
	client.Client
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock
	Scheduler *probe.Scheduler

	probeEvents chan event.TypedGenericEvent[client.Object]
}

// NewDynamicIngressStateReconciler wires a reconciler to a new probe
// scheduler. Add the scheduler to the manager as a Runnable.
func NewDynamicIngressStateReconciler(c client.Client, recorder events.EventRecorder, clk clock.WithTicker, prober *probe.Prober) *DynamicIngressStateReconciler {
	r := &DynamicIngressStateReconciler{
		Client:      c,
		Recorder:    recorder,
		Clock:       clk,
		probeEvents: make(chan event.TypedGenericEvent[client.Object], 1024),
	}
	r.Scheduler = probe.NewScheduler(prober, clk, r.probeObserved)
	return r
}

// probeObserved hands a changed observation to the reconciler.
func (r *DynamicIngressStateReconciler) probeObserved(key string) {
	ns, name, _ := strings.Cut(key, "/")
	obj := &v1beta1.DynamicIngressState{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	r.probeEvents <- event.TypedGenericEvent[client.Object]{Object: obj}
}

// +kubebuilder:rbac:groups=ingress.dynamicingress.io,resources=dynamicingressstates,verbs=get;list;watch
// +kubebuilder:rbac:groups=ingress.dynamicingress.io,resources=dynamicingressstates/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile registers or removes the state's probe and writes its status
// when it changed.
func (r *DynamicIngressStateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := req.String()
	state := &v1beta1.DynamicIngressState{}
	if err := r.Get(ctx, req.NamespacedName, state); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.Scheduler.Remove(key)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !state.DeletionTimestamp.IsZero() {
		r.Scheduler.Remove(key)
		return ctrl.Result{}, nil
	}

	now := metav1.NewTime(r.Clock.Now())
	var status v1beta1.DynamicIngressStateStatus
	switch {
	case state.Spec.Probe != nil:
		r.Scheduler.Ensure(key, probeSpec(state.Spec.Probe))
		obs, _ := r.Scheduler.Observation(key)
		status = probedStatus(state, obs, now)
	case state.Spec.FixedResponse != nil:
		r.Scheduler.Remove(key)
		status = fixedStatus(state, now)
	default:
		// The schema forbids this; nothing to report.
		r.Scheduler.Remove(key)
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.writeStatus(ctx, state, status)
}

// writeStatus writes status when it differs and records ProbeFailed when the
// state turns to it.
func (r *DynamicIngressStateReconciler) writeStatus(ctx context.Context, state *v1beta1.DynamicIngressState, status v1beta1.DynamicIngressStateStatus) error {
	if equality.Semantic.DeepEqual(state.Status, status) {
		return nil
	}
	before := state.DeepCopy()
	prev := meta.FindStatusCondition(before.Status.Conditions, v1beta1.ConditionReady)
	state.Status = status
	if err := r.Status().Patch(ctx, state, client.MergeFrom(before)); err != nil {
		return client.IgnoreNotFound(err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Updated state status", "statusCode", status.StatusCode)
	for _, e := range stateTransitionEvents(prev, meta.FindStatusCondition(status.Conditions, v1beta1.ConditionReady)) {
		r.Recorder.Eventf(state, nil, e.eventType, e.reason, e.action, "%s", e.note)
	}
	return nil
}

// SetupWithManager registers the controller and its probe scheduler.
func (r *DynamicIngressStateReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.Add(r.Scheduler); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1beta1.DynamicIngressState{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Channel(r.probeEvents, &handler.EnqueueRequestForObject{})).
		Named("dynamicingressstate").
		Complete(r)
}

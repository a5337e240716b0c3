// Package notifiers sends the changes of the states a
// DynamicIngressNotifier names, and the override audits of their
// followers, to its sink: what to send and in which format is package
// notify's; the flip progress comes from the flip tracker (package flip).
// It imports no other reconciler (docs/architecture.md).
package notifiers

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/flip"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/follow"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/index"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/notify"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/workers"
)

// The notifier controller's flow and watches; reading what it names is in
// read.go, sending in deliver.go, and what to send and
// in which format in package notify (docs/notifications.md).

// DefaultFlipStalledAfter is --flip-stalled-after's default.
const DefaultFlipStalledAfter = time.Minute

// notifierWorkers is how many notifiers send at once.
const notifierWorkers = 4

// Reconciler sends the changes of the states a
// DynamicIngressNotifier names to its sink. It runs on the leader only, as
// every controller of the manager does. What it delivered is kept in the
// notifier's status, so a new leader goes on where the last one stopped.
type Reconciler struct {
	client.Client
	// Live reads the notifier itself: the delivered record must be the
	// last one written, never a cached copy older than it.
	Live client.Reader
	// Sender posts the notifications, through the probes' address guard.
	Sender *probe.Prober
	// StalledAfter is --flip-stalled-after.
	StalledAfter time.Duration
	// ClusterStates says whether cluster states can be read.
	ClusterStates bool
	// Switches are the kinds of switch served, whose override audits are
	// sent.
	Switches []target.Kind

	Flips *flip.Tracker
	now   func() time.Time

	mu sync.Mutex
	// failures counts each notifier's consecutive failed attempts, and
	// retryAt is when the next may be made: a turn woken before then (a
	// state changed meanwhile) sends nothing, so that a sink that is down
	// is tried at the backoff's pace, not at every change.
	failures map[types.NamespacedName]int
	retryAt  map[types.NamespacedName]time.Time
	// sending counts the notifiers of each namespace sending now, and
	// waiting are the notifiers each namespace's turn wakes when it is
	// free, oldest first.
	sending map[string]int
	waiting map[string][]types.NamespacedName
	// wakeups reconciles a notifier again from outside a reconcile: when
	// its namespace's turn is free, when its sending ended.
	wakeups  chan event.GenericEvent
	stopping chan struct{}
	// running counts the sending turns in progress, which the manager's
	// stop waits for.
	running sync.WaitGroup
}

// +kubebuilder:rbac:groups=ingress.dynamicingress.io,resources=dynamicingressnotifiers,verbs=get;list;watch
// +kubebuilder:rbac:groups=ingress.dynamicingress.io,resources=dynamicingressnotifiers/status,verbs=patch

// Reconcile sends what the notifier has not delivered yet, oldest first,
// and records it in its status. The sending itself runs beside the
// workers (deliverInTurn): a slow sink holds its namespace's turn, never
// one of the workers the other namespaces' notifiers need.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// The namespace's turn first: a notifier waiting for it sends no
	// request to the API server, and is woken when the turn is free.
	if !r.enter(req.NamespacedName) {
		return ctrl.Result{}, nil
	}
	handedOver := false
	defer func() {
		if !handedOver {
			r.leave(req.Namespace)
		}
	}()
	n := &v1beta1.DynamicIngressNotifier{}
	if err := r.Live.Get(ctx, req.NamespacedName, n); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if n.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}

	now := r.now()
	if n.Generation != n.Status.ObservedGeneration {
		// A new spec (a sink fixed) is tried at once.
		r.setFailures(req.NamespacedName, 0)
	} else if wait := r.waitBeforeRetry(req.NamespacedName, now); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	t := &notifierTurn{n: n, before: n.DeepCopy()}
	states, delivered, unread, err := r.readStates(ctx, n)
	if err != nil {
		return ctrl.Result{}, err
	}
	t.states, t.delivered, t.unread = states, delivered, unread
	// Read whether or not Overridden and OverrideExpired are sent
	// (deliver marks what is not wanted as delivered): the record is kept
	// up to date, so that a notifier that starts sending them later sends
	// only what follows.
	overrides, err := r.overrides(ctx, n)
	if err != nil {
		return ctrl.Result{}, err
	}
	// Overrides from the notifier's first turn on: the earlier ones are
	// not news (nor, once, those of a notifier written before overrides
	// were recorded per switch).
	seed := n.Status.ObservedGeneration == 0 || n.Status.Overrides == nil && n.Status.LastOverride != nil
	t.sentOverrides = notify.SentOverrides(n.Status.Overrides, overrides, seed)
	t.events, t.wake = notify.Pending(states, delivered, overrides, t.sentOverrides, now, r.StalledAfter)
	if !slices.ContainsFunc(t.events, func(e notify.Event) bool { return n.SendsEvent(e.Type) }) {
		// Nothing to post (what is not wanted is marked delivered): the
		// record is written here, on the worker.
		return r.record(ctx, t, r.deliver(ctx, n, t.events, t.delivered, &t.sentOverrides))
	}
	handedOver = true
	r.running.Add(1)
	go r.deliverInTurn(ctx, t)
	return ctrl.Result{}, nil
}

// notifierTurn is what one turn of a notifier read, and sends.
type notifierTurn struct {
	n, before     *v1beta1.DynamicIngressNotifier
	states        []notify.State
	delivered     []v1beta1.DeliveredState
	unread        []notify.Unread
	sentOverrides []v1beta1.DeliveredOverride
	events        []notify.Event
	wake          time.Time
}

// deliverInTurn sends a turn's notifications and records them, holding
// the namespace's turn until the record is written; then it leaves the
// turn and has the notifier reconciled again, which decides (from the
// record, the failures and the clock) when it sends next.
func (r *Reconciler) deliverInTurn(ctx context.Context, t *notifierTurn) {
	defer r.running.Done()
	key := types.NamespacedName{Namespace: t.n.Namespace, Name: t.n.Name}
	outcome := r.deliver(ctx, t.n, t.events, t.delivered, &t.sentOverrides)
	if _, err := r.record(ctx, t, outcome); err != nil && ctx.Err() == nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to record the notifications sent", "notifier", key)
	}
	r.leave(key.Namespace)
	r.requeue(key)
}

// record writes what a turn delivered (or, without deliveries, what it
// read) into the notifier's status, and says when to look again.
func (r *Reconciler) record(ctx context.Context, t *notifierTurn, outcome deliveryOutcome) (ctrl.Result, error) {
	n := t.n
	n.Status.Delivered = notify.Merge(n.Spec.States, t.states, t.delivered, t.unread, n.Status.Delivered)
	n.Status.Overrides = t.sentOverrides
	n.Status.LastOverride = nil
	n.Status.ObservedGeneration = n.Generation
	n.Status.SinkHost = notify.SinkHost(n.Spec.Sink.URL)
	n.Status.States = notify.StateNames(n.Spec.States)
	meta.SetStatusCondition(&n.Status.Conditions, notify.ReadyCondition(n.Generation, outcome.failure, t.unread, n.Status.LastDelivery,
		meta.FindStatusCondition(n.Status.Conditions, v1beta1.ConditionReady)))
	if !equality.Semantic.DeepEqual(t.before.Status, n.Status) {
		if err := r.Status().Patch(ctx, n, client.MergeFrom(t.before)); err != nil {
			return ctrl.Result{}, err
		}
	}
	switch {
	case outcome.retryAfter > 0:
		return ctrl.Result{RequeueAfter: outcome.retryAfter}, nil
	case outcome.more:
		return ctrl.Result{RequeueAfter: time.Millisecond}, nil
	case !t.wake.IsZero():
		return ctrl.Result{RequeueAfter: max(t.wake.Sub(r.now()), time.Millisecond)}, nil
	}
	return ctrl.Result{}, nil
}

// SetupWithManager registers the notifier controller: it watches
// notifiers, the states they name, and the override audits and expired
// pins of switches.
// It uses index.NotifierState (index.Setup registers it).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.now == nil {
		r.now = time.Now
	}
	r.failures = map[types.NamespacedName]int{}
	r.retryAt = map[types.NamespacedName]time.Time{}
	r.sending = map[string]int{}
	r.waiting = map[string][]types.NamespacedName{}
	r.wakeups = make(chan event.GenericEvent, 64)
	r.stopping = make(chan struct{})
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		// The manager stops once the sends in progress (canceled with
		// ctx) have ended.
		<-ctx.Done()
		close(r.stopping)
		r.running.Wait()
		return nil
	})); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&v1beta1.DynamicIngressNotifier{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1beta1.DynamicIngressState{}, handler.EnqueueRequestsFromMapFunc(r.stateToNotifiers)).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: notifierWorkers,
			RateLimiter:             workers.RetryRateLimiter(),
			LogConstructor:          workers.Logger(mgr, "dynamicingressnotifier", "DynamicIngressNotifier"),
		}).
		WatchesRawSource(source.Channel(r.wakeups, &handler.EnqueueRequestForObject{})).
		Named("dynamicingressnotifier")
	if r.ClusterStates {
		// A cluster state's notifiers, and those of a namespace whose
		// labels changed: the grant decides again (followedState).
		b = b.Watches(&v1beta1.ClusterDynamicIngressState{}, handler.EnqueueRequestsFromMapFunc(r.stateToNotifiers)).
			WatchesMetadata(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.namespaceToNotifiers), builder.WithPredicates(follow.LabelsChanged()))
	}
	for _, kind := range r.Switches {
		b = b.Watches(kind.NewSwitch(), handler.EnqueueRequestsFromMapFunc(r.switchToNotifiers), builder.WithPredicates(overrideChanged()))
	}
	return b.Complete(r)
}

// stateToNotifiers are the notifiers that name a state.
func (r *Reconciler) stateToNotifiers(ctx context.Context, o client.Object) []reconcile.Request {
	ref := v1beta1.StateReference{Name: o.GetName()}
	opts := []client.ListOption{}
	if o.GetNamespace() == "" {
		ref.Kind = v1beta1.StateKindCluster
	} else {
		opts = append(opts, client.InNamespace(o.GetNamespace()))
	}
	opts = append(opts, client.MatchingFields{index.NotifierState: index.NotifierStateKey(ref)})
	return r.listNotifiers(ctx, opts...)
}

// namespaceToNotifiers are the notifiers of a namespace whose labels
// changed (or became known) that name a cluster state: its grant may now
// admit the namespace, or no longer.
func (r *Reconciler) namespaceToNotifiers(ctx context.Context, o client.Object) []reconcile.Request {
	list := &v1beta1.DynamicIngressNotifierList{}
	if err := r.List(ctx, list, client.InNamespace(o.GetName()), client.UnsafeDisableDeepCopy); err != nil {
		if !strings.Contains(err.Error(), "unknown namespace for the cache") {
			// (--namespaces: a namespace not watched has no notifiers.)
			ctrl.LoggerFrom(ctx).Error(err, "Failed to list DynamicIngressNotifiers", "namespace", o.GetName())
		}
		return nil
	}
	var out []reconcile.Request
	for _, n := range list.Items {
		if slices.ContainsFunc(n.Spec.States, v1beta1.StateReference.IsCluster) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: n.Namespace, Name: n.Name}})
		}
	}
	return out
}

// switchToNotifiers are the notifiers of a switch's namespace: one of them
// may name a state it follows.
func (r *Reconciler) switchToNotifiers(ctx context.Context, o client.Object) []reconcile.Request {
	return r.listNotifiers(ctx, client.InNamespace(o.GetNamespace()))
}

func (r *Reconciler) listNotifiers(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	list := &v1beta1.DynamicIngressNotifierList{}
	if err := r.List(ctx, list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list DynamicIngressNotifiers")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, n := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: n.Namespace, Name: n.Name}})
	}
	return out
}

// overrideChanged passes a switch created with an override audit or a
// pin in its status, or whose override audit or approval changed, or whose
// status.override changed (it shows a new pin, its approval or its
// expiry: an expiry changes the status alone, not the audit).
func overrideChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			_, ok := e.Object.GetAnnotations()[v1beta1.OverrideAtAnnotation]
			return ok || pinOf(e.Object) != nil
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			for _, key := range []string{v1beta1.OverrideAtAnnotation, v1beta1.OverrideByAnnotation, v1beta1.OverrideApprovedAtAnnotation} {
				if e.ObjectOld.GetAnnotations()[key] != e.ObjectNew.GetAnnotations()[key] {
					return true
				}
			}
			return !equality.Semantic.DeepEqual(pinOf(e.ObjectOld), pinOf(e.ObjectNew))
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// pinOf is a switch's status.override (nil when o is not a switch): an
// Overridden waits for the status to show its pin and phase, and an
// expiry changes the status alone.
func pinOf(o client.Object) *v1beta1.OverrideStatus {
	sw, ok := o.(target.Switch)
	if !ok {
		return nil
	}
	return sw.SwitchStatus().Override
}

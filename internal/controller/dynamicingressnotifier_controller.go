package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/index"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/metrics"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/notify"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
)

// Delivery limits (docs/notifications.md).
const (
	// DeliveryTimeout bounds one attempt at posting a notification.
	DeliveryTimeout = 10 * time.Second
	// MinDeliveryBackoff and MaxDeliveryBackoff bound the wait before a
	// failed notification is sent again; it doubles at each failure.
	MinDeliveryBackoff = time.Second
	MaxDeliveryBackoff = 5 * time.Minute
	// DefaultFlipStalledAfter is --flip-stalled-after's default.
	DefaultFlipStalledAfter = time.Minute
	// notificationsPerTurn is how many notifications one reconcile sends
	// before it gives its worker back, so that a notifier with much to
	// send does not hold it.
	notificationsPerTurn = 20
	// deliveriesPerNamespace is how many notifiers of one namespace send
	// at once: the others of the namespace wait their turn, and slow
	// sinks of one namespace leave the workers to the other namespaces.
	deliveriesPerNamespace = 1
	notifierWorkers        = 4
	// namespaceBusyRetry is when a notifier whose namespace is sending
	// looks again.
	namespaceBusyRetry = 25 * time.Millisecond
)

// NotifierReconciler sends the changes of the states a
// DynamicIngressNotifier names to its sink (docs/notifications.md). It
// runs on the leader only, as every controller of the manager does. What
// it delivered is kept in the notifier's status, so a new leader goes on
// where the last one stopped.
type NotifierReconciler struct {
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
	// HTTPRoutes says whether DynamicHTTPRoutes are served.
	HTTPRoutes bool

	flips *flipTracker
	now   func() time.Time

	mu sync.Mutex
	// failures counts each notifier's consecutive failed attempts, and
	// retryAt is when the next may be made: a turn woken before then (a
	// state changed meanwhile) sends nothing, so that a sink that is down
	// is tried at the backoff's pace, not at every change.
	failures map[types.NamespacedName]int
	retryAt  map[types.NamespacedName]time.Time
	// sending counts the notifiers of each namespace sending now.
	sending map[string]int
}

// notifierState is the index of notifiers by the states they name.
const notifierState = "spec.states"

// notifierStateKey is the notifierState key of a state.
func notifierStateKey(ref v1beta1.StateReference) string {
	if ref.IsCluster() {
		return string(v1beta1.StateKindCluster) + "/" + ref.Name
	}
	return string(v1beta1.StateKindNamespaced) + "/" + ref.Name
}

// +kubebuilder:rbac:groups=ingress.dynamicingress.io,resources=dynamicingressnotifiers,verbs=get;list;watch
// +kubebuilder:rbac:groups=ingress.dynamicingress.io,resources=dynamicingressnotifiers/status,verbs=patch

// Reconcile sends what the notifier has not delivered yet, oldest first,
// and records it in its status.
func (r *NotifierReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
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
	if !r.enter(req.Namespace) {
		return ctrl.Result{RequeueAfter: namespaceBusyRetry}, nil
	}
	defer r.leave(req.Namespace)

	now := r.now()
	if n.Generation != n.Status.ObservedGeneration {
		// A new spec (a sink fixed) is tried at once.
		r.setFailures(req.NamespacedName, 0)
	} else if wait := r.waitBeforeRetry(req.NamespacedName, now); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	before := n.DeepCopy()
	states, delivered, unread, err := r.readStates(ctx, n)
	if err != nil {
		return ctrl.Result{}, err
	}
	// Overrides from the notifier's first turn on: the earlier ones are
	// not news.
	last := n.Status.LastOverride
	if last == nil {
		last = &v1beta1.DeliveredOverride{At: metav1.NewMicroTime(now)}
	}
	var overrides []notify.Override
	if n.SendsEvent(v1beta1.NotificationOverridden) {
		if overrides, err = r.overrides(ctx, n); err != nil {
			return ctrl.Result{}, err
		}
	}
	events, wake := notify.Pending(states, delivered, overrides, last, now, r.StalledAfter)
	outcome := r.deliver(ctx, n, events, delivered, &last)

	n.Status.Delivered = mergeDelivered(n, states, delivered, unread)
	n.Status.LastOverride = last
	n.Status.ObservedGeneration = n.Generation
	n.Status.SinkHost = sinkHost(n.Spec.Sink.URL)
	n.Status.States = stateNames(n.Spec.States)
	meta.SetStatusCondition(&n.Status.Conditions, notifierReady(n, outcome, unread))
	if !equality.Semantic.DeepEqual(before.Status, n.Status) {
		if err := r.Status().Patch(ctx, n, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, err
		}
	}
	switch {
	case outcome.retryAfter > 0:
		return ctrl.Result{RequeueAfter: outcome.retryAfter}, nil
	case outcome.more:
		return ctrl.Result{RequeueAfter: time.Millisecond}, nil
	case !wake.IsZero():
		return ctrl.Result{RequeueAfter: max(wake.Sub(r.now()), time.Millisecond)}, nil
	}
	return ctrl.Result{}, nil
}

// unreadState is a named state the notifier cannot send about, and why.
type unreadState struct {
	ref     v1beta1.StateReference
	reason  string
	message string
	// keep is true when the delivered record stays (a state not found may
	// come back; one not admitted starts over when admitted again).
	keep bool
}

// readStates reads the states n names: those it may send about, each with
// what was delivered of it (notify.Start when nothing was), and the others.
func (r *NotifierReconciler) readStates(ctx context.Context, n *v1beta1.DynamicIngressNotifier) ([]notify.State, []v1beta1.DeliveredState, []unreadState, error) {
	var states []notify.State
	var delivered []v1beta1.DeliveredState
	var unread []unreadState
	for _, ref := range n.Spec.States {
		state, why, err := r.readState(ctx, n.Namespace, ref)
		if err != nil {
			return nil, nil, nil, err
		}
		if why != nil {
			unread = append(unread, *why)
			continue
		}
		s := notify.State{Ref: ref, UID: string(state.UID), History: state.Status.History,
			Ready: meta.FindStatusCondition(state.Status.Conditions, v1beta1.ConditionReady)}
		if !ref.IsCluster() {
			s.Namespace = n.Namespace
		}
		key := stateKey(s.Namespace, ref.Name)
		s.Flip = r.flips.progress(key, n.Namespace)
		d, ok := findDelivered(n.Status.Delivered, ref)
		if !ok || d.UID != s.UID {
			d = notify.Start(s)
		}
		states = append(states, s)
		delivered = append(delivered, d)
	}
	return states, delivered, unread, nil
}

// readState reads one state n names, or says why it may not send about it.
func (r *NotifierReconciler) readState(ctx context.Context, namespace string, ref v1beta1.StateReference) (*v1beta1.DynamicIngressState, *unreadState, error) {
	if !ref.IsCluster() {
		state := &v1beta1.DynamicIngressState{}
		err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, state)
		if apierrors.IsNotFound(err) {
			return nil, &unreadState{ref: ref, reason: v1beta1.ReasonStateNotFound, keep: true,
				message: fmt.Sprintf("DynamicIngressState %q not found", ref.Name)}, nil
		}
		return state, nil, err
	}
	if !r.ClusterStates {
		return nil, &unreadState{ref: ref, reason: v1beta1.ReasonClusterStatesNotWatched, keep: true,
			message: fmt.Sprintf("ClusterDynamicIngressState %q is not read: the manager does not follow cluster states", ref.Name)}, nil
	}
	state := &v1beta1.ClusterDynamicIngressState{}
	err := r.Get(ctx, types.NamespacedName{Name: ref.Name}, state)
	if apierrors.IsNotFound(err) {
		return nil, &unreadState{ref: ref, reason: v1beta1.ReasonStateNotFound, keep: true,
			message: fmt.Sprintf("ClusterDynamicIngressState %q not found", ref.Name)}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.Get(ctx, types.NamespacedName{Name: namespace}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &unreadState{ref: ref, reason: v1beta1.ReasonStateNotAdmitted,
				message: fmt.Sprintf("namespace %q is not known yet", namespace)}, nil
		}
		return nil, nil, err
	}
	if msg := decision.NotAdmitted(ref.Name, state.Spec.Followers.Namespaces, namespace, ns.GetLabels()); msg != "" {
		return nil, &unreadState{ref: ref, reason: v1beta1.ReasonStateNotAdmitted, message: msg}, nil
	}
	return state.StateView(), nil, nil
}

// findDelivered is what was delivered of the state ref.
func findDelivered(delivered []v1beta1.DeliveredState, ref v1beta1.StateReference) (v1beta1.DeliveredState, bool) {
	kind := ref.Kind
	if kind == "" {
		kind = v1beta1.StateKindNamespaced
	}
	for _, d := range delivered {
		if d.Kind == kind && d.Name == ref.Name {
			return *d.DeepCopy(), true
		}
	}
	return v1beta1.DeliveredState{}, false
}

// mergeDelivered is the notifier's new delivered record, in the order of
// spec.states: the states read, and those not found as they were.
func mergeDelivered(n *v1beta1.DynamicIngressNotifier, states []notify.State, delivered []v1beta1.DeliveredState, unread []unreadState) []v1beta1.DeliveredState {
	var out []v1beta1.DeliveredState
	for _, ref := range n.Spec.States {
		kind := ref.Kind
		if kind == "" {
			kind = v1beta1.StateKindNamespaced
		}
		for i, s := range states {
			if s.Ref == ref {
				d := delivered[i]
				d.Kind = kind
				out = append(out, d)
			}
		}
		for _, u := range unread {
			if u.ref == ref && u.keep {
				if d, ok := findDelivered(n.Status.Delivered, ref); ok {
					out = append(out, d)
				}
			}
		}
	}
	return out
}

// overrides are the override audits of the switches in n's namespace that
// follow a state n names.
func (r *NotifierReconciler) overrides(ctx context.Context, n *v1beta1.DynamicIngressNotifier) ([]notify.Override, error) {
	lists := []client.ObjectList{&v1beta1.DynamicIngressList{}}
	if r.HTTPRoutes {
		lists = append(lists, &v1beta1.DynamicHTTPRouteList{})
	}
	seen := map[string]bool{}
	var out []notify.Override
	for _, ref := range n.Spec.States {
		field := index.State
		if ref.IsCluster() {
			field = index.ClusterState
		}
		for _, list := range lists {
			if err := r.List(ctx, list, client.InNamespace(n.Namespace), client.MatchingFields{field: ref.Name}, client.UnsafeDisableDeepCopy); err != nil {
				return nil, err
			}
			if err := meta.EachListItem(list, func(o runtime.Object) error {
				obj := o.(client.Object)
				kind := switchKindOf(obj)
				at, err := time.Parse(time.RFC3339, obj.GetAnnotations()[v1beta1.OverrideAtAnnotation])
				if err != nil || seen[kind+"/"+obj.GetName()] {
					return nil
				}
				seen[kind+"/"+obj.GetName()] = true
				mode := ""
				switch sw := obj.(type) {
				case *v1beta1.DynamicIngress:
					mode = string(sw.Spec.Override)
				case *v1beta1.DynamicHTTPRoute:
					mode = string(sw.Spec.Override)
				}
				out = append(out, notify.Override{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: string(obj.GetUID()),
					Mode: mode, By: obj.GetAnnotations()[v1beta1.OverrideByAnnotation], At: at})
				return nil
			}); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// switchKindOf is the kind of a switch object.
func switchKindOf(obj client.Object) string {
	if _, ok := obj.(*v1beta1.DynamicHTTPRoute); ok {
		return "DynamicHTTPRoute"
	}
	return "DynamicIngress"
}

// deliveryOutcome is what one turn of sending ended with.
type deliveryOutcome struct {
	// retryAfter is when to send the first undelivered notification again
	// (zero when none failed in a way worth retrying).
	retryAfter time.Duration
	// more is true when notifications are left for the next turn.
	more bool
	// failure is the last failure's reason (DeliveryFailing or
	// SecretNotFound) and message, "" when the turn ended delivered.
	reason, message string
}

// deliver sends events in order, each once delivered, refused, or not
// wanted (n.Spec.Events), until one fails in a way worth retrying.
func (r *NotifierReconciler) deliver(ctx context.Context, n *v1beta1.DynamicIngressNotifier, events []notify.Event,
	delivered []v1beta1.DeliveredState, last **v1beta1.DeliveredOverride) deliveryOutcome {
	var out deliveryOutcome
	key := types.NamespacedName{Namespace: n.Namespace, Name: n.Name}
	sent := 0
	for _, e := range events {
		if !n.SendsEvent(e.Type) {
			notify.Delivered(e, delivered, last)
			continue
		}
		if sent == notificationsPerTurn {
			out.more = true
			return out
		}
		sent++
		result, retry, reason := r.send(ctx, n, e)
		n.Status.LastDelivery = &v1beta1.NotificationDelivery{Time: metav1.NewTime(r.now()), Type: e.Type, ID: e.ID, Result: result}
		switch {
		case result == resultDelivered:
			metrics.CountNotification(n.Namespace, n.Name, string(e.Type), metrics.NotificationDelivered)
			notify.Delivered(e, delivered, last)
			n.Status.Dropped += e.Data.Dropped
			r.setFailures(key, 0)
			out.reason, out.message = "", ""
		case retry:
			metrics.CountNotification(n.Namespace, n.Name, string(e.Type), metrics.NotificationRetried)
			n.Status.Failed++
			out.retryAfter = deliveryBackoff(r.setFailures(key, 1))
			r.setRetryAt(key, r.now().Add(out.retryAfter))
			out.reason, out.message = reason, fmt.Sprintf("%s %s not delivered, sent again in %s: %s", e.Type, e.ID, out.retryAfter, result)
			return out
		default:
			metrics.CountNotification(n.Namespace, n.Name, string(e.Type), metrics.NotificationFailed)
			n.Status.Failed++
			notify.Delivered(e, delivered, last)
			n.Status.Dropped += e.Data.Dropped
			r.setFailures(key, 0)
			out.reason, out.message = v1beta1.ReasonDeliveryFailing, fmt.Sprintf("%s %s refused by the sink, not sent again: %s", e.Type, e.ID, result)
		}
	}
	return out
}

// resultDelivered is a delivery's result when the sink took it.
const resultDelivered = "Delivered"

// send posts e to n's sink once: the result ("Delivered", or what went
// wrong), whether to send it again, and the condition reason of a failure.
func (r *NotifierReconciler) send(ctx context.Context, n *v1beta1.DynamicIngressNotifier, e notify.Event) (result string, retry bool, reason string) {
	format := n.Spec.Sink.Format
	body, contentType, err := notify.Body(e, format)
	if err != nil {
		return "could not be written: " + err.Error(), false, v1beta1.ReasonDeliveryFailing
	}
	resp, err := r.Sender.Probe(ctx, probe.Request{
		Method: http.MethodPost, URL: n.Spec.Sink.URL, Headers: sinkHeaders(n),
		Timeout: DeliveryTimeout, Tenant: n.Namespace, Body: body, ContentType: contentType,
	})
	if err != nil {
		var perr *probe.Error
		if errors.As(err, &perr) && perr.Reason == probe.ReasonSecret {
			return err.Error(), true, v1beta1.ReasonSecretNotFound
		}
		return err.Error(), true, v1beta1.ReasonDeliveryFailing
	}
	code, _ := strconv.Atoi(resp.StatusCode)
	switch {
	case code >= 200 && code < 300:
		return resultDelivered, false, ""
	case code == http.StatusTooManyRequests || code >= 500:
		return "HTTP " + resp.StatusCode, true, v1beta1.ReasonDeliveryFailing
	default:
		return "HTTP " + resp.StatusCode, false, v1beta1.ReasonDeliveryFailing
	}
}

// sinkHeaders are the sink's headers as the prober sends them.
func sinkHeaders(n *v1beta1.DynamicIngressNotifier) []probe.Header {
	var out []probe.Header
	for _, h := range n.Spec.Sink.Headers {
		ph := probe.Header{Name: h.Name, Value: h.Value}
		if h.ValueFrom != nil {
			ph.FromSecret = &probe.SecretKey{Namespace: n.Namespace, Name: h.ValueFrom.SecretKeyRef.Name, Key: h.ValueFrom.SecretKeyRef.Key}
		}
		out = append(out, ph)
	}
	return out
}

// deliveryBackoff is the wait before the next attempt after failures
// consecutive failures: 1s, 2s, 4s, ... up to 5 min.
func deliveryBackoff(failures int) time.Duration {
	d := MinDeliveryBackoff
	for i := 1; i < failures && d < MaxDeliveryBackoff; i++ {
		d *= 2
	}
	return min(d, MaxDeliveryBackoff)
}

// notifierReady is n's Ready condition after a turn that ended with out.
func notifierReady(n *v1beta1.DynamicIngressNotifier, out deliveryOutcome, unread []unreadState) metav1.Condition {
	c := metav1.Condition{Type: v1beta1.ConditionReady, ObservedGeneration: n.Generation}
	switch {
	case out.reason != "":
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, out.reason, out.message
	case len(unread) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, unread[0].reason, unread[0].message+": nothing is sent about it"
	case n.Status.LastDelivery != nil:
		c.Status, c.Reason = metav1.ConditionTrue, v1beta1.ReasonDelivered
		c.Message = fmt.Sprintf("Delivered %s %s", n.Status.LastDelivery.Type, n.Status.LastDelivery.ID)
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1beta1.ReasonIdle, "Nothing to send yet"
	}
	if prev := meta.FindStatusCondition(n.Status.Conditions, v1beta1.ConditionReady); prev != nil &&
		prev.Reason == v1beta1.ReasonDeliveryFailing && out.reason == "" && c.Status == metav1.ConditionTrue && n.Status.LastDelivery != nil &&
		n.Status.LastDelivery.Result != resultDelivered {
		// A refused notification stays said until the next is delivered.
		c.Status, c.Reason, c.Message = prev.Status, prev.Reason, prev.Message
	}
	return c
}

// stateNames are the names of states, comma-separated, for the STATES
// column.
func stateNames(states []v1beta1.StateReference) string {
	names := make([]string, 0, len(states))
	for _, ref := range states {
		names = append(names, ref.Name)
	}
	return strings.Join(names, ",")
}

// sinkHost is the host of a sink URL, for the SINK column.
func sinkHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}

// enter takes one of namespace's sending turns; false when it has none.
func (r *NotifierReconciler) enter(namespace string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sending[namespace] >= deliveriesPerNamespace {
		return false
	}
	r.sending[namespace]++
	return true
}

func (r *NotifierReconciler) leave(namespace string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sending[namespace]--; r.sending[namespace] <= 0 {
		delete(r.sending, namespace)
	}
}

// setFailures resets (add 0) or counts one more (add 1) consecutive
// failure of the notifier key, and returns the count.
func (r *NotifierReconciler) setFailures(key types.NamespacedName, add int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if add == 0 {
		delete(r.failures, key)
		delete(r.retryAt, key)
		return 0
	}
	r.failures[key] += add
	return r.failures[key]
}

// setRetryAt sets when the notifier key may send again.
func (r *NotifierReconciler) setRetryAt(key types.NamespacedName, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.retryAt[key] = at
}

// waitBeforeRetry is how long the notifier key must still wait before its
// next attempt; zero when it may send.
func (r *NotifierReconciler) waitBeforeRetry(key types.NamespacedName, now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return max(r.retryAt[key].Sub(now), 0)
}

// forget drops what is kept of a deleted notifier.
func (r *NotifierReconciler) forget(key types.NamespacedName) {
	r.setFailures(key, 0)
	metrics.ForgetNotifier(key.Namespace, key.Name)
}

// SetupWithManager registers the notifier controller: it watches
// notifiers, the states they name, and the override audits of switches.
func (r *NotifierReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.now == nil {
		r.now = time.Now
	}
	r.failures = map[types.NamespacedName]int{}
	r.retryAt = map[types.NamespacedName]time.Time{}
	r.sending = map[string]int{}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1beta1.DynamicIngressNotifier{}, notifierState, func(o client.Object) []string {
		var keys []string
		for _, ref := range o.(*v1beta1.DynamicIngressNotifier).Spec.States {
			keys = append(keys, notifierStateKey(ref))
		}
		return keys
	}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&v1beta1.DynamicIngressNotifier{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1beta1.DynamicIngressState{}, handler.EnqueueRequestsFromMapFunc(r.stateToNotifiers)).
		Watches(&v1beta1.DynamicIngress{}, handler.EnqueueRequestsFromMapFunc(r.switchToNotifiers), builder.WithPredicates(overrideAuditChanged())).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: notifierWorkers,
			RateLimiter:             retryRateLimiter(),
			LogConstructor:          reconcileLogger(mgr, "dynamicingressnotifier", "DynamicIngressNotifier"),
		}).
		Named("dynamicingressnotifier")
	if r.ClusterStates {
		b = b.Watches(&v1beta1.ClusterDynamicIngressState{}, handler.EnqueueRequestsFromMapFunc(r.stateToNotifiers))
	}
	if r.HTTPRoutes {
		b = b.Watches(&v1beta1.DynamicHTTPRoute{}, handler.EnqueueRequestsFromMapFunc(r.switchToNotifiers), builder.WithPredicates(overrideAuditChanged()))
	}
	return b.Complete(r)
}

// stateToNotifiers are the notifiers that name a state.
func (r *NotifierReconciler) stateToNotifiers(ctx context.Context, o client.Object) []reconcile.Request {
	ref := v1beta1.StateReference{Name: o.GetName()}
	opts := []client.ListOption{}
	if o.GetNamespace() == "" {
		ref.Kind = v1beta1.StateKindCluster
	} else {
		opts = append(opts, client.InNamespace(o.GetNamespace()))
	}
	opts = append(opts, client.MatchingFields{notifierState: notifierStateKey(ref)})
	return r.listNotifiers(ctx, opts...)
}

// switchToNotifiers are the notifiers of a switch's namespace: one of them
// may name a state it follows.
func (r *NotifierReconciler) switchToNotifiers(ctx context.Context, o client.Object) []reconcile.Request {
	return r.listNotifiers(ctx, client.InNamespace(o.GetNamespace()))
}

func (r *NotifierReconciler) listNotifiers(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
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

// overrideAuditChanged passes a switch created with an override audit, or
// whose override audit changed.
func overrideAuditChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			_, ok := e.Object.GetAnnotations()[v1beta1.OverrideAtAnnotation]
			return ok
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetAnnotations()[v1beta1.OverrideAtAnnotation] != e.ObjectNew.GetAnnotations()[v1beta1.OverrideAtAnnotation] ||
				e.ObjectOld.GetAnnotations()[v1beta1.OverrideByAnnotation] != e.ObjectNew.GetAnnotations()[v1beta1.OverrideByAnnotation]
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

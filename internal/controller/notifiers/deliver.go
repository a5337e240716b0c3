package notifiers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/metrics"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/notify"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
)

// How a notifier sends: in order, through the probes' guarded client, at
// the backoff's pace, one notifier of a namespace at a time.

const (
	// DeliveryTimeout bounds one attempt at posting a notification.
	DeliveryTimeout = 10 * time.Second
	// notificationsPerTurn is how many notifications one turn sends
	// before it gives its namespace's turn back, so that a notifier with
	// much to send does not hold it.
	notificationsPerTurn = 20
	// deliveriesPerNamespace is how many notifiers of one namespace send
	// at once: the others of the namespace wait their turn. Sending runs
	// beside the workers, so that slow sinks, of one namespace or of
	// several, leave them to the other namespaces.
	deliveriesPerNamespace = 1
)

// deliveryOutcome is what one turn of sending ended with.
type deliveryOutcome struct {
	// retryAfter is when to send the first undelivered notification again
	// (zero when none failed in a way worth retrying).
	retryAfter time.Duration
	// more is true when notifications are left for the next turn.
	more bool
	// failure is the turn's last failure, the zero Failure when it ended
	// delivered.
	failure notify.Failure
}

// deliver sends events in order, each once delivered, refused, or not
// wanted (n.Spec.Events), until one fails in a way worth retrying.
func (r *Reconciler) deliver(ctx context.Context, n *v1beta1.DynamicIngressNotifier, events []notify.Event,
	delivered []v1beta1.DeliveredState, sentOverrides *[]v1beta1.DeliveredOverride) deliveryOutcome {
	var out deliveryOutcome
	key := types.NamespacedName{Namespace: n.Namespace, Name: n.Name}
	sent := 0
	for _, e := range events {
		if !n.SendsEvent(e.Type) {
			notify.Delivered(e, delivered, sentOverrides)
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
		case result == notify.ResultDelivered:
			metrics.CountNotification(n.Namespace, n.Name, string(e.Type), metrics.NotificationDelivered)
			notify.Delivered(e, delivered, sentOverrides)
			n.Status.Dropped += e.Data.Dropped
			r.setFailures(key, 0)
			out.failure = notify.Failure{}
		case retry:
			metrics.CountNotification(n.Namespace, n.Name, string(e.Type), metrics.NotificationRetried)
			n.Status.Failed++
			out.retryAfter = notify.Backoff(r.setFailures(key, 1))
			r.setRetryAt(key, r.now().Add(out.retryAfter))
			out.failure = notify.Failure{Reason: reason, Message: fmt.Sprintf("%s %s not delivered, sent again in %s: %s", e.Type, e.ID, out.retryAfter, result)}
			return out
		default:
			metrics.CountNotification(n.Namespace, n.Name, string(e.Type), metrics.NotificationFailed)
			n.Status.Failed++
			notify.Delivered(e, delivered, sentOverrides)
			n.Status.Dropped += e.Data.Dropped
			r.setFailures(key, 0)
			out.failure = notify.Failure{Reason: v1beta1.ReasonDeliveryFailing, Message: fmt.Sprintf("%s %s refused by the sink, not sent again: %s", e.Type, e.ID, result)}
		}
	}
	return out
}

// send posts e to n's sink once: the result (notify.ResultDelivered, or
// what went wrong), whether to send it again, and the condition reason of
// a failure.
func (r *Reconciler) send(ctx context.Context, n *v1beta1.DynamicIngressNotifier, e notify.Event) (result string, retry bool, reason string) {
	body, contentType, err := notify.Body(e, n.Spec.Sink.Format)
	if err != nil {
		return "could not be written: " + err.Error(), false, v1beta1.ReasonDeliveryFailing
	}
	resp, err := r.Sender.Probe(ctx, probe.Request{
		Method: http.MethodPost, URL: n.Spec.Sink.URL, Headers: probe.HeadersOf(n.Namespace, n.Spec.Sink.Headers),
		Timeout: DeliveryTimeout, Tenant: n.Namespace, Body: body, ContentType: contentType,
	})
	if err != nil {
		var perr *probe.Error
		if errors.As(err, &perr) && perr.Reason == probe.ReasonSecret {
			return err.Error(), true, v1beta1.ReasonSecretNotFound
		}
		return err.Error(), true, v1beta1.ReasonDeliveryFailing
	}
	delivered, retry := notify.Classify(resp.StatusCode)
	if delivered {
		return notify.ResultDelivered, false, ""
	}
	return "HTTP " + resp.StatusCode, retry, v1beta1.ReasonDeliveryFailing
}

// enter takes one of key's namespace's sending turns for the notifier
// key; false when the namespace has none free, and key is then woken
// when one is.
func (r *Reconciler) enter(key types.NamespacedName) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sending[key.Namespace] >= deliveriesPerNamespace {
		if !slices.Contains(r.waiting[key.Namespace], key) {
			r.waiting[key.Namespace] = append(r.waiting[key.Namespace], key)
		}
		return false
	}
	r.sending[key.Namespace]++
	return true
}

// leave gives a namespace's turn back, and wakes the notifier that has
// waited for it longest: its turn wakes the next one when it leaves.
func (r *Reconciler) leave(namespace string) {
	r.mu.Lock()
	if r.sending[namespace]--; r.sending[namespace] <= 0 {
		delete(r.sending, namespace)
	}
	var next types.NamespacedName
	if queue := r.waiting[namespace]; len(queue) > 0 {
		next = queue[0]
		if r.waiting[namespace] = queue[1:]; len(r.waiting[namespace]) == 0 {
			delete(r.waiting, namespace)
		}
	}
	r.mu.Unlock()
	if next.Name != "" {
		r.requeue(next)
	}
}

// requeue has the notifier key reconciled again (unless the manager is
// stopping).
func (r *Reconciler) requeue(key types.NamespacedName) {
	select {
	case r.wakeups <- event.GenericEvent{Object: &v1beta1.DynamicIngressNotifier{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}:
	case <-r.stopping:
	}
}

// setFailures resets (add 0) or counts one more (add 1) consecutive
// failure of the notifier key, and returns the count.
func (r *Reconciler) setFailures(key types.NamespacedName, add int) int {
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
func (r *Reconciler) setRetryAt(key types.NamespacedName, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.retryAt[key] = at
}

// waitBeforeRetry is how long the notifier key must still wait before its
// next attempt; zero when it may send.
func (r *Reconciler) waitBeforeRetry(key types.NamespacedName, now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return max(r.retryAt[key].Sub(now), 0)
}

// forget drops what is kept of a deleted notifier.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.setFailures(key, 0)
	metrics.ForgetNotifier(key.Namespace, key.Name)
}

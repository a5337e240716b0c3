package notify

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
)

// The backoff of a notification the sink did not take (docs/notifications.md).
const (
	// MinBackoff and MaxBackoff bound the wait before a failed
	// notification is sent again; it doubles at each failure.
	MinBackoff = time.Second
	MaxBackoff = 5 * time.Minute
)

// Backoff is the wait before the next attempt after failures consecutive
// failures: 1s, 2s, 4s, ... up to MaxBackoff.
func Backoff(failures int) time.Duration {
	d := MinBackoff
	for i := 1; i < failures && d < MaxBackoff; i++ {
		d *= 2
	}
	return min(d, MaxBackoff)
}

// Classify tells what a sink's answer means: delivered for 2xx; otherwise
// retry for 429 and 5xx, and a refusal not sent again for anything else (a
// 4xx, or a 1xx or 3xx: redirects are not followed).
func Classify(statusCode string) (delivered, retry bool) {
	code, _ := strconv.Atoi(statusCode)
	switch {
	case code >= 200 && code < 300:
		return true, false
	case code == 429 || code >= 500:
		return false, true
	default:
		return false, false
	}
}

// Unread is a state a notifier names and cannot send about, and why (a
// reason of its Ready condition and a message).
type Unread struct {
	Ref             v1beta1.StateReference
	Reason, Message string
	// Keep is true when what was delivered of it stays recorded: a state
	// not found may come back, and one not admitted resumes from what its
	// history still holds once admitted again.
	Keep bool
}

// kindOf is a reference's kind, DynamicIngressState when empty.
func kindOf(ref v1beta1.StateReference) v1beta1.StateKind {
	if ref.Kind == "" {
		return v1beta1.StateKindNamespaced
	}
	return ref.Kind
}

// Find is what was delivered of the state ref (a copy).
func Find(delivered []v1beta1.DeliveredState, ref v1beta1.StateReference) (v1beta1.DeliveredState, bool) {
	for _, d := range delivered {
		if d.Kind == kindOf(ref) && d.Name == ref.Name {
			return *d.DeepCopy(), true
		}
	}
	return v1beta1.DeliveredState{}, false
}

// Merge is a notifier's new delivered record, in the order of its states
// (refs): for each state read, delivered (index for index with read); for
// each unread one that Keep says, what previous had of it.
func Merge(refs []v1beta1.StateReference, read []State, delivered []v1beta1.DeliveredState, unread []Unread, previous []v1beta1.DeliveredState) []v1beta1.DeliveredState {
	var out []v1beta1.DeliveredState
	for _, ref := range refs {
		for i, s := range read {
			if s.Ref == ref {
				d := delivered[i]
				d.Kind = kindOf(ref)
				out = append(out, d)
			}
		}
		for _, u := range unread {
			if u.Ref == ref && u.Keep {
				if d, ok := Find(previous, ref); ok {
					out = append(out, d)
				}
			}
		}
	}
	return out
}

// OverrideOf is the override audit of a switch of kind (its
// override-by and override-at annotations, and of spec its pin: override,
// overrideUntil, overrideReason), with its status.override (pin) when that
// says the pin expired; false when it has no audit, or when the switch is
// being deleted: the admission webhooks no longer see its edits then, so
// its annotations may say anything (docs/notifications.md).
func OverrideOf(kind string, sw metav1.Object, spec v1beta1.SwitchSpec, pin *v1beta1.OverrideStatus) (Override, bool) {
	if sw.GetDeletionTimestamp() != nil {
		return Override{}, false
	}
	at, err := time.Parse(time.RFC3339, sw.GetAnnotations()[v1beta1.OverrideAtAnnotation])
	if err != nil {
		return Override{}, false
	}
	o := Override{Kind: kind, Namespace: sw.GetNamespace(), Name: sw.GetName(), UID: string(sw.GetUID()),
		Mode: string(spec.Override), By: sw.GetAnnotations()[v1beta1.OverrideByAnnotation], At: at,
		Reason: spec.OverrideReason, Follows: Follows(spec)}
	if spec.OverrideUntil != nil {
		until := spec.OverrideUntil.Time
		o.Until = &until
	}
	if expiryOf(pin) != nil {
		o.Expired = pin.DeepCopy()
	}
	o.Shown, o.Phase = pinShown(o, pin)
	if by := decision.ApprovedBy(sw.GetAnnotations()); by != "" && o.Mode != "" {
		approvedAt, _ := time.Parse(v1beta1.OverrideAtFormat, sw.GetAnnotations()[v1beta1.OverrideApprovedAtAnnotation])
		o.ApprovedBy, o.ApprovedAt = by, &approvedAt
	}
	return o, true
}

// pinShown says whether the switch's status.override (pin) shows the pin
// of the audit o, and its phase then: a removal needs no status; a pin
// whose status is still another pin's (or none) is not shown yet.
func pinShown(o Override, pin *v1beta1.OverrideStatus) (bool, string) {
	if o.Mode == "" {
		return true, ""
	}
	if pin == nil || string(pin.Mode) != o.Mode || pin.At == nil || pin.At.Unix() != o.At.Unix() {
		return false, ""
	}
	if pin.Phase == v1beta1.OverridePhaseExpired {
		// Ended before the notifier saw it: whether it held is not told.
		return true, ""
	}
	return true, string(pin.Phase)
}

// Follows names what a switch follows: its state's name, or
// anyOf(a, b) / allOf(a, b) with the names of the states of its list.
func Follows(spec v1beta1.SwitchSpec) string {
	c := spec.Combination()
	if c == v1beta1.CombinationSingle {
		return spec.State.Name
	}
	entries := spec.Entries()
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.State.Name)
	}
	return string(c) + "(" + strings.Join(names, ", ") + ")"
}

// StateNames are the names of states, comma-separated: the STATES column.
func StateNames(states []v1beta1.StateReference) string {
	names := make([]string, 0, len(states))
	for _, ref := range states {
		names = append(names, ref.Name)
	}
	return strings.Join(names, ",")
}

// SinkHost is the host of a sink URL: the SINK column.
func SinkHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}

// Failure is why a notifier's last turn did not end delivered: a reason
// of its Ready condition (DeliveryFailing, SecretNotFound) and a message;
// the zero Failure when it did.
type Failure struct {
	Reason, Message string
}

// ReadyCondition is a notifier's Ready condition after a turn: False with
// the turn's failure, else with the first state it cannot send about; True
// Delivered once something was delivered, Idle before. A refusal said by
// the previous condition (prev) stays said until the next notification is
// delivered.
func ReadyCondition(generation int64, failure Failure, unread []Unread, last *v1beta1.NotificationDelivery, prev *metav1.Condition) metav1.Condition {
	c := metav1.Condition{Type: v1beta1.ConditionReady, ObservedGeneration: generation}
	switch {
	case failure.Reason != "":
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, failure.Reason, failure.Message
	case len(unread) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, unread[0].Reason, unread[0].Message+": nothing is sent about it"
	case last != nil:
		c.Status, c.Reason = metav1.ConditionTrue, v1beta1.ReasonDelivered
		c.Message = fmt.Sprintf("Delivered %s %s", last.Type, last.ID)
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1beta1.ReasonIdle, "Nothing to send yet"
	}
	if prev != nil && prev.Reason == v1beta1.ReasonDeliveryFailing && c.Status == metav1.ConditionTrue &&
		last != nil && last.Result != ResultDelivered {
		c.Status, c.Reason, c.Message = prev.Status, prev.Reason, prev.Message
	}
	return c
}

// ResultDelivered is a delivery's result when the sink took it.
const ResultDelivered = "Delivered"

// Package notify decides what a DynamicIngressNotifier has to send, and
// writes it as a CloudEvent or a Slack message (docs/notifications.md). It
// takes values and returns values: the notifier controller reads the
// states and delivers.
package notify

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// State is what a notifier reads of one state it names.
type State struct {
	Ref v1beta1.StateReference
	// Namespace is the state's namespace, "" for a cluster state.
	Namespace string
	UID       string
	// History is the state's status.history, newest first.
	History []v1beta1.HistoryEntry
	// Ready is the state's Ready condition, nil when it has none.
	Ready *metav1.Condition
	// Flip is the flip of the newest change still in progress, nil when
	// none is (it completed, it had no followers, or the manager
	// restarted since).
	Flip *FlipProgress
}

// FlipProgress is a change that not every follower shows yet.
type FlipProgress struct {
	// Remaining is how many followers do not show it yet, in every
	// namespace.
	Remaining int
	// Names are up to MaxStalledNames of them in the notifier's namespace,
	// "kind/name", sorted.
	Names []string
}

// MaxStalledNames is how many followers a FlipStalled names.
const MaxStalledNames = 10

// Override is a switch's override audit: it got, changed or lost
// spec.override; and, once the pin ended by its overrideUntil, its expiry.
type Override struct {
	// Kind, Namespace and Name name the switch.
	Kind, Namespace, Name string
	UID                   string
	// Mode is spec.override, "" once removed.
	Mode string
	// By and At are its override audit annotations.
	By string
	At time.Time
	// Until and Reason are spec.overrideUntil (nil without one) and
	// spec.overrideReason.
	Until  *time.Time
	Reason string
	// Expired is the switch's status.override while it says the pin
	// expired (phase Expired, with its until), nil otherwise: the pin the
	// operator ended, which may be older than the audit when the status
	// has not caught up with a new pin yet.
	Expired *v1beta1.OverrideStatus
	// Follows names what the switch follows again once its pin ended: its
	// state's name, or anyOf(a, b) / allOf(a, b).
	Follows string
	// Phase is the pin's phase as the switch's status shows it for this
	// pin (PendingApproval or InEffect; "" for a removal). Shown is false
	// while the status has not caught up with the pin: its Overridden
	// waits, so that it says whether the pin awaits approval.
	Phase string
	Shown bool
	// ApprovedBy and ApprovedAt are the approval annotations, for a pin
	// that was approved: the approval is a change of its own, sent as an
	// Overridden in effect.
	ApprovedBy string
	ApprovedAt *time.Time
}

// key orders and names an override change: "kind/name".
func (o Override) key() string { return o.Kind + "/" + o.Name }

// mark is the time of the switch's last override change: its approval's,
// else its audit's. A notifier records it as delivered.
func (o Override) mark() time.Time {
	if o.ApprovedAt != nil {
		return *o.ApprovedAt
	}
	return o.At
}

// Start is what a notifier records of a state it has not sent anything
// about yet: the state as it is now, so that only what follows is sent
// (creating a notifier does not resend a state's whole history).
func Start(s State) v1beta1.DeliveredState {
	d := v1beta1.DeliveredState{Kind: s.Ref.Kind, Name: s.Ref.Name, UID: s.UID}
	if len(s.History) > 0 {
		d.Sequence = s.History[0].Sequence
		d.Completed = d.Sequence
		d.Stalled = d.Sequence
	}
	if s.Ready != nil && s.Ready.Status == metav1.ConditionFalse {
		d.ProbeFailedAt = s.Ready.LastTransitionTime.DeepCopy()
	}
	return d
}

// Event is one notification to send, in no format yet.
type Event struct {
	Type v1beta1.NotificationType
	// ID is the same at every attempt: a sink drops what it already has.
	ID   string
	Time time.Time
	// Source is the state's path (or, for Overridden and
	// OverrideExpired, the path of the notifier's first state) and
	// Subject its name.
	Source, Subject string
	Data            Data
	// StateIndex is the index of the state in the notifier's states (the
	// one whose delivered record advances once it is delivered), -1 for
	// Overridden and OverrideExpired.
	StateIndex int
	// Sequence is the history sequence it is about.
	Sequence int64
	override *Override
	// order is when it is sent among the others: Time, except that the
	// changes of one state keep the order of their sequence even when the
	// clocks that stamped them did not (two replicas, one behind).
	order time.Time
}

// Data is a notification's content, the CloudEvent's data.
type Data struct {
	State    StateName `json:"state"`
	Sequence int64     `json:"sequence,omitempty"`
	// Cause, From and To describe a StateChanged.
	Cause string `json:"cause,omitempty"`
	From  *Code  `json:"from,omitempty"`
	To    *Code  `json:"to,omitempty"`
	// Followers, Namespaces and CompletedAfter describe a FlipCompleted.
	Followers      int32  `json:"followers,omitempty"`
	Namespaces     int32  `json:"namespaces,omitempty"`
	CompletedAfter string `json:"completedAfter,omitempty"`
	// StalledAfter, Remaining and Switches describe a FlipStalled:
	// Switches names up to ten in the notifier's namespace.
	StalledAfter string   `json:"stalledAfter,omitempty"`
	Remaining    int      `json:"remaining,omitempty"`
	Switches     []string `json:"switches,omitempty"`
	// Reason and Message are a ProbeFailed's Ready condition. Reason is
	// also an Overridden's and an OverrideExpired's spec.overrideReason.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Switch, Override, By, At and Until describe an Overridden and an
	// OverrideExpired: the pin's mode, who set it when, and when it ends
	// (or ended); Follows, an OverrideExpired, what the switch follows
	// again.
	Switch   *SwitchName `json:"switch,omitempty"`
	Override string      `json:"override,omitempty"`
	By       string      `json:"by,omitempty"`
	At       string      `json:"at,omitempty"`
	Until    string      `json:"until,omitempty"`
	Follows  string      `json:"follows,omitempty"`
	// Phase and ApprovedBy describe an Overridden: whether the pin
	// awaits approval (PendingApproval) or holds (InEffect), and who
	// approved it.
	Phase      string `json:"phase,omitempty"`
	ApprovedBy string `json:"approvedBy,omitempty"`
	// Dropped counts the changes of the state that fell out of its
	// history before they were sent.
	Dropped int64 `json:"dropped,omitempty"`
}

// StateName names a state; Namespace is empty for a cluster state.
type StateName struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// SwitchName names a switch.
type SwitchName struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Code is a response's status code ("" when there was none) and body
// digest.
type Code struct {
	StatusCode string `json:"statusCode"`
	BodyDigest string `json:"bodyDigest,omitempty"`
}

// Source is the CloudEvents source of a state: its path.
func Source(ref v1beta1.StateReference, namespace string) string {
	if ref.IsCluster() {
		return "/clusterdynamicingressstates/" + ref.Name
	}
	return "/namespaces/" + namespace + "/dynamicingressstates/" + ref.Name
}

// Pending is what a notifier has to send, oldest first: for each state i,
// what follows delivered[i] (Start when it was never sent anything), and
// each switch's override change that sentOverrides (what was delivered of
// each switch) does not hold. stalledAfter is --flip-stalled-after. wake is
// when a flip in progress would stall (zero when none would): nothing
// changes then but the clock.
//
// Progress is by history sequence, never by time: the changes of a state
// are sent in the order of their sequence whatever times they carry.
func Pending(states []State, delivered []v1beta1.DeliveredState, overrides []Override, sentOverrides []v1beta1.DeliveredOverride,
	now time.Time, stalledAfter time.Duration) (events []Event, wake time.Time) {
	for i, s := range states {
		stateEvents, w := statePending(i, s, delivered[i], now, stalledAfter)
		events = append(events, stateEvents...)
		if !w.IsZero() && (wake.IsZero() || w.Before(wake)) {
			wake = w
		}
	}
	events = append(events, overridesPending(states, overrides, sentOverrides)...)
	slices.SortStableFunc(events, func(a, b Event) int {
		return cmp.Or(a.order.Compare(b.order), cmp.Compare(typeRank(a.Type), typeRank(b.Type)),
			cmp.Compare(a.StateIndex, b.StateIndex), cmp.Compare(a.Sequence, b.Sequence), cmp.Compare(a.ID, b.ID))
	})
	return events, wake
}

// monotonic is the order of a state's events of one type: the time they
// carry, but never before the previous one's (floor), so that sequence
// order survives clocks that went back.
func monotonic(at time.Time, floor *time.Time) time.Time {
	if at.Before(*floor) {
		at = *floor
	}
	*floor = at
	return at
}

// typeRank orders notifications of the same time: a change before its
// flip's outcome.
func typeRank(t v1beta1.NotificationType) int {
	return slices.Index(v1beta1.NotificationTypes, t)
}

// statePending is what follows d about the state s.
func statePending(i int, s State, d v1beta1.DeliveredState, now time.Time, stalledAfter time.Duration) (events []Event, wake time.Time) {
	source := Source(s.Ref, s.Namespace)
	name := StateName{Kind: string(s.Ref.Kind), Namespace: s.Namespace, Name: s.Ref.Name}
	if name.Kind == "" {
		name.Kind = string(v1beta1.StateKindNamespaced)
	}
	base := func(t v1beta1.NotificationType, seq int64, at time.Time, suffix string) Event {
		return Event{Type: t, ID: s.UID + "/" + suffix, Time: at, order: at, Source: source, Subject: s.Ref.Name,
			StateIndex: i, Sequence: seq, Data: Data{State: name, Sequence: seq}}
	}
	dropped := Dropped(s.History, d.Sequence)
	var changedFloor, completedFloor time.Time
	for j := len(s.History) - 1; j >= 0; j-- {
		h := s.History[j]
		at := h.Time.Time
		changedAt := monotonic(at, &changedFloor)
		if h.Sequence > d.Sequence {
			e := base(v1beta1.NotificationStateChanged, h.Sequence, at, strconv.FormatInt(h.Sequence, 10)+"/statechanged")
			e.order = changedAt
			e.Data.Cause = string(h.Cause)
			e.Data.To = &Code{StatusCode: h.StatusCode, BodyDigest: h.BodyDigest}
			if j+1 < len(s.History) {
				prev := s.History[j+1]
				e.Data.From = &Code{StatusCode: prev.StatusCode, BodyDigest: prev.BodyDigest}
			}
			e.Data.Dropped = dropped
			dropped = 0
			events = append(events, e)
		}
		if h.Flip != nil && h.Sequence > d.Completed {
			after, _ := time.ParseDuration(h.Flip.CompletedAfter)
			e := base(v1beta1.NotificationFlipCompleted, h.Sequence, at.Add(after), strconv.FormatInt(h.Sequence, 10)+"/flipcompleted")
			e.order = monotonic(changedAt.Add(after), &completedFloor)
			e.Data.To = &Code{StatusCode: h.StatusCode, BodyDigest: h.BodyDigest}
			e.Data.Followers = h.Flip.Followers
			e.Data.Namespaces = h.Flip.Namespaces
			e.Data.CompletedAfter = h.Flip.CompletedAfter
			events = append(events, e)
		}
	}
	if len(s.History) > 0 {
		newest := s.History[0]
		if newest.Flip == nil && s.Flip != nil && newest.Sequence > d.Stalled && newest.Sequence > d.Completed {
			due := newest.Time.Add(stalledAfter)
			if now.Before(due) {
				wake = due
			} else {
				e := base(v1beta1.NotificationFlipStalled, newest.Sequence, due, strconv.FormatInt(newest.Sequence, 10)+"/flipstalled")
				// After its change, whatever the clock that stamped it.
				e.order = changedFloor.Add(stalledAfter)
				e.Data.To = &Code{StatusCode: newest.StatusCode, BodyDigest: newest.BodyDigest}
				e.Data.StalledAfter = stalledAfter.String()
				e.Data.Remaining = s.Flip.Remaining
				e.Data.Switches = s.Flip.Names
				events = append(events, e)
			}
		}
	}
	// A ProbeFailed is a transition of Ready to False that was not sent:
	// one at another time than the last sent, earlier or later (the clock
	// that stamped it may be behind the one before).
	if s.Ready != nil && s.Ready.Status == metav1.ConditionFalse &&
		(d.ProbeFailedAt == nil || !s.Ready.LastTransitionTime.Equal(d.ProbeFailedAt)) {
		at := s.Ready.LastTransitionTime.Time
		e := base(v1beta1.NotificationProbeFailed, 0, at, "probefailed/"+strconv.FormatInt(at.Unix(), 10))
		e.Data.Reason = s.Ready.Reason
		e.Data.Message = ProbeFailedMessage(s.Ref, s.Ready.Message)
		events = append(events, e)
	}
	return events, wake
}

// ProbeFailedMessage is what a ProbeFailed says of why a state's Ready
// turned False: its message for a state of the notifier's own namespace,
// nothing for a cluster state, whose message is the platform's (it may
// name its Secrets or its endpoints); the reason is sent either way.
func ProbeFailedMessage(ref v1beta1.StateReference, message string) string {
	if ref.IsCluster() {
		return ""
	}
	return message
}

// Dropped is how many changes of a state fell out of its history (newest
// first) after the one delivered last (sequence).
func Dropped(history []v1beta1.HistoryEntry, sequence int64) int64 {
	if len(history) == 0 {
		return 0
	}
	oldest := history[len(history)-1].Sequence
	return max(0, oldest-1-sequence)
}

// overridesPending are the override changes of each switch that sent
// does not hold as delivered, and the expired pins it does not hold as
// sent. Their source is the notifier's first state: a switch may follow
// several.
func overridesPending(states []State, overrides []Override, sent []v1beta1.DeliveredOverride) []Event {
	var events []Event
	src, subject := "", ""
	if len(states) > 0 {
		src, subject = Source(states[0].Ref, states[0].Namespace), states[0].Ref.Name
	}
	for _, o := range overrides {
		o := o
		name := &SwitchName{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
		if o.Shown && !overrideSent(o, sent) {
			e := Event{
				Type: v1beta1.NotificationOverridden, ID: o.UID + "/overridden/" + strconv.FormatInt(o.mark().UnixMicro(), 10),
				Time: o.mark(), order: o.mark(), Source: src, Subject: subject, StateIndex: -1, override: &o,
				Data: Data{Switch: name, Override: o.Mode, By: o.By, At: o.At.UTC().Format(v1beta1.OverrideAtFormat), Reason: o.Reason,
					Phase: o.Phase, ApprovedBy: o.ApprovedBy},
			}
			if o.Until != nil && o.Mode != "" {
				e.Data.Until = o.Until.UTC().Format(time.RFC3339)
			}
			events = append(events, e)
		}
		if x := expiryOf(o.Expired); x != nil && !expirySent(o, x, sent) {
			p := o.Expired
			e := Event{
				Type: v1beta1.NotificationOverrideExpired, ID: ExpiryID(o.UID, x),
				// Never before the switch's Overridden: its record comes
				// first (a tie goes to Overridden, typeRank).
				Time: x.Until.Time, order: later(x.Until.Time, o.At), Source: src, Subject: subject, StateIndex: -1, override: &o,
				Data: Data{Switch: name, Override: string(p.Mode), By: p.By, Reason: p.Reason,
					Until: x.Until.UTC().Format(time.RFC3339), Follows: o.Follows},
			}
			if x.At != nil {
				e.Data.At = x.At.UTC().Format(time.RFC3339)
			}
			events = append(events, e)
		}
	}
	return events
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.Before(b) {
		return b
	}
	return a
}

// expiryOf names the expired pin p (a switch's status.override), nil when
// p does not say the pin expired.
func expiryOf(p *v1beta1.OverrideStatus) *v1beta1.DeliveredExpiry {
	if p == nil || p.Phase != v1beta1.OverridePhaseExpired || p.Until == nil {
		return nil
	}
	x := &v1beta1.DeliveredExpiry{Until: *p.Until.DeepCopy()}
	if p.At != nil {
		x.At = p.At.DeepCopy()
	}
	return x
}

// ExpiryID is the id of the OverrideExpired of the switch uid's pin x:
// "<uid>/overrideexpired/<until>/<at>", Unix seconds (without "/<at>" when
// the pin has no audit time). A new pin has another until: its expiry
// has another id.
func ExpiryID(uid string, x *v1beta1.DeliveredExpiry) string {
	id := uid + "/overrideexpired/" + strconv.FormatInt(x.Until.Unix(), 10)
	if x.At != nil {
		id += "/" + strconv.FormatInt(x.At.Unix(), 10)
	}
	return id
}

// sameExpiry reports whether a and b name the same expired pin.
func sameExpiry(a, b *v1beta1.DeliveredExpiry) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Until.Equal(&b.Until) && (a.At == nil) == (b.At == nil) && (a.At == nil || a.At.Equal(b.At))
}

// overrideSent reports whether sent holds o's audit as delivered: the
// same switch with the same override-at (an audit is the switch's, not a
// point on a clock shared by all switches: one admitted earlier and stored
// later is still sent).
func overrideSent(o Override, sent []v1beta1.DeliveredOverride) bool {
	for _, d := range sent {
		if d.Switch == o.key() {
			return d.At.Time.Equal(o.mark())
		}
	}
	return false
}

// expirySent reports whether sent holds the expired pin x of o's switch
// as sent.
func expirySent(o Override, x *v1beta1.DeliveredExpiry, sent []v1beta1.DeliveredOverride) bool {
	for _, d := range sent {
		if d.Switch == o.key() {
			return sameExpiry(d.Expired, x)
		}
	}
	return false
}

// Delivered records e as delivered (or given up, or not wanted) in
// delivered and sentOverrides. A state's marks only go forward.
func Delivered(e Event, delivered []v1beta1.DeliveredState, sentOverrides *[]v1beta1.DeliveredOverride) {
	if e.override != nil {
		if e.Type == v1beta1.NotificationOverrideExpired {
			*sentOverrides = recordExpiry(*sentOverrides, *e.override, expiryOf(e.override.Expired))
		} else {
			*sentOverrides = recordOverride(*sentOverrides, *e.override)
		}
		return
	}
	d := &delivered[e.StateIndex]
	switch e.Type {
	case v1beta1.NotificationStateChanged:
		d.Sequence = max(d.Sequence, e.Sequence)
	case v1beta1.NotificationFlipCompleted:
		d.Completed = max(d.Completed, e.Sequence)
	case v1beta1.NotificationFlipStalled:
		d.Stalled = max(d.Stalled, e.Sequence)
	case v1beta1.NotificationProbeFailed:
		d.ProbeFailedAt = &metav1.Time{Time: e.Time}
	}
}

// findOverride is the index of the switch key's record in sent (sorted by
// switch), or where it goes.
func findOverride(sent []v1beta1.DeliveredOverride, key string) (int, bool) {
	return slices.BinarySearchFunc(sent, key, func(d v1beta1.DeliveredOverride, key string) int { return cmp.Compare(d.Switch, key) })
}

// recordOverride is sent with o's audit as the one delivered of its
// switch, sorted by switch; the switch's expiry record stays.
func recordOverride(sent []v1beta1.DeliveredOverride, o Override) []v1beta1.DeliveredOverride {
	i, found := findOverride(sent, o.key())
	if found {
		sent[i].At = metav1.NewMicroTime(o.mark())
		return sent
	}
	return slices.Insert(sent, i, v1beta1.DeliveredOverride{Switch: o.key(), At: metav1.NewMicroTime(o.mark())})
}

// recordExpiry is sent with x as the expired pin of o's switch whose
// OverrideExpired was sent. The switch has its record by then (its
// Overridden comes first); without one, o's audit counts as delivered
// with it.
func recordExpiry(sent []v1beta1.DeliveredOverride, o Override, x *v1beta1.DeliveredExpiry) []v1beta1.DeliveredOverride {
	i, found := findOverride(sent, o.key())
	if !found {
		sent = slices.Insert(sent, i, v1beta1.DeliveredOverride{Switch: o.key(), At: metav1.NewMicroTime(o.mark())})
	}
	sent[i].Expired = x
	return sent
}

// SentOverrides is a notifier's new record of the override audits
// delivered: of each switch in overrides (the audits it reads now), what
// sent holds of it; a switch no longer there is forgotten, and so is an
// expiry its status no longer shows (a new pin's is another). With seed
// (a notifier's first turn), every audit and expired pin there is now
// counts as delivered: what came before the notifier is not news.
func SentOverrides(sent []v1beta1.DeliveredOverride, overrides []Override, seed bool) []v1beta1.DeliveredOverride {
	var out []v1beta1.DeliveredOverride
	if seed {
		for _, o := range overrides {
			out = recordOverride(out, o)
			if x := expiryOf(o.Expired); x != nil {
				out = recordExpiry(out, o, x)
			}
		}
		return out
	}
	for _, o := range overrides {
		for _, d := range sent {
			if d.Switch != o.key() {
				continue
			}
			out = recordOverride(out, Override{Kind: o.Kind, Name: o.Name, At: d.At.Time})
			if x := expiryOf(o.Expired); x != nil && sameExpiry(d.Expired, x) {
				out = recordExpiry(out, o, x)
			}
		}
	}
	return out
}

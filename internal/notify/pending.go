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

// Override is a switch's override audit: it got or lost spec.override.
type Override struct {
	// Kind, Namespace and Name name the switch.
	Kind, Namespace, Name string
	UID                   string
	// Mode is spec.override, "" once removed.
	Mode string
	// By and At are its override audit annotations.
	By string
	At time.Time
}

// key orders and names an override change: "kind/name".
func (o Override) key() string { return o.Kind + "/" + o.Name }

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
	// Source is the state's path (or, for Overridden, the path of the
	// state the switch follows that the notifier names) and Subject its
	// name.
	Source, Subject string
	Data            Data
	// StateIndex is the index of the state in the notifier's states (the
	// one whose delivered record advances once it is delivered), -1 for
	// Overridden.
	StateIndex int
	// Sequence is the history sequence it is about.
	Sequence int64
	override *Override
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
	// Reason and Message are a ProbeFailed's Ready condition.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Switch, Override, By and At describe an Overridden.
	Switch   *SwitchName `json:"switch,omitempty"`
	Override string      `json:"override,omitempty"`
	By       string      `json:"by,omitempty"`
	At       string      `json:"at,omitempty"`
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
// the override changes after last. stalledAfter is --flip-stalled-after.
// wake is when a flip in progress would stall (zero when none would):
// nothing changes then but the clock.
func Pending(states []State, delivered []v1beta1.DeliveredState, overrides []Override, last *v1beta1.DeliveredOverride,
	now time.Time, stalledAfter time.Duration) (events []Event, wake time.Time) {
	for i, s := range states {
		stateEvents, w := statePending(i, s, delivered[i], now, stalledAfter)
		events = append(events, stateEvents...)
		if !w.IsZero() && (wake.IsZero() || w.Before(wake)) {
			wake = w
		}
	}
	events = append(events, overridesPending(states, overrides, last)...)
	slices.SortStableFunc(events, func(a, b Event) int {
		return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(typeRank(a.Type), typeRank(b.Type)), cmp.Compare(a.ID, b.ID))
	})
	return events, wake
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
		return Event{Type: t, ID: s.UID + "/" + suffix, Time: at, Source: source, Subject: s.Ref.Name,
			StateIndex: i, Sequence: seq, Data: Data{State: name, Sequence: seq}}
	}
	dropped := Dropped(s.History, d.Sequence)
	for j := len(s.History) - 1; j >= 0; j-- {
		h := s.History[j]
		at := h.Time.Time
		if h.Sequence > d.Sequence {
			e := base(v1beta1.NotificationStateChanged, h.Sequence, at, strconv.FormatInt(h.Sequence, 10)+"/statechanged")
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
				e.Data.To = &Code{StatusCode: newest.StatusCode, BodyDigest: newest.BodyDigest}
				e.Data.StalledAfter = stalledAfter.String()
				e.Data.Remaining = s.Flip.Remaining
				e.Data.Switches = s.Flip.Names
				events = append(events, e)
			}
		}
	}
	if s.Ready != nil && s.Ready.Status == metav1.ConditionFalse &&
		(d.ProbeFailedAt == nil || s.Ready.LastTransitionTime.After(d.ProbeFailedAt.Time)) {
		at := s.Ready.LastTransitionTime.Time
		e := base(v1beta1.NotificationProbeFailed, 0, at, "probefailed/"+strconv.FormatInt(at.Unix(), 10))
		e.Data.Reason = s.Ready.Reason
		e.Data.Message = s.Ready.Message
		events = append(events, e)
	}
	return events, wake
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

// overridesPending are the override changes after last. Their source is
// the notifier's first state: a switch may follow several.
func overridesPending(states []State, overrides []Override, last *v1beta1.DeliveredOverride) []Event {
	var events []Event
	for _, o := range overrides {
		if last != nil && !after(o, last) {
			continue
		}
		src, subject := "", ""
		if len(states) > 0 {
			src, subject = Source(states[0].Ref, states[0].Namespace), states[0].Ref.Name
		}
		o := o
		events = append(events, Event{
			Type: v1beta1.NotificationOverridden, ID: o.UID + "/overridden/" + strconv.FormatInt(o.At.UnixMicro(), 10),
			Time: o.At, Source: src, Subject: subject, StateIndex: -1, override: &o,
			Data: Data{Switch: &SwitchName{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name},
				Override: o.Mode, By: o.By, At: o.At.UTC().Format(v1beta1.OverrideAtFormat)},
		})
	}
	return events
}

// after reports whether o comes after the override delivered last: a
// later time, or the same time and a later switch (an audit written to the
// second, before the microsecond format).
func after(o Override, last *v1beta1.DeliveredOverride) bool {
	at := last.At.Time
	return o.At.After(at) || o.At.Equal(at) && o.key() > last.Switch
}

// Delivered records e as delivered (or given up, or not wanted) in
// delivered and last.
func Delivered(e Event, delivered []v1beta1.DeliveredState, last **v1beta1.DeliveredOverride) {
	if e.override != nil {
		*last = &v1beta1.DeliveredOverride{At: metav1.NewMicroTime(e.override.At), Switch: e.override.key()}
		return
	}
	d := &delivered[e.StateIndex]
	switch e.Type {
	case v1beta1.NotificationStateChanged:
		d.Sequence = e.Sequence
	case v1beta1.NotificationFlipCompleted:
		d.Completed = e.Sequence
	case v1beta1.NotificationFlipStalled:
		d.Stalled = e.Sequence
	case v1beta1.NotificationProbeFailed:
		d.ProbeFailedAt = &metav1.Time{Time: e.Time}
	}
}

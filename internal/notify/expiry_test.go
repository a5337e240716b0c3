package notify

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// The pins of switch shop/web in these tests: the first set by alice at
// t0+5s until t0+1h, the second by bob at t0+2h until t0+3h.
var (
	pin1At, pin1Until = t0.Add(5 * time.Second), t0.Add(time.Hour)
	pin2At, pin2Until = t0.Add(2 * time.Hour), t0.Add(3 * time.Hour)
)

const (
	pin1Overridden = "sw/overridden/1795946405000000"
	pin1Expired    = "sw/overrideexpired/1795950000/1795946405"
	pin2Overridden = "sw/overridden/1795953600000000"
	pin2Expired    = "sw/overrideexpired/1795957200/1795953600"
)

// webPin is shop/web's override audit for the pin set by by at at until
// until, with its status.override Expired when expired says so.
func webPin(by string, at, until time.Time, expired bool) Override {
	o := Override{Kind: "DynamicIngress", Namespace: "shop", Name: "web", UID: "sw", Mode: "Active", By: by, At: at,
		Until: &until, Reason: "INC-1234", Follows: "killswitch", Shown: true}
	if !expired {
		o.Phase = string(v1beta1.OverridePhaseInEffect)
	}
	if expired {
		statusAt, statusUntil := metav1.NewTime(at), metav1.NewTime(until)
		o.Expired = &v1beta1.OverrideStatus{Mode: v1beta1.ModeActive, By: by, At: &statusAt, Until: &statusUntil,
			Reason: "INC-1234", Phase: v1beta1.OverridePhaseExpired, Summary: "Active (Expired)"}
	}
	return o
}

// webSent is the record of shop/web: the audit at whose Overridden was
// delivered, and the expired pin (until, at) whose OverrideExpired was,
// when there is one.
func webSent(at time.Time, expired ...time.Time) []v1beta1.DeliveredOverride {
	d := v1beta1.DeliveredOverride{Switch: "DynamicIngress/web", At: metav1.NewMicroTime(at)}
	if len(expired) == 2 {
		pinAt := metav1.NewTime(expired[1])
		d.Expired = &v1beta1.DeliveredExpiry{Until: metav1.NewTime(expired[0]), At: &pinAt}
	}
	return []v1beta1.DeliveredOverride{d}
}

// TestOverrideExpiredPending: an OverrideExpired is pending while the
// switch's status.override says its pin expired and the record does not
// hold that pin's expiry as sent, whenever the notifier looks (one that
// was down sends it when it is back); it follows the pin's Overridden.
func TestOverrideExpiredPending(t *testing.T) {
	removed := Override{Kind: "DynamicIngress", Namespace: "shop", Name: "web", UID: "sw", By: "bob", At: pin2At, Shown: true}
	noUntil := webPin("alice", pin1At, pin1Until, true)
	noUntil.Expired.Until = nil
	tests := []struct {
		name string
		o    Override
		sent []v1beta1.DeliveredOverride
		want []string
	}{
		{"a pin in effect", webPin("alice", pin1At, pin1Until, false), webSent(pin1At), nil},
		{"a pin that expired", webPin("alice", pin1At, pin1Until, true), webSent(pin1At), []string{pin1Expired}},
		{"its expiry sent", webPin("alice", pin1At, pin1Until, true), webSent(pin1At, pin1Until, pin1At), nil},
		{"a notifier that was down through the pin: its Overridden, then its expiry",
			webPin("alice", pin1At, pin1Until, true), webSent(t0), []string{pin1Overridden, pin1Expired}},
		{"a switch the notifier never sent about", webPin("alice", pin1At, pin1Until, true), nil, []string{pin1Overridden, pin1Expired}},
		{"a new pin that expired after the first one's expiry was sent",
			webPin("bob", pin2At, pin2Until, true), webSent(pin2At, pin1Until, pin1At), []string{pin2Expired}},
		{"a new pin in effect after the first one's expiry was sent",
			webPin("bob", pin2At, pin2Until, false), webSent(pin1At, pin1Until, pin1At), []string{pin2Overridden}},
		{"an expired pin removed before the notifier saw it expire: the removal only",
			removed, webSent(pin1At), []string{pin2Overridden}},
		{"a status that says Expired without an until", noUntil, webSent(pin1At), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events, _ := Pending(nil, nil, []Override{tt.o}, tt.sent, t0.Add(4*time.Hour), time.Minute)
			if diff := cmp.Diff(tt.want, ids(events)); diff != "" {
				t.Errorf("Pending ids (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOverrideExpiredOnce: an expiry delivered is recorded and not sent
// again, turn after turn; a notifier created after the pin expired does
// not send it; a new pin forgets the old expiry, and its own expiry is
// sent once in turn.
func TestOverrideExpiredOnce(t *testing.T) {
	// Turn 1: the pin expired while its Overridden was delivered.
	first := []Override{webPin("alice", pin1At, pin1Until, true)}
	sent := SentOverrides(webSent(pin1At), first, false)
	events, _ := Pending(nil, nil, first, sent, t0.Add(4*time.Hour), time.Minute)
	if diff := cmp.Diff([]string{pin1Expired}, ids(events)); diff != "" {
		t.Fatalf("turn 1 (-want +got):\n%s", diff)
	}
	Delivered(events[0], nil, &sent)
	if diff := cmp.Diff(webSent(pin1At, pin1Until, pin1At), sent); diff != "" {
		t.Errorf("record after the expiry (-want +got):\n%s", diff)
	}
	// Turns 2 and 3: the record read back from the status.
	for turn := 2; turn <= 3; turn++ {
		sent = SentOverrides(sent, first, false)
		if again, _ := Pending(nil, nil, first, sent, t0.Add(4*time.Hour), time.Minute); len(again) != 0 {
			t.Errorf("turn %d: pending %v, want nothing", turn, ids(again))
		}
	}
	// A notifier created after the pin expired: not news.
	seeded := SentOverrides(nil, first, true)
	if again, _ := Pending(nil, nil, first, seeded, t0.Add(4*time.Hour), time.Minute); len(again) != 0 {
		t.Errorf("a new notifier: pending %v, want nothing", ids(again))
	}

	// A new pin: the old expiry is forgotten (the status no longer shows
	// it), the new pin's Overridden is sent.
	second := []Override{webPin("bob", pin2At, pin2Until, false)}
	sent = SentOverrides(sent, second, false)
	if diff := cmp.Diff(webSent(pin1At), sent); diff != "" {
		t.Errorf("record once the status shows the new pin (-want +got):\n%s", diff)
	}
	events, _ = Pending(nil, nil, second, sent, t0.Add(2*time.Hour), time.Minute)
	if diff := cmp.Diff([]string{pin2Overridden}, ids(events)); diff != "" {
		t.Fatalf("the new pin (-want +got):\n%s", diff)
	}
	Delivered(events[0], nil, &sent)
	// It expires: sent once.
	second = []Override{webPin("bob", pin2At, pin2Until, true)}
	for turn, want := range [][]string{{pin2Expired}, nil} {
		sent = SentOverrides(sent, second, false)
		events, _ = Pending(nil, nil, second, sent, t0.Add(4*time.Hour), time.Minute)
		if diff := cmp.Diff(want, ids(events)); diff != "" {
			t.Errorf("the new pin expired, turn %d (-want +got):\n%s", turn+1, diff)
		}
		for _, e := range events {
			Delivered(e, nil, &sent)
		}
	}
}

// TestOverrideData: an Overridden carries the pin's reason and until; an
// OverrideExpired the pin the status says expired (mode, who set it when,
// until, reason) and what the switch follows again, at its until.
func TestOverrideData(t *testing.T) {
	state := State{Ref: v1beta1.StateReference{Kind: v1beta1.StateKindNamespaced, Name: "killswitch"}, Namespace: "shop", UID: "u1"}
	events, _ := Pending([]State{state}, []v1beta1.DeliveredState{{}}, []Override{webPin("alice", pin1At, pin1Until, true)}, nil,
		t0.Add(4*time.Hour), time.Minute)
	web := &SwitchName{Kind: "DynamicIngress", Namespace: "shop", Name: "web"}
	type sent struct {
		Type            v1beta1.NotificationType
		ID              string
		Time            time.Time
		Source, Subject string
		Data            Data
	}
	want := []sent{
		{Type: v1beta1.NotificationOverridden, ID: pin1Overridden, Time: pin1At,
			Source: "/namespaces/shop/dynamicingressstates/killswitch", Subject: "killswitch",
			Data: Data{Switch: web, Override: "Active", By: "alice", At: "2026-11-29T10:00:05.000000Z",
				Until: "2026-11-29T11:00:00Z", Reason: "INC-1234"}},
		{Type: v1beta1.NotificationOverrideExpired, ID: pin1Expired, Time: pin1Until,
			Source: "/namespaces/shop/dynamicingressstates/killswitch", Subject: "killswitch",
			Data: Data{Switch: web, Override: "Active", By: "alice", At: "2026-11-29T10:00:05Z",
				Until: "2026-11-29T11:00:00Z", Reason: "INC-1234", Follows: "killswitch"}},
	}
	var got []sent
	for _, e := range events {
		got = append(got, sent{Type: e.Type, ID: e.ID, Time: e.Time, Source: e.Source, Subject: e.Subject, Data: e.Data})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestOverrideExpiredCloudEvent: the CloudEvent of an expiry, as a sink
// reads it.
func TestOverrideExpiredCloudEvent(t *testing.T) {
	state := State{Ref: v1beta1.StateReference{Kind: v1beta1.StateKindNamespaced, Name: "killswitch"}, Namespace: "shop", UID: "u1"}
	events, _ := Pending([]State{state}, []v1beta1.DeliveredState{{}}, []Override{webPin("alice", pin1At, pin1Until, true)},
		webSent(pin1At), t0.Add(4*time.Hour), time.Minute)
	if len(events) != 1 {
		t.Fatalf("events %v, want the expiry alone", ids(events))
	}
	raw, err := CloudEvent(events[0])
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"specversion":     "1.0",
		"id":              pin1Expired,
		"source":          "/namespaces/shop/dynamicingressstates/killswitch",
		"type":            "io.dynamicingress.overrideexpired",
		"subject":         "killswitch",
		"time":            "2026-11-29T11:00:00Z",
		"datacontenttype": "application/json",
		"data": map[string]any{
			"state":    map[string]any{"kind": "", "name": ""},
			"switch":   map[string]any{"kind": "DynamicIngress", "namespace": "shop", "name": "web"},
			"override": "Active",
			"by":       "alice",
			"at":       "2026-11-29T10:00:05Z",
			"until":    "2026-11-29T11:00:00Z",
			"reason":   "INC-1234",
			"follows":  "killswitch",
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CloudEvent (-want +got):\n%s", diff)
	}
}

// TestOverrideSlackText: the Slack lines of an override's notifications.
func TestOverrideSlackText(t *testing.T) {
	web := &SwitchName{Kind: "DynamicIngress", Namespace: "shop", Name: "storefront"}
	tests := []struct {
		name string
		e    Event
		want string
	}{
		{
			name: "a pin with its reason",
			e: Event{Type: v1beta1.NotificationOverridden, Data: Data{Switch: web, Override: "Active", By: "alice",
				At: "2026-12-02T02:00:00.000000Z", Reason: "INC-1234"}},
			want: "DynamicIngress shop/storefront: overridden to Active by alice at 2026-12-02T02:00:00.000000Z: INC-1234",
		},
		{
			name: "a pin with its until and reason",
			e: Event{Type: v1beta1.NotificationOverridden, Data: Data{Switch: web, Override: "Active", By: "alice",
				At: "2026-12-02T02:00:00.000000Z", Until: "2026-12-02T03:00:00Z", Reason: "INC-1234"}},
			want: "DynamicIngress shop/storefront: overridden to Active by alice at 2026-12-02T02:00:00.000000Z until 2026-12-02T03:00:00Z: INC-1234",
		},
		{
			name: "a pin without either",
			e: Event{Type: v1beta1.NotificationOverridden, Data: Data{Switch: web, Override: "Passive", By: "alice",
				At: "2026-12-02T02:00:00.000000Z"}},
			want: "DynamicIngress shop/storefront: overridden to Passive by alice at 2026-12-02T02:00:00.000000Z",
		},
		{
			name: "a pin that ended",
			e: Event{Type: v1beta1.NotificationOverrideExpired, Data: Data{Switch: web, Override: "Active", By: "alice",
				At: "2026-12-02T02:00:00Z", Until: "2026-12-02T03:00:00Z", Follows: "killswitch"}},
			want: "DynamicIngress shop/storefront: the pin to Active ended at 2026-12-02T03:00:00Z (overrideUntil); following killswitch again",
		},
		{
			name: "a pin that ended, with its reason, of a switch that follows a list",
			e: Event{Type: v1beta1.NotificationOverrideExpired, Data: Data{Switch: web, Override: "Passive", By: "alice",
				Until: "2026-12-02T03:00:00Z", Reason: "INC-1234", Follows: "anyOf(maintenance, killswitch)"}},
			want: "DynamicIngress shop/storefront: the pin to Passive (INC-1234) ended at 2026-12-02T03:00:00Z (overrideUntil); following anyOf(maintenance, killswitch) again",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SlackText(tt.e); got != tt.want {
				t.Errorf("SlackText = %q\nwant        %q", got, tt.want)
			}
		})
	}
}

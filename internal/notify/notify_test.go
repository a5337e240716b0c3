package notify

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// entry is a history entry seconds after t0.
func entry(seq int64, code string, seconds int, flip *v1beta1.FlipSummary) v1beta1.HistoryEntry {
	return v1beta1.HistoryEntry{Sequence: seq, Time: metav1.NewMicroTime(t0.Add(time.Duration(seconds) * time.Second)),
		StatusCode: code, Cause: v1beta1.HistoryCauseProbe, Flip: flip}
}

func killswitch(history ...v1beta1.HistoryEntry) State {
	return State{Ref: v1beta1.StateReference{Kind: v1beta1.StateKindNamespaced, Name: "killswitch"}, Namespace: "shop", UID: "u1", History: history}
}

// ids are the ids of events.
func ids(events []Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.ID)
	}
	return out
}

func TestPending(t *testing.T) {
	done := &v1beta1.FlipSummary{Followers: 200, CompletedAfter: "1.5s"}
	notReady := &metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "ProbeFailed", Message: "connection refused",
		LastTransitionTime: metav1.NewTime(t0.Add(30 * time.Second))}
	tests := []struct {
		name      string
		state     State
		delivered v1beta1.DeliveredState
		now       time.Time
		want      []string
		wantWake  time.Time
	}{
		{
			name:      "nothing after what was delivered",
			state:     killswitch(entry(2, "503", 10, done), entry(1, "200", 0, nil)),
			delivered: v1beta1.DeliveredState{Sequence: 2, Completed: 2},
			now:       t0.Add(time.Hour),
		},
		{
			name:      "a change, then its flip's completion",
			state:     killswitch(entry(2, "503", 10, done), entry(1, "200", 0, nil)),
			delivered: v1beta1.DeliveredState{Sequence: 1, Completed: 1},
			now:       t0.Add(time.Hour),
			want:      []string{"u1/2/statechanged", "u1/2/flipcompleted"},
		},
		{
			name:      "two changes in order, the first's flip between them",
			state:     killswitch(entry(3, "200", 20, nil), entry(2, "503", 10, done), entry(1, "200", 0, nil)),
			delivered: v1beta1.DeliveredState{Sequence: 1, Completed: 1},
			now:       t0.Add(21 * time.Second),
			want:      []string{"u1/2/statechanged", "u1/2/flipcompleted", "u1/3/statechanged"},
		},
		{
			name: "a flip in progress stalls after stalledAfter",
			state: func() State {
				s := killswitch(entry(2, "503", 10, nil), entry(1, "200", 0, nil))
				s.Flip = &FlipProgress{Remaining: 3, Names: []string{"DynamicIngress/a"}}
				return s
			}(),
			delivered: v1beta1.DeliveredState{Sequence: 2, Completed: 1, Stalled: 1},
			now:       t0.Add(70 * time.Second),
			want:      []string{"u1/2/flipstalled"},
		},
		{
			name: "and wakes the notifier when it would",
			state: func() State {
				s := killswitch(entry(2, "503", 10, nil), entry(1, "200", 0, nil))
				s.Flip = &FlipProgress{Remaining: 3}
				return s
			}(),
			delivered: v1beta1.DeliveredState{Sequence: 2, Completed: 1, Stalled: 1},
			now:       t0.Add(20 * time.Second),
			wantWake:  t0.Add(70 * time.Second),
		},
		{
			name:      "no flip in progress (no followers, or after a restart): no stall",
			state:     killswitch(entry(2, "503", 10, nil), entry(1, "200", 0, nil)),
			delivered: v1beta1.DeliveredState{Sequence: 2, Completed: 1, Stalled: 1},
			now:       t0.Add(time.Hour),
		},
		{
			name: "a stall is sent once",
			state: func() State {
				s := killswitch(entry(2, "503", 10, nil), entry(1, "200", 0, nil))
				s.Flip = &FlipProgress{Remaining: 3}
				return s
			}(),
			delivered: v1beta1.DeliveredState{Sequence: 2, Completed: 1, Stalled: 2},
			now:       t0.Add(time.Hour),
		},
		{
			name: "Ready turned False after the last ProbeFailed",
			state: func() State {
				s := killswitch(entry(1, "200", 0, nil))
				s.Ready = notReady
				return s
			}(),
			delivered: v1beta1.DeliveredState{Sequence: 1, ProbeFailedAt: &metav1.Time{Time: t0}},
			now:       t0.Add(time.Hour),
			want:      []string{"u1/probefailed/" + "1795946430"},
		},
		{
			name: "the same turn to False is sent once",
			state: func() State {
				s := killswitch(entry(1, "200", 0, nil))
				s.Ready = notReady
				return s
			}(),
			delivered: v1beta1.DeliveredState{Sequence: 1, ProbeFailedAt: notReady.LastTransitionTime.DeepCopy()},
			now:       t0.Add(time.Hour),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events, wake := Pending([]State{tt.state}, []v1beta1.DeliveredState{tt.delivered}, nil, nil, tt.now, time.Minute)
			if diff := cmp.Diff(tt.want, ids(events)); diff != "" {
				t.Errorf("Pending ids (-want +got):\n%s", diff)
			}
			if !wake.Equal(tt.wantWake) {
				t.Errorf("wake = %v, want %v", wake, tt.wantWake)
			}
		})
	}
}

// TestStartSendsNothingOfThePast: a notifier created after changes sends
// none of them, nor a failure that is already there.
func TestStartSendsNothingOfThePast(t *testing.T) {
	s := killswitch(entry(3, "503", 20, nil), entry(2, "200", 10, &v1beta1.FlipSummary{Followers: 1, CompletedAfter: "1s"}))
	s.Ready = &metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, LastTransitionTime: metav1.NewTime(t0)}
	s.Flip = &FlipProgress{Remaining: 1}
	events, _ := Pending([]State{s}, []v1beta1.DeliveredState{Start(s)}, nil, nil, t0.Add(time.Hour), time.Minute)
	if len(events) != 0 {
		t.Errorf("Pending after Start = %v, want nothing", ids(events))
	}
}

// TestDroppedChanges: changes that left the history before they were
// sent are counted on the first change sent.
func TestDroppedChanges(t *testing.T) {
	s := killswitch(entry(25, "200", 50, nil), entry(24, "503", 40, nil))
	events, _ := Pending([]State{s}, []v1beta1.DeliveredState{{Sequence: 20, Completed: 20, Stalled: 20}}, nil, nil, t0.Add(time.Hour), time.Minute)
	if diff := cmp.Diff([]string{"u1/24/statechanged", "u1/25/statechanged"}, ids(events)); diff != "" {
		t.Fatalf("ids (-want +got):\n%s", diff)
	}
	if events[0].Data.Dropped != 3 || events[1].Data.Dropped != 0 {
		t.Errorf("dropped = %d, %d; want 3 (21, 22, 23), then 0", events[0].Data.Dropped, events[1].Data.Dropped)
	}
	if got := SlackText(events[0]); got != "shop/killswitch: now 503 (probe) (3 earlier changes left the state's history before they were sent)" {
		t.Errorf("SlackText = %q", got)
	}
}

// TestDeliveredAdvances: each type advances its own mark, and each
// override its switch's record.
func TestDeliveredAdvances(t *testing.T) {
	s := killswitch(entry(2, "503", 10, &v1beta1.FlipSummary{Followers: 1, CompletedAfter: "1s"}), entry(1, "200", 0, nil))
	overrides := []Override{
		{Kind: "DynamicIngress", Namespace: "shop", Name: "b", UID: "sb", Mode: "Active", By: "alice", At: t0.Add(5 * time.Second), Shown: true},
		{Kind: "DynamicIngress", Namespace: "shop", Name: "a", UID: "sa", Mode: "", By: "bob", At: t0.Add(5 * time.Second), Shown: true},
	}
	delivered := []v1beta1.DeliveredState{{Sequence: 1, Completed: 1, Stalled: 1}}
	var sent []v1beta1.DeliveredOverride
	events, _ := Pending([]State{s}, delivered, overrides, sent, t0.Add(time.Hour), time.Minute)
	want := []string{"sa/overridden/1795946405000000", "sb/overridden/1795946405000000", "u1/2/statechanged", "u1/2/flipcompleted"}
	if diff := cmp.Diff(want, ids(events)); diff != "" {
		t.Fatalf("ids (-want +got):\n%s", diff)
	}
	for _, e := range events {
		Delivered(e, delivered, &sent)
	}
	if diff := cmp.Diff(v1beta1.DeliveredState{Sequence: 2, Completed: 2, Stalled: 1}, delivered[0]); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
	wantSent := []v1beta1.DeliveredOverride{
		{Switch: "DynamicIngress/a", At: metav1.NewMicroTime(t0.Add(5 * time.Second))},
		{Switch: "DynamicIngress/b", At: metav1.NewMicroTime(t0.Add(5 * time.Second))},
	}
	if diff := cmp.Diff(wantSent, sent); diff != "" {
		t.Errorf("overrides delivered (-want +got):\n%s", diff)
	}
	again, _ := Pending([]State{s}, delivered, overrides, sent, t0.Add(time.Hour), time.Minute)
	if len(again) != 0 {
		t.Errorf("Pending after delivering all = %v, want nothing", ids(again))
	}
}

// TestSequenceOrderUnderReorderedTimes: a state's changes stamped by two
// replicas whose clocks differ (change 3 stamped before change 2) are sent
// in the order of their sequence, and what was delivered never goes back:
// change 3 is not marked delivered before change 2 is sent, so a failure
// of change 2 loses nothing.
func TestSequenceOrderUnderReorderedTimes(t *testing.T) {
	done := func(after string) *v1beta1.FlipSummary {
		return &v1beta1.FlipSummary{Followers: 1, CompletedAfter: after}
	}
	s := killswitch(entry(3, "200", 4, done("1s")), entry(2, "503", 10, done("1s")), entry(1, "200", 0, nil))
	other := State{Ref: v1beta1.StateReference{Kind: v1beta1.StateKindNamespaced, Name: "window"}, Namespace: "shop", UID: "u2",
		History: []v1beta1.HistoryEntry{entry(8, "503", 7, nil), entry(7, "200", 0, nil)}}
	delivered := []v1beta1.DeliveredState{{Sequence: 1, Completed: 1, Stalled: 1}, {Sequence: 7, Completed: 7, Stalled: 7}}
	events, _ := Pending([]State{s, other}, delivered, nil, nil, t0.Add(time.Hour), time.Minute)
	want := []string{"u2/8/statechanged", "u1/2/statechanged", "u1/3/statechanged", "u1/2/flipcompleted", "u1/3/flipcompleted"}
	if diff := cmp.Diff(want, ids(events)); diff != "" {
		t.Fatalf("ids (-want +got):\n%s", diff)
	}
	// The times sent are the ones stamped.
	if !events[2].Time.Equal(t0.Add(4 * time.Second)) {
		t.Errorf("change 3 is sent with time %s, want the one stamped, %s", events[2].Time, t0.Add(4*time.Second))
	}
	// Change 2 delivered, change 3 failed: the next turn sends change 3.
	Delivered(events[1], delivered, nil)
	next, _ := Pending([]State{s}, delivered[:1], nil, nil, t0.Add(time.Hour), time.Minute)
	if got := ids(next); len(got) == 0 || got[0] != "u1/3/statechanged" {
		t.Errorf("after change 2 was delivered, pending = %v, want change 3 first", got)
	}
	// A mark never goes back, even when asked to.
	Delivered(Event{Type: v1beta1.NotificationStateChanged, StateIndex: 0, Sequence: 1}, delivered, nil)
	if delivered[0].Sequence != 2 {
		t.Errorf("delivered sequence went back to %d", delivered[0].Sequence)
	}
}

// TestOverridesPerSwitch: an override admitted earlier but stored later
// than one already sent is still sent; a switch's record is its own.
func TestOverridesPerSwitch(t *testing.T) {
	b := Override{Kind: "DynamicIngress", Namespace: "shop", Name: "b", UID: "sb", Mode: "Active", By: "alice", At: t0.Add(10 * time.Second), Shown: true}
	a := Override{Kind: "DynamicIngress", Namespace: "shop", Name: "a", UID: "sa", Mode: "Passive", By: "bob", At: t0.Add(5 * time.Second), Shown: true}
	var sent []v1beta1.DeliveredOverride
	events, _ := Pending(nil, nil, []Override{b}, sent, t0.Add(time.Hour), time.Minute)
	for _, e := range events {
		Delivered(e, nil, &sent)
	}
	// a's audit (5 s) reaches the cache after b's (10 s) was sent.
	events, _ = Pending(nil, nil, []Override{a, b}, SentOverrides(sent, []Override{a, b}, false), t0.Add(time.Hour), time.Minute)
	if diff := cmp.Diff([]string{"sa/overridden/1795946405000000"}, ids(events)); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	// b changed again, to an earlier time than its last (another
	// replica's clock): a change all the same.
	b2 := b
	b2.At, b2.Mode = t0.Add(8*time.Second), ""
	events, _ = Pending(nil, nil, []Override{b2}, sent, t0.Add(time.Hour), time.Minute)
	if diff := cmp.Diff([]string{"sb/overridden/1795946408000000"}, ids(events)); diff != "" {
		t.Errorf("ids after b changed (-want +got):\n%s", diff)
	}
}

func TestSentOverrides(t *testing.T) {
	at := func(s int) metav1.MicroTime { return metav1.NewMicroTime(t0.Add(time.Duration(s) * time.Second)) }
	a := Override{Kind: "DynamicIngress", Name: "a", At: t0.Add(5 * time.Second)}
	b := Override{Kind: "DynamicHTTPRoute", Name: "b", At: t0.Add(7 * time.Second)}
	sent := []v1beta1.DeliveredOverride{{Switch: "DynamicIngress/a", At: at(1)}, {Switch: "DynamicIngress/gone", At: at(2)}}
	tests := []struct {
		name string
		seed bool
		want []v1beta1.DeliveredOverride
	}{
		{"kept for the switches read, forgotten for the others", false, []v1beta1.DeliveredOverride{{Switch: "DynamicIngress/a", At: at(1)}}},
		{"seeded with every audit read", true, []v1beta1.DeliveredOverride{{Switch: "DynamicHTTPRoute/b", At: at(7)}, {Switch: "DynamicIngress/a", At: at(5)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, SentOverrides(sent, []Override{a, b}, tt.seed)); diff != "" {
				t.Errorf("SentOverrides (-want +got):\n%s", diff)
			}
		})
	}
}

// TestProbeFailed: a transition of Ready to False is sent once, whether
// its time is after the last one sent or before it (another replica's
// clock); about a cluster state it gives the reason, never the message.
func TestProbeFailed(t *testing.T) {
	ready := func(s int, msg string) *metav1.Condition {
		return &metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "ProbeFailed", Message: msg,
			LastTransitionTime: metav1.NewTime(t0.Add(time.Duration(s) * time.Second))}
	}
	sentAt := metav1.NewTime(t0.Add(30 * time.Second))
	tests := []struct {
		name        string
		ref         v1beta1.StateReference
		ready       *metav1.Condition
		wantIDs     []string
		wantMessage string
	}{
		{"the one sent", v1beta1.StateReference{Name: "killswitch"}, ready(30, "x"), nil, ""},
		{"a later one", v1beta1.StateReference{Name: "killswitch"}, ready(40, "connection refused"), []string{"u1/probefailed/1795946440"}, "connection refused"},
		{"an earlier one", v1beta1.StateReference{Name: "killswitch"}, ready(20, "connection refused"), []string{"u1/probefailed/1795946420"}, "connection refused"},
		{"a cluster state's", v1beta1.StateReference{Kind: v1beta1.StateKindCluster, Name: "global"},
			ready(40, `secret "platform-token" not found`), []string{"u1/probefailed/1795946440"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := State{Ref: tt.ref, UID: "u1", Ready: tt.ready}
			events, _ := Pending([]State{s}, []v1beta1.DeliveredState{{ProbeFailedAt: &sentAt}}, nil, nil, t0.Add(time.Hour), time.Minute)
			if diff := cmp.Diff(tt.wantIDs, ids(events)); diff != "" {
				t.Fatalf("ids (-want +got):\n%s", diff)
			}
			if len(events) > 0 && (events[0].Data.Message != tt.wantMessage || events[0].Data.Reason != "ProbeFailed") {
				t.Errorf("reason %q, message %q; want ProbeFailed, %q", events[0].Data.Reason, events[0].Data.Message, tt.wantMessage)
			}
		})
	}
}

// TestOverrideOfDeletingSwitch: a switch being deleted carries no override
// audit, whatever its annotations say (the webhooks no longer see its
// edits).
func TestOverrideOfDeletingSwitch(t *testing.T) {
	sw := &metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: map[string]string{
		v1beta1.OverrideByAnnotation: "forged", v1beta1.OverrideAtAnnotation: "2099-01-01T00:00:00Z"}}
	if _, ok := OverrideOf("DynamicIngress", sw, v1beta1.SwitchSpec{}, nil); !ok {
		t.Fatal("OverrideOf a switch not being deleted: no audit")
	}
	sw.DeletionTimestamp = &metav1.Time{Time: t0}
	if o, ok := OverrideOf("DynamicIngress", sw, v1beta1.SwitchSpec{}, nil); ok {
		t.Errorf("OverrideOf a switch being deleted = %+v, want none", o)
	}
}

// TestCloudEvent: the envelope has the attributes CloudEvents 1.0
// requires (id, source, specversion, type) and the optional ones the
// docs promise, with the data as JSON.
func TestCloudEvent(t *testing.T) {
	s := State{Ref: v1beta1.StateReference{Kind: v1beta1.StateKindCluster, Name: "global-killswitch"}, UID: "u9",
		History: []v1beta1.HistoryEntry{entry(7, "503", 10, nil), entry(6, "200", 0, nil)}}
	events, _ := Pending([]State{s}, []v1beta1.DeliveredState{{Sequence: 6, Completed: 6, Stalled: 6}}, nil, nil, t0.Add(time.Hour), time.Minute)
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
		"id":              "u9/7/statechanged",
		"source":          "/clusterdynamicingressstates/global-killswitch",
		"type":            "io.dynamicingress.statechanged",
		"subject":         "global-killswitch",
		"time":            "2026-11-29T10:00:10Z",
		"datacontenttype": "application/json",
		"data": map[string]any{
			"state":    map[string]any{"kind": "ClusterDynamicIngressState", "name": "global-killswitch"},
			"sequence": float64(7),
			"cause":    "Probe",
			"from":     map[string]any{"statusCode": "200"},
			"to":       map[string]any{"statusCode": "503"},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CloudEvent (-want +got):\n%s", diff)
	}
	if _, ct, _ := Body(events[0], v1beta1.SinkFormatCloudEvents); ct != "application/cloudevents+json" {
		t.Errorf("content type %q", ct)
	}
}

func TestSlackText(t *testing.T) {
	cluster := StateName{Kind: "ClusterDynamicIngressState", Name: "global-killswitch"}
	tests := []struct {
		name string
		e    Event
		want string
	}{
		{
			name: "a change",
			e: Event{Type: v1beta1.NotificationStateChanged, Data: Data{State: cluster, Sequence: 7, Cause: "Probe",
				From: &Code{StatusCode: "200"}, To: &Code{StatusCode: "503"}}},
			want: "global-killswitch: 200 → 503 (probe)",
		},
		{
			name: "a first response",
			e: Event{Type: v1beta1.NotificationStateChanged, Data: Data{State: StateName{Namespace: "shop", Name: "flag"}, Sequence: 1, Cause: "Fixed",
				To: &Code{StatusCode: "200"}}},
			want: "shop/flag: first response 200 (fixed)",
		},
		{
			name: "a lost response",
			e: Event{Type: v1beta1.NotificationStateChanged, Data: Data{State: StateName{Namespace: "shop", Name: "flag"}, Cause: "NoResponse",
				From: &Code{StatusCode: "200"}, To: &Code{}}},
			want: "shop/flag: 200 → no response (no response)",
		},
		{
			name: "a flip completed in many namespaces",
			e: Event{Type: v1beta1.NotificationFlipCompleted, Data: Data{State: cluster, Sequence: 7, To: &Code{StatusCode: "503"},
				Followers: 2000, Namespaces: 20, CompletedAfter: "6.3s"}},
			want: "global-killswitch: change 7 (503) shown by 2000 switches in 20 namespaces after 6.3s",
		},
		{
			name: "a stalled flip",
			e: Event{Type: v1beta1.NotificationFlipStalled, Data: Data{State: cluster, Sequence: 7, To: &Code{StatusCode: "503"},
				Remaining: 2, StalledAfter: "1m0s", Switches: []string{"DynamicIngress/a", "DynamicIngress/b"}}},
			want: "global-killswitch: change 7 (503) not shown by 2 switches after 1m0s, among them DynamicIngress/a, DynamicIngress/b",
		},
		{
			name: "a failing probe",
			e:    Event{Type: v1beta1.NotificationProbeFailed, Data: Data{State: cluster, Reason: "ProbeFailed", Message: "connection refused"}},
			want: "global-killswitch: not ready (ProbeFailed): connection refused",
		},
		{
			name: "an override removed",
			e: Event{Type: v1beta1.NotificationOverridden, Data: Data{State: cluster,
				Switch: &SwitchName{Kind: "DynamicIngress", Namespace: "shop", Name: "web"}, By: "alice", At: "2026-11-29T10:00:00Z"}},
			want: "DynamicIngress shop/web: override removed by alice at 2026-11-29T10:00:00Z",
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

// TestOverriddenApproval: a pin's Overridden waits until the switch's
// status shows it, then says it awaits approval; its approval is a change
// of its own, an Overridden in effect with the approver and another id,
// sent once.
func TestOverriddenApproval(t *testing.T) {
	at := t0.Add(5 * time.Second)
	approvedAt := t0.Add(65 * time.Second)
	pin := Override{Kind: "DynamicIngress", Namespace: "shop", Name: "web", UID: "sw", Mode: "Passive", By: "alice", At: at, Reason: "INC-1"}
	events, _ := Pending(nil, nil, []Override{pin}, nil, t0.Add(time.Hour), time.Minute)
	if len(events) != 0 {
		t.Fatalf("before the status shows the pin: %v, want nothing", ids(events))
	}
	pin.Shown, pin.Phase = true, string(v1beta1.OverridePhasePendingApproval)
	var sent []v1beta1.DeliveredOverride
	events, _ = Pending(nil, nil, []Override{pin}, sent, t0.Add(time.Hour), time.Minute)
	if diff := cmp.Diff([]string{"sw/overridden/1795946405000000"}, ids(events)); diff != "" {
		t.Fatalf("pending (-want +got):\n%s", diff)
	}
	if got, want := SlackText(events[0]), "DynamicIngress shop/web: overridden to Passive by alice at 2026-11-29T10:00:05.000000Z, awaiting approval: INC-1"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	Delivered(events[0], nil, &sent)

	pin.Phase, pin.ApprovedBy, pin.ApprovedAt = string(v1beta1.OverridePhaseInEffect), "bob", &approvedAt
	events, _ = Pending(nil, nil, []Override{pin}, sent, t0.Add(time.Hour), time.Minute)
	if diff := cmp.Diff([]string{"sw/overridden/1795946465000000"}, ids(events)); diff != "" {
		t.Fatalf("approved (-want +got):\n%s", diff)
	}
	if d := events[0].Data; d.Phase != "InEffect" || d.ApprovedBy != "bob" || d.At != "2026-11-29T10:00:05.000000Z" {
		t.Errorf("approved data: phase %q, approvedBy %q, at %q", d.Phase, d.ApprovedBy, d.At)
	}
	Delivered(events[0], nil, &sent)
	if events, _ = Pending(nil, nil, []Override{pin}, sent, t0.Add(time.Hour), time.Minute); len(events) != 0 {
		t.Errorf("after the approval was delivered: %v, want nothing", ids(events))
	}
}

package notify

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		code             string
		delivered, retry bool
	}{
		{"200", true, false}, {"204", true, false},
		{"429", false, true}, {"500", false, true}, {"503", false, true},
		{"400", false, false}, {"404", false, false}, {"301", false, false}, {"100", false, false},
	}
	for _, tt := range tests {
		if delivered, retry := Classify(tt.code); delivered != tt.delivered || retry != tt.retry {
			t.Errorf("Classify(%s) = %v, %v; want %v, %v", tt.code, delivered, retry, tt.delivered, tt.retry)
		}
	}
}

func TestBackoff(t *testing.T) {
	want := map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 9: 256 * time.Second, 10: 5 * time.Minute, 40: 5 * time.Minute}
	for failures, d := range want {
		if got := Backoff(failures); got != d {
			t.Errorf("Backoff(%d) = %s, want %s", failures, got, d)
		}
	}
}

// TestMerge: the record follows spec.states; a state read takes what was
// just delivered, a state not found keeps what it had, a state not
// admitted loses it.
func TestMerge(t *testing.T) {
	a := v1beta1.StateReference{Kind: v1beta1.StateKindNamespaced, Name: "a"}
	gone := v1beta1.StateReference{Name: "gone"}
	denied := v1beta1.StateReference{Kind: v1beta1.StateKindCluster, Name: "denied"}
	previous := []v1beta1.DeliveredState{
		{Kind: v1beta1.StateKindNamespaced, Name: "gone", Sequence: 4},
		{Kind: v1beta1.StateKindCluster, Name: "denied", Sequence: 9},
		{Kind: v1beta1.StateKindNamespaced, Name: "a", Sequence: 1},
	}
	got := Merge([]v1beta1.StateReference{gone, a, denied}, []State{{Ref: a}}, []v1beta1.DeliveredState{{Name: "a", Sequence: 2}},
		[]Unread{{Ref: gone, Keep: true}, {Ref: denied}}, previous)
	want := []v1beta1.DeliveredState{
		{Kind: v1beta1.StateKindNamespaced, Name: "gone", Sequence: 4},
		{Kind: v1beta1.StateKindNamespaced, Name: "a", Sequence: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Merge (-want +got):\n%s", diff)
	}
}

func TestOverrideOf(t *testing.T) {
	sw := &metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u", Annotations: map[string]string{
		v1beta1.OverrideByAnnotation: "alice", v1beta1.OverrideAtAnnotation: "2026-11-29T10:00:00.123456Z"}}
	until := metav1.NewTime(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	spec := v1beta1.SwitchSpec{State: v1beta1.StateReference{Kind: v1beta1.StateKindNamespaced, Name: "killswitch"},
		Override: v1beta1.ModePassive, OverrideUntil: &until, OverrideReason: "INC-1234"}
	statusAt := metav1.NewTime(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	inEffect := &v1beta1.OverrideStatus{Mode: v1beta1.ModePassive, At: &statusAt, Until: &until, Phase: v1beta1.OverridePhaseInEffect}
	got, ok := OverrideOf("DynamicIngress", sw, spec, inEffect)
	want := Override{Kind: "DynamicIngress", Namespace: "shop", Name: "web", UID: "u", Mode: "Passive", By: "alice",
		At: time.Date(2026, 11, 29, 10, 0, 0, 123456000, time.UTC), Until: &until.Time, Reason: "INC-1234", Follows: "killswitch",
		Shown: true, Phase: "InEffect"}
	if !ok || !cmp.Equal(want, got) {
		t.Errorf("OverrideOf = %+v, %v; want %+v", got, ok, want)
	}
	// The status, once it says the pin expired.
	expired := inEffect.DeepCopy()
	expired.Phase = v1beta1.OverridePhaseExpired
	if got, _ := OverrideOf("DynamicIngress", sw, spec, expired); !cmp.Equal(expired, got.Expired) {
		t.Errorf("OverrideOf an expired pin: Expired = %+v, want %+v", got.Expired, expired)
	}
	// An audit to the second (before the microsecond format) reads too.
	sw.Annotations[v1beta1.OverrideAtAnnotation] = "2026-11-29T10:00:00Z"
	if _, ok := OverrideOf("DynamicIngress", sw, v1beta1.SwitchSpec{}, nil); !ok {
		t.Error("OverrideOf an audit to the second: none")
	}
	if _, ok := OverrideOf("DynamicIngress", &metav1.ObjectMeta{Name: "never"}, v1beta1.SwitchSpec{}, nil); ok {
		t.Error("OverrideOf a switch without an audit: one")
	}
}

// TestFollows: what an OverrideExpired says the switch follows again.
func TestFollows(t *testing.T) {
	entry := func(name, state string) v1beta1.StateEntry { return v1beta1.StateEntry{Name: name, State: state} }
	cluster := v1beta1.StateEntry{Name: "global", StateRef: &v1beta1.StateReference{Kind: v1beta1.StateKindCluster, Name: "global-killswitch"}}
	tests := []struct {
		name string
		spec v1beta1.SwitchSpec
		want string
	}{
		{"one state", v1beta1.SwitchSpec{State: v1beta1.StateReference{Kind: v1beta1.StateKindNamespaced, Name: "killswitch"}}, "killswitch"},
		{"anyOf", v1beta1.SwitchSpec{AnyOf: []v1beta1.StateEntry{entry("window", "maintenance"), cluster}}, "anyOf(maintenance, global-killswitch)"},
		{"allOf", v1beta1.SwitchSpec{AllOf: []v1beta1.StateEntry{entry("a", "flag-a"), entry("b", "flag-b")}}, "allOf(flag-a, flag-b)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Follows(tt.spec); got != tt.want {
				t.Errorf("Follows = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestColumns(t *testing.T) {
	if got := StateNames([]v1beta1.StateReference{{Name: "killswitch"}, {Kind: v1beta1.StateKindCluster, Name: "global"}}); got != "killswitch,global" {
		t.Errorf("StateNames = %q", got)
	}
	if got := SinkHost("https://user:pw@hooks.example.com:8443/services/T0?token=x"); got != "hooks.example.com:8443" {
		t.Errorf("SinkHost = %q", got)
	}
}

// TestReadyCondition: a turn's failure first, then a state it cannot send
// about, then Delivered or Idle; a refusal stays said until the next
// delivery.
func TestReadyCondition(t *testing.T) {
	delivered := &v1beta1.NotificationDelivery{Type: v1beta1.NotificationStateChanged, ID: "u/2/statechanged", Result: ResultDelivered}
	refused := &v1beta1.NotificationDelivery{Type: v1beta1.NotificationStateChanged, ID: "u/2/statechanged", Result: "HTTP 400"}
	failing := &metav1.Condition{Status: metav1.ConditionFalse, Reason: v1beta1.ReasonDeliveryFailing, Message: "refused"}
	notAdmitted := []Unread{{Reason: v1beta1.ReasonStateNotAdmitted, Message: `ClusterDynamicIngressState "g" does not admit namespace "shop"`}}
	tests := []struct {
		name    string
		failure Failure
		unread  []Unread
		last    *v1beta1.NotificationDelivery
		prev    *metav1.Condition
		want    string
	}{
		{"nothing sent yet", Failure{}, nil, nil, nil, "True Idle Nothing to send yet"},
		{"delivered", Failure{}, nil, delivered, failing, "True Delivered Delivered StateChanged u/2/statechanged"},
		{"a turn that failed", Failure{Reason: v1beta1.ReasonSecretNotFound, Message: "no Secret"}, notAdmitted, delivered, nil, "False SecretNotFound no Secret"},
		{"a state not admitted", Failure{}, notAdmitted, delivered, nil,
			`False StateNotAdmitted ClusterDynamicIngressState "g" does not admit namespace "shop": nothing is sent about it`},
		{"a refusal stays said", Failure{}, nil, refused, failing, "False DeliveryFailing refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ReadyCondition(3, tt.failure, tt.unread, tt.last, tt.prev)
			if got := string(c.Status) + " " + c.Reason + " " + c.Message; got != tt.want || c.ObservedGeneration != 3 || c.Type != v1beta1.ConditionReady {
				t.Errorf("ReadyCondition = %q (%+v), want %q", got, c, tt.want)
			}
		})
	}
}

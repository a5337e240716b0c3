package decision

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/match"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// entryOf is an entry named name whose state answers as kind says:
// "match", "miss", "noresponse", "notfound", "notadmitted", or "pending"
// (an expression whose verdict is not known yet).
func entryOf(name, kind string) Entry {
	e := Entry{Name: name, Expected: v1beta1.ExpectedResponse{StatusCode: "503"}}
	state := func(code string) *v1beta1.DynamicIngressState {
		return &v1beta1.DynamicIngressState{ObjectMeta: metav1.ObjectMeta{Name: name + "-state"}, Status: v1beta1.DynamicIngressStateStatus{StatusCode: code}}
	}
	switch kind {
	case "match":
		e.State = state("503")
	case "miss":
		e.State = state("200")
	case "noresponse":
		e.State = state("")
	case "notfound":
		e.Why = ptr.To(NotFound(v1beta1.StateReference{Name: name + "-state"}))
	case "notadmitted":
		e.Why = &Unfollowed{Reason: v1beta1.ReasonStateNotAdmitted, Message: "not admitted"}
	case "pending":
		e.State = state("503")
		e.Expected.Expression = "response.code == 503"
		e.Known = func(string, match.Response) (string, bool) { return "", false }
	}
	return e
}

// kleene is the three-valued answer of a list, independent of ActiveOf:
// T, F or U (decided by failurePolicy), P while waiting.
func kleene(allOf bool, kinds ...string) string {
	out := "F"
	if allOf {
		out = "T"
	}
	waiting := false
	for _, k := range kinds {
		v := map[string]string{"match": "T", "miss": "F", "pending": "P"}[k]
		if v == "" {
			v = "U"
		}
		switch {
		case v == "P":
			waiting = true
		case !allOf && v == "T", allOf && v == "F":
			return v
		case v == "U":
			out = "U"
		}
	}
	if waiting {
		return "P"
	}
	return out
}

func TestActiveOfEveryMix(t *testing.T) {
	kinds := []string{"match", "miss", "noresponse", "notfound", "notadmitted", "pending"}
	policies := []v1beta1.FailurePolicy{"", v1beta1.FailurePolicyPassive, v1beta1.FailurePolicyActive, v1beta1.FailurePolicyRetain}
	for _, allOf := range []bool{false, true} {
		for _, a := range kinds {
			for _, b := range kinds {
				for _, policy := range policies {
					for _, live := range []*bool{nil, ptr.To(true), ptr.To(false)} {
						w := builders.DynamicIngress("ns", "site").FailurePolicy(policy)
						if allOf {
							w.AllOf(builders.Entry("a", "a-state", "503"), builders.Entry("b", "b-state", "503"))
						} else {
							w.AnyOf(builders.Entry("a", "a-state", "503"), builders.Entry("b", "b-state", "503"))
						}
						name := fmt.Sprintf("allOf=%v/%s,%s/policy=%q/live=%v", allOf, a, b, policy, ptr.Deref(live, false))
						cond, states, pending := ActiveOf(w.Obj(), []Entry{entryOf("a", a), entryOf("b", b)}, live)
						want := kleene(allOf, a, b)
						if want == "P" {
							if !pending {
								t.Errorf("%s: decided %s (%s), want pending", name, cond.Status, cond.Message)
							}
							continue
						}
						if pending {
							t.Errorf("%s: pending, want %s", name, want)
							continue
						}
						wantStatus := metav1.ConditionStatus(map[string]string{"T": "True", "F": "False"}[want])
						if want == "U" {
							wantStatus = "False"
							if policy == v1beta1.FailurePolicyActive || policy == v1beta1.FailurePolicyRetain && ptr.Deref(live, false) {
								wantStatus = "True"
							}
						}
						if cond.Status != wantStatus {
							t.Errorf("%s: Active %s (%s: %s), want %s", name, cond.Status, cond.Reason, cond.Message, wantStatus)
						}
						if len(states) != 2 || states[0].Name != "a" || states[1].Name != "b" {
							t.Errorf("%s: status.states %+v, want a and b in order", name, states)
						}
					}
				}
			}
		}
	}
}

func TestActiveOfMessages(t *testing.T) {
	anyOf := builders.DynamicIngress("ns", "site").AnyOf(builders.Entry("platform", "p", "503"), builders.Entry("window", "w", "503")).Obj()
	allOf := builders.DynamicIngress("ns", "site").AllOf(builders.Entry("platform", "p", "503"), builders.Entry("window", "w", "503")).Obj()
	tests := []struct {
		name       string
		sw         *v1beta1.DynamicIngress
		a, b       string
		want       metav1.Condition
		wantStates []v1beta1.EntryStatus
	}{
		{"anyOf, one matched, the other has no answer", anyOf, "match", "noresponse",
			metav1.Condition{Status: "True", Reason: "Matched", Message: `platform matched (platform: state "platform-state" responded 503 as expected)`},
			[]v1beta1.EntryStatus{{Name: "platform", Matched: "True", Reason: "Matched"}, {Name: "window", Matched: "Unknown", Reason: "NoResponse"}}},
		{"anyOf, none matched", anyOf, "miss", "miss",
			metav1.Condition{Status: "False", Reason: "NotMatched", Message: `none matched (platform: state "platform-state" responded 200: statusCode is "200", expected "503"; window: state "window-state" responded 200: statusCode is "200", expected "503")`},
			[]v1beta1.EntryStatus{{Name: "platform", Matched: "False", Reason: "NotMatched"}, {Name: "window", Matched: "False", Reason: "NotMatched"}}},
		{"anyOf, unknown decides by policy", anyOf, "miss", "noresponse",
			metav1.Condition{Status: "False", Reason: "NoResponse", Message: `window: NoResponse (window: state "window-state" has no response); spec.failurePolicy Passive selects passive mode`},
			[]v1beta1.EntryStatus{{Name: "platform", Matched: "False", Reason: "NotMatched"}, {Name: "window", Matched: "Unknown", Reason: "NoResponse"}}},
		{"anyOf, a not admitted entry is Unknown", anyOf, "notadmitted", "miss",
			metav1.Condition{Status: "False", Reason: "StateNotAdmitted", Message: `platform: StateNotAdmitted (platform: not admitted); spec.failurePolicy Passive selects passive mode`},
			[]v1beta1.EntryStatus{{Name: "platform", Matched: "Unknown", Reason: "StateNotAdmitted"}, {Name: "window", Matched: "False", Reason: "NotMatched"}}},
		{"allOf, both matched", allOf, "match", "match",
			metav1.Condition{Status: "True", Reason: "Matched", Message: `platform and window matched (platform: state "platform-state" responded 503 as expected; window: state "window-state" responded 503 as expected)`},
			[]v1beta1.EntryStatus{{Name: "platform", Matched: "True", Reason: "Matched"}, {Name: "window", Matched: "True", Reason: "Matched"}}},
		{"allOf, one did not match, the other not found", allOf, "notfound", "miss",
			metav1.Condition{Status: "False", Reason: "NotMatched", Message: `window did not match (window: state "window-state" responded 200: statusCode is "200", expected "503")`},
			[]v1beta1.EntryStatus{{Name: "platform", Matched: "Unknown", Reason: "StateNotFound"}, {Name: "window", Matched: "False", Reason: "NotMatched"}}},
		{"allOf, one matched, the other unknown", allOf, "match", "notfound",
			metav1.Condition{Status: "False", Reason: "StateNotFound", Message: `window: StateNotFound (window: DynamicIngressState "window-state" not found); spec.failurePolicy Passive selects passive mode`},
			[]v1beta1.EntryStatus{{Name: "platform", Matched: "True", Reason: "Matched"}, {Name: "window", Matched: "Unknown", Reason: "StateNotFound"}}},
		{"anyOf decided while the other's verdict is pending", anyOf, "match", "pending",
			metav1.Condition{Status: "True", Reason: "Matched", Message: `platform matched (platform: state "platform-state" responded 503 as expected)`},
			[]v1beta1.EntryStatus{{Name: "platform", Matched: "True", Reason: "Matched"}, {Name: "window", Matched: "Unknown", Reason: "VerdictPending"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			entries := []Entry{entryOf("platform", tc.a), entryOf("window", tc.b)}
			got, states, pending := ActiveOf(tc.sw, entries, nil)
			if pending {
				t.Fatal("pending")
			}
			if diff := cmp.Diff(tc.want, metav1.Condition{Status: got.Status, Reason: got.Reason, Message: got.Message}); diff != "" {
				t.Errorf("Active (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantStates, states); diff != "" {
				t.Errorf("status.states (-want +got):\n%s", diff)
			}
		})
	}
}

func TestActiveOfOverridePinsOverAllEntries(t *testing.T) {
	sw := builders.DynamicIngress("ns", "site").AnyOf(builders.Entry("platform", "p", "503"), builders.Entry("window", "w", "503")).
		Override(v1beta1.ModePassive).Obj()
	got, states, _ := ActiveOf(sw, []Entry{entryOf("platform", "match"), entryOf("window", "noresponse")}, nil)
	if got.Status != "False" || got.Reason != "Overridden" {
		t.Errorf("Active = %s %s (%s), want False Overridden", got.Status, got.Reason, got.Message)
	}
	if want := `spec.override pins passive mode; the state would select active mode (platform matched (platform: state "platform-state" responded 503 as expected))`; got.Message != want {
		t.Errorf("message = %q, want %q", got.Message, want)
	}
	if len(states) != 2 || states[0].Matched != "True" {
		t.Errorf("status.states = %+v, want each entry's verdict still", states)
	}
}

func TestRetainsModeOf(t *testing.T) {
	retain := builders.DynamicIngress("ns", "site").AnyOf(builders.Entry("a", "a", "503")).FailurePolicy(v1beta1.FailurePolicyRetain).Obj()
	passive := builders.DynamicIngress("ns", "site").AnyOf(builders.Entry("a", "a", "503")).Obj()
	for _, tc := range []struct {
		name string
		sw   *v1beta1.DynamicIngress
		kind string
		want bool
	}{
		{"Retain, no answer", retain, "noresponse", true},
		{"Retain, not found", retain, "notfound", true},
		{"Retain, answered", retain, "match", false},
		{"Passive, no answer", passive, "noresponse", false},
	} {
		if got := RetainsModeOf(tc.sw, []Entry{entryOf("a", tc.kind)}); got != tc.want {
			t.Errorf("%s: RetainsModeOf = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestOverrideNeverWaitsForAVerdict: a pinned switch is decided at once,
// whatever verdicts are still being evaluated, for a single state and for
// a list; the message says what the state would select is not known yet,
// and a list's pending entries say so.
func TestOverrideNeverWaitsForAVerdict(t *testing.T) {
	const pinned = "spec.override pins active mode; which mode the state would select is not known yet (an expected expression's verdict is being evaluated)"
	single := builders.DynamicIngress("ns", "site").State("flag").ExpectCode("503").Override(v1beta1.ModeActive).Obj()
	single.Spec.Expected.Expression = "response.code == 503"
	state := &v1beta1.DynamicIngressState{ObjectMeta: metav1.ObjectMeta{Name: "flag"}, Status: v1beta1.DynamicIngressStateStatus{StatusCode: "503"}}
	unknown := func(string, match.Response) (string, bool) { return "", false }
	got, pending := ActiveKnown(single, state, nil, unknown)
	if pending || got.Status != metav1.ConditionTrue || got.Reason != v1beta1.ReasonOverridden || got.Message != pinned {
		t.Errorf("ActiveKnown of a pinned switch = pending %v, %s/%s %q; want not pending, True/Overridden %q", pending, got.Status, got.Reason, got.Message, pinned)
	}

	list := builders.DynamicIngress("ns", "site").AnyOf(builders.Entry("platform", "p", "503"), builders.Entry("window", "w", "503")).
		Override(v1beta1.ModeActive).Obj()
	got, states, pending := ActiveOf(list, []Entry{entryOf("platform", "pending"), entryOf("window", "miss")}, nil)
	if pending || got.Status != metav1.ConditionTrue || got.Reason != v1beta1.ReasonOverridden || got.Message != pinned {
		t.Errorf("ActiveOf of a pinned list = pending %v, %s/%s %q; want not pending, True/Overridden %q", pending, got.Status, got.Reason, got.Message, pinned)
	}
	want := []v1beta1.EntryStatus{
		{Name: "platform", Matched: metav1.ConditionUnknown, Reason: ReasonVerdictPending},
		{Name: "window", Matched: metav1.ConditionFalse, Reason: v1beta1.ReasonNotMatched},
	}
	if diff := cmp.Diff(want, states); diff != "" {
		t.Errorf("status.states (-want +got):\n%s", diff)
	}

	// Not pinned, the same switches wait.
	single.Spec.Override, list.Spec.Override = "", ""
	if _, pending := ActiveKnown(single, state, nil, unknown); !pending {
		t.Error("ActiveKnown of a switch not pinned did not wait for the verdict")
	}
	if _, _, pending := ActiveOf(list, []Entry{entryOf("platform", "pending"), entryOf("window", "miss")}, nil); !pending {
		t.Error("ActiveOf of a list not pinned did not wait for the verdict")
	}
}

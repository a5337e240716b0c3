package decision

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/match"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// Entry is one state of a switch's spec.anyOf or spec.allOf as the
// decision reads it (docs/behaviour.md, "Several states per switch").
type Entry struct {
	// Name is the entry's name.
	Name string
	// Expected is what the entry expects of its state.
	Expected v1beta1.ExpectedResponse
	// State is the state's view (Followed), nil when the entry follows
	// none: Why says why (not found, not admitted, not watched).
	State *v1beta1.DynamicIngressState
	Why   *Unfollowed
	// Known gives expected expressions' verdicts without evaluating them
	// (match.EvaluateKnown); nil evaluates them in place.
	Known match.KnownVerdicts
}

// entryVerdict is what one entry decided: Matched True or False, or
// Unknown when its state gives no answer; pending while the verdict of its
// expression is not known.
type entryVerdict struct {
	status  metav1.ConditionStatus
	reason  string
	detail  string
	pending bool
}

// verdictOf decides one entry as a single switch decides its state.
func verdictOf(e Entry) entryVerdict {
	if e.State == nil {
		why := NotFound(v1beta1.StateReference{Name: e.Name})
		if e.Why != nil {
			why = *e.Why
		}
		return entryVerdict{status: metav1.ConditionUnknown, reason: why.Reason, detail: why.Message}
	}
	want := match.Expected{StatusCode: e.Expected.StatusCode, Body: e.Expected.Body,
		BodyMatch: match.BodyMatch(e.Expected.BodyMatch), Expression: e.Expected.Expression}
	got := match.Response{StatusCode: e.State.Status.StatusCode, Body: e.State.Status.Body}
	result := match.EvaluateKnown(want, got, e.Known)
	switch result.Outcome {
	case match.Pending:
		return entryVerdict{pending: true}
	case match.Matched:
		return entryVerdict{status: metav1.ConditionTrue, reason: v1beta1.ReasonMatched,
			detail: fmt.Sprintf("state %q responded %s as expected", e.State.Name, got.StatusCode)}
	case match.NotMatched:
		return entryVerdict{status: metav1.ConditionFalse, reason: v1beta1.ReasonNotMatched,
			detail: fmt.Sprintf("state %q responded %s: %s", e.State.Name, got.StatusCode, result.Detail)}
	}
	return entryVerdict{status: metav1.ConditionUnknown, reason: v1beta1.ReasonNoResponse,
		detail: fmt.Sprintf("state %q has no response", e.State.Name)}
}

// ActiveOf is the Active condition of a switch with spec.anyOf or
// spec.allOf, and what each entry decided (status.states), in the list's
// order. anyOf is active when one entry matches, allOf when all do; an
// entry whose state gives no answer is Unknown, and when the known entries
// do not decide (anyOf: none matched; allOf: none failed to match),
// spec.failurePolicy does, as for a single state (current as in Active).
// spec.override pins the mode over all entries. pending is true, and the
// result meaningless, while a verdict the decision needs is not known.
func ActiveOf(sw target.Switch, entries []Entry, current *bool) (cond metav1.Condition, states []v1beta1.EntryStatus, pending bool) {
	cond, states, pending = combine(sw, entries, current)
	if pending {
		if sw.SwitchSpec().Override == "" {
			return cond, nil, true
		}
		// Pinned: the mode does not wait for the verdicts; the entries
		// still pending say so.
		states = pendingEntries(entries, states)
		cond.Reason = reasonPending
	}
	return overridden(sw, cond), states, false
}

// pendingEntries is states with each entry whose verdict is not known yet
// (no Matched set) shown as pending.
func pendingEntries(entries []Entry, states []v1beta1.EntryStatus) []v1beta1.EntryStatus {
	for i := range states {
		if states[i].Name == "" {
			states[i] = v1beta1.EntryStatus{Name: entries[i].Name, Matched: metav1.ConditionUnknown, Reason: reasonPending}
		}
	}
	return states
}

// combine is ActiveOf, override aside.
func combine(sw target.Switch, entries []Entry, current *bool) (metav1.Condition, []v1beta1.EntryStatus, bool) {
	spec := sw.SwitchSpec()
	// The value that decides on its own: a match for anyOf, a mismatch for
	// allOf.
	decisive := metav1.ConditionTrue
	if spec.Combination() == v1beta1.CombinationAllOf {
		decisive = metav1.ConditionFalse
	}
	verdicts := make([]entryVerdict, len(entries))
	states := make([]v1beta1.EntryStatus, len(entries))
	var decided, unknown []int
	waiting := false
	for i, e := range entries {
		v := verdictOf(e)
		verdicts[i] = v
		switch {
		case v.pending:
			waiting = true
			continue
		case v.status == decisive:
			decided = append(decided, i)
		case v.status == metav1.ConditionUnknown:
			unknown = append(unknown, i)
		}
		states[i] = v1beta1.EntryStatus{Name: e.Name, Matched: v.status, Reason: v.reason}
	}
	cond := metav1.Condition{Type: v1beta1.ConditionActive, ObservedGeneration: sw.GetGeneration(), Status: decisive}
	switch {
	case len(decided) > 0:
		// Decided whatever the entries still pending say.
		for i := range entries {
			if verdicts[i].pending {
				states[i] = v1beta1.EntryStatus{Name: entries[i].Name, Matched: metav1.ConditionUnknown, Reason: reasonPending}
			}
		}
		if decisive == metav1.ConditionTrue {
			cond.Reason = v1beta1.ReasonMatched
			cond.Message = fmt.Sprintf("%s matched (%s)", names(entries, decided), details(entries, verdicts, decided))
		} else {
			cond.Reason = v1beta1.ReasonNotMatched
			cond.Message = fmt.Sprintf("%s did not match (%s)", names(entries, decided), details(entries, verdicts, decided))
		}
		return cond, states, false
	case waiting:
		return cond, states, true
	case len(unknown) == 0:
		// Every entry answered, and none decisively: anyOf none matched,
		// allOf all matched.
		all := make([]int, len(entries))
		for i := range all {
			all[i] = i
		}
		if decisive == metav1.ConditionTrue {
			cond.Status, cond.Reason = metav1.ConditionFalse, v1beta1.ReasonNotMatched
			cond.Message = fmt.Sprintf("none matched (%s)", details(entries, verdicts, all))
		} else {
			cond.Status, cond.Reason = metav1.ConditionTrue, v1beta1.ReasonMatched
			cond.Message = fmt.Sprintf("%s matched (%s)", names(entries, all), details(entries, verdicts, all))
		}
		return cond, states, false
	}
	// Unknown entries, and the known ones do not decide: failurePolicy.
	cond.Status = noAnswerStatus(sw, current)
	cond.Reason = verdicts[unknown[0]].reason
	parts := make([]string, len(unknown))
	for k, i := range unknown {
		parts[k] = entries[i].Name + ": " + verdicts[i].reason
	}
	cond.Message = fmt.Sprintf("%s (%s); %s", strings.Join(parts, ", "), details(entries, verdicts, unknown), policyPhrase(spec, cond.Status))
	return cond, states, false
}

// names joins the names of entries at idx: "a", "a and b", "a, b and c".
func names(entries []Entry, idx []int) string {
	out := make([]string, len(idx))
	for k, i := range idx {
		out[k] = entries[i].Name
	}
	if len(out) == 1 {
		return out[0]
	}
	return strings.Join(out[:len(out)-1], ", ") + " and " + out[len(out)-1]
}

// details joins each entry's detail, named.
func details(entries []Entry, verdicts []entryVerdict, idx []int) string {
	out := make([]string, len(idx))
	for k, i := range idx {
		out[k] = entries[i].Name + ": " + verdicts[i].detail
	}
	return strings.Join(out, "; ")
}

// RetainsModeOf is RetainsMode for a switch with a list: failurePolicy
// Retain, no override, and an entry whose state gives no answer (the
// decision may fall to the policy; reading the target then costs little).
func RetainsModeOf(sw target.Switch, entries []Entry) bool {
	spec := sw.SwitchSpec()
	if spec.Override != "" || spec.FailurePolicy != v1beta1.FailurePolicyRetain {
		return false
	}
	for _, e := range entries {
		if e.State == nil || e.State.Status.StatusCode == "" {
			return true
		}
	}
	return false
}

// DecideOf is Decide for a switch with a list: the Active condition the
// operator decides for a switch whose target is live, and each entry's
// verdict, with the entries' states read now (Followed).
func DecideOf(kind target.Kind, sw target.Switch, entries []Entry, live client.Object) (metav1.Condition, []v1beta1.EntryStatus) {
	entries = followedEntries(entries)
	var current *bool
	if RetainsModeOf(sw, entries) {
		current = liveMode(kind, sw, live, nil)
	}
	cond, states, _ := ActiveOf(sw, entries, current)
	return cond, states
}

// SelectedOf is Selected for a switch with a list: the mode its entries
// select, spec.override aside.
func SelectedOf(kind target.Kind, sw target.Switch, entries []Entry, live client.Object) metav1.Condition {
	entries = followedEntries(entries)
	var current *bool
	spec := sw.SwitchSpec()
	if spec.FailurePolicy == v1beta1.FailurePolicyRetain {
		current = liveMode(kind, sw, live, nil)
	}
	cond, _, _ := combine(sw, entries, current)
	return cond
}

// followedEntries is entries with each state as the operator follows it
// (Followed), in a copy.
func followedEntries(entries []Entry) []Entry {
	out := make([]Entry, len(entries))
	for i, e := range entries {
		e.State = Followed(e.State, nil)
		out[i] = e
	}
	return out
}

// CurrentOf is Current for a switch with a list: the mode Retain keeps
// when the decision may fall to it (RetainsModeOf), nil otherwise.
func CurrentOf(kind target.Kind, sw target.Switch, entries []Entry, live client.Object, pending *bool) *bool {
	if !RetainsModeOf(sw, entries) {
		return nil
	}
	return liveMode(kind, sw, live, pending)
}

package switches

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// decide is the Active condition of sw: the mode what it follows
// selects, or its failure policy's when it follows no state (f.why says
// why), with each entry's verdict for a list (nil for a single state).
// pending is true while the verdict of an expected expression is being
// evaluated (evaluate.Evaluator); the switch is reconciled again once it
// is known.
func (r *Reconciler) decide(sw target.Switch, f followed, current *bool, req ctrl.Request) (active metav1.Condition, entries []v1beta1.EntryStatus, pending bool) {
	id := target.SwitchID{Kind: r.Kind.SwitchKind(), Key: req.NamespacedName}
	if f.entries != nil {
		if r.Expressions != nil {
			for i := range f.entries {
				entry := id
				entry.Entry = f.entries[i].Name
				f.entries[i].Known = r.Expressions.Known(entry, r.wake(req))
			}
		}
		active, entries, pending = decision.ActiveOf(sw, f.entries, current)
		return active, keepPendingEntries(entries, sw.SwitchStatus().States), pending
	}
	switch {
	case f.why != nil:
		return decision.ActiveUnfollowed(sw, *f.why, current), nil, false
	case r.Expressions == nil:
		return decision.Active(sw, f.state, current), nil, false
	}
	active, pending = decision.ActiveKnown(sw, f.state, current, r.Expressions.Known(id, r.wake(req)))
	return active, nil, pending
}

// keepPendingEntries is entries with the verdict the status shows kept for
// each entry whose own verdict is still being evaluated (the list was
// decided by another entry): the status is not written twice, once with
// the entry pending and once with its verdict, for a mode that does not
// change.
func keepPendingEntries(entries, shown []v1beta1.EntryStatus) []v1beta1.EntryStatus {
	for i, e := range entries {
		if e.Reason != decision.ReasonVerdictPending {
			continue
		}
		for _, prev := range shown {
			if prev.Name == e.Name {
				entries[i] = prev
				break
			}
		}
	}
	return entries
}

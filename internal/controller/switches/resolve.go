package switches

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/follow"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// retainedMode is the mode the target is in now when the switch's mode
// depends on it (failurePolicy Retain while the state gives no answer),
// read from the target's shape (decision.Current); nil otherwise. The cache
// holds this manager's last write to the target (getTarget waits for it),
// so this is the mode the operator last wrote, and after a restart the mode
// the target shows.
func (r *Reconciler) retainedMode(ctx context.Context, sw target.Switch, f followed) (*bool, error) {
	key := target.Key(sw)
	if !f.retainsMode(sw) || key.Namespace != sw.GetNamespace() {
		// A target in another namespace is refused by syncTarget, unread.
		return nil, nil
	}
	live, err := r.getTarget(ctx, key)
	if err != nil {
		return nil, err
	}
	if f.entries != nil {
		return decision.CurrentOf(r.Kind, sw, f.entries, live, r.pendingMode(sw)), nil
	}
	return decision.Current(r.Kind, sw, f.state, live, r.pendingMode(sw)), nil
}

// followed is what a switch follows, resolved: its single state (nil when
// it follows none, and why says why), or each entry of spec.anyOf /
// spec.allOf.
type followed struct {
	state   *v1beta1.DynamicIngressState
	why     *decision.Unfollowed
	entries []decision.Entry
}

// resolve reads what sw follows, each state as the decision reads it
// (decision.Followed).
func (r *Reconciler) resolve(ctx context.Context, sw target.Switch) (followed, error) {
	spec := sw.SwitchSpec()
	if spec.Combination() == v1beta1.CombinationSingle {
		state, why, err := r.getState(ctx, sw.GetNamespace(), spec.State)
		return followed{state: decision.Followed(state, r.fixed.at(state)), why: why}, err
	}
	list := spec.Entries()
	entries := make([]decision.Entry, len(list))
	for i, e := range list {
		state, why, err := r.getState(ctx, sw.GetNamespace(), e.State)
		if err != nil {
			return followed{}, err
		}
		entries[i] = decision.Entry{Name: e.Name, Expected: e.Expected, State: decision.Followed(state, r.fixed.at(state)), Why: why}
	}
	return followed{entries: entries}, nil
}

// retainsMode says whether the decision may depend on the target's
// current mode (failurePolicy Retain while a state gives no answer).
func (f followed) retainsMode(sw target.Switch) bool {
	if f.entries != nil {
		return decision.RetainsModeOf(sw, f.entries)
	}
	return decision.RetainsMode(sw, f.state)
}

// latest is the followed state changed last, for the switch's latency:
// the single state, or the entries' state whose response changed last.
func (f followed) latest() *v1beta1.DynamicIngressState {
	if f.entries == nil {
		return f.state
	}
	var out *v1beta1.DynamicIngressState
	for _, e := range f.entries {
		if e.State == nil || e.State.Status.LastUpdateTime == nil {
			continue
		}
		if out == nil || e.State.Status.LastUpdateTime.After(out.Status.LastUpdateTime.Time) {
			out = e.State
		}
	}
	return out
}

// pendingMode is the mode of the switch's last announced target write that
// its status does not show yet, nil when there is none.
func (r *Reconciler) pendingMode(sw target.Switch) *bool {
	if mode, ok := r.announced.mode(client.ObjectKeyFromObject(sw)); ok {
		return &mode
	}
	return nil
}

// knownMode is from, the mode a target's shape tells, or, when the shape
// tells nothing (a hand-edited target, or a template edited since the
// write), the mode of the switch's last announced target write that its
// status does not show yet; nil when neither is known, and the status then
// decides.
func (r *Reconciler) knownMode(sw target.Switch, from *bool) *bool {
	if from != nil {
		return from
	}
	return r.pendingMode(sw)
}

// modeOf is the mode a live target (nil when there is none) is in, nil when
// its shape does not tell.
func (r *Reconciler) modeOf(sw target.Switch, live client.Object) *bool {
	return decision.TargetMode(r.Kind, sw, live)
}

// getState returns the state ref that a switch in namespace follows
// (followedState).
func (r *Reconciler) getState(ctx context.Context, namespace string, ref v1beta1.StateReference) (*v1beta1.DynamicIngressState, *decision.Unfollowed, error) {
	return follow.State(ctx, r.Client, r.ClusterStates, namespace, ref)
}

package notifiers

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/flip"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/follow"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/index"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/notify"
)

// What a notifier reads: the states it names, as a switch would follow
// them, and the override audits of its namespace's followers.

// readStates reads the states n names: those it may send about, each with
// what was delivered of it (notify.Start when nothing was), and the others.
func (r *Reconciler) readStates(ctx context.Context, n *v1beta1.DynamicIngressNotifier) ([]notify.State, []v1beta1.DeliveredState, []notify.Unread, error) {
	var states []notify.State
	var delivered []v1beta1.DeliveredState
	var unread []notify.Unread
	for _, ref := range n.Spec.States {
		state, why, err := follow.State(ctx, r.Client, r.ClusterStates, n.Namespace, ref)
		if err != nil {
			return nil, nil, nil, err
		}
		if why != nil {
			// A state not admitted resumes from its history once admitted
			// again; one not found (or not watched) may come back as it
			// was: what was delivered of either stays recorded.
			unread = append(unread, notify.Unread{Ref: ref, Reason: why.Reason, Message: why.Message, Keep: true})
			continue
		}
		s := notify.State{Ref: ref, UID: string(state.UID), History: state.Status.History,
			Ready: meta.FindStatusCondition(state.Status.Conditions, v1beta1.ConditionReady)}
		if !ref.IsCluster() {
			s.Namespace = n.Namespace
		}
		s.Flip = r.Flips.Progress(flip.StateKey(s.Namespace, ref.Name), n.Namespace)
		d, ok := notify.Find(n.Status.Delivered, ref)
		if !ok || d.UID != s.UID {
			d = notify.Start(s)
		}
		states = append(states, s)
		delivered = append(delivered, d)
	}
	return states, delivered, unread, nil
}

// overrides are the override audits of the switches in n's namespace that
// follow a state n names, each switch once, with their expired pins.
func (r *Reconciler) overrides(ctx context.Context, n *v1beta1.DynamicIngressNotifier) ([]notify.Override, error) {
	seen := map[string]bool{}
	var out []notify.Override
	for _, ref := range n.Spec.States {
		field := index.State
		if ref.IsCluster() {
			field = index.ClusterState
		}
		for _, kind := range r.Switches {
			list := kind.NewSwitchList()
			if err := r.List(ctx, list, client.InNamespace(n.Namespace), client.MatchingFields{field: ref.Name}, client.UnsafeDisableDeepCopy); err != nil {
				return nil, err
			}
			for _, sw := range kind.SwitchItems(list) {
				o, ok := notify.OverrideOf(kind.SwitchKind(), sw, sw.SwitchSpec(), sw.SwitchStatus().Override)
				if ok && !seen[o.Kind+"/"+o.Name] {
					seen[o.Kind+"/"+o.Name] = true
					out = append(out, o)
				}
			}
		}
	}
	return out, nil
}

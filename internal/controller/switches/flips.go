package switches

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/flip"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// settleFlips reports that the status of sw shows what it decided from
// each state it follows (flip.Tracker); a state it follows none of (not
// found, not admitted) counts as shown.
func (r *Reconciler) settleFlips(sw target.Switch, f followed, req ctrl.Request) {
	if r.Flips == nil {
		return
	}
	id := target.SwitchID{Kind: r.Kind.SwitchKind(), Key: req.NamespacedName}
	var keys []string
	settle := func(ref v1beta1.StateReference, state *v1beta1.DynamicIngressState) {
		namespace := sw.GetNamespace()
		if ref.IsCluster() {
			namespace = ""
		}
		key := flip.StateKey(namespace, ref.Name)
		keys = append(keys, key)
		if state == nil {
			r.Flips.ForgetIn(key, id)
			return
		}
		r.Flips.Settled(key, state.Status.StatusCode, state.Status.Body, id)
	}
	spec := sw.SwitchSpec()
	if f.entries == nil {
		settle(spec.State, f.state)
	} else {
		for i, e := range spec.Entries() {
			if i < len(f.entries) {
				settle(e.State, f.entries[i].State)
			}
		}
	}
	r.Flips.KeepOnlyIn(keys, id)
}

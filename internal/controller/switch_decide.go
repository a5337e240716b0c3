package controller

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// decide is the Active condition of sw: the mode its state selects (why
// is nil), or its failure policy's (why says why it follows no state).
// pending is true while the verdict of its expected expression is being
// evaluated (expressionEvaluator); the switch is reconciled again once it
// is known.
func (r *SwitchReconciler) decide(sw target.Switch, state *v1beta1.DynamicIngressState, why *decision.Unfollowed, current *bool, req ctrl.Request) (active metav1.Condition, pending bool) {
	switch {
	case why != nil:
		return decision.ActiveUnfollowed(sw, *why, current), false
	case r.expressions == nil:
		return decision.Active(sw, state, current), false
	}
	id := switchID{r.Kind.SwitchKind(), req.NamespacedName}
	return decision.ActiveKnown(sw, state, current, r.expressions.known(id, r.wake(req)))
}

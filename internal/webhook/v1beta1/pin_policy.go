package v1beta1

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/follow"
)

// validatePinPolicy refuses a pin, set or changed (old nil on create),
// that breaks the override policy of a state the switch follows: the
// strictest of them with anyOf or allOf (docs/behaviour.md, "Override
// policies"). A pin left alone is not checked again: a policy added later
// does not refuse other edits of the switch.
func validatePinPolicy(ctx context.Context, r client.Reader, namespace string, old *v1beta1.SwitchSpec, sw v1beta1.SwitchSpec, now time.Time) field.ErrorList {
	if sw.Override == "" || !pinRemade(old, sw) {
		return nil
	}
	policies, err := follow.Policies(ctx, r, namespace, sw)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec", "override"), err)}
	}
	breaks := decision.MergePolicies(policies).Breaks(sw, now)
	var errs field.ErrorList
	if msg, ok := breaks["overrideUntil"]; ok {
		path := field.NewPath("spec", "overrideUntil")
		if sw.OverrideUntil == nil {
			errs = append(errs, field.Required(path, msg))
		} else {
			errs = append(errs, field.Invalid(path, sw.OverrideUntil.UTC().Format(time.RFC3339), msg))
		}
	}
	if msg, ok := breaks["overrideReason"]; ok {
		errs = append(errs, field.Required(field.NewPath("spec", "overrideReason"), msg))
	}
	return errs
}

package served

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// A DynamicHTTPRoute is served once its route's parents accepted it too.

// ParentsAcceptance says, for a DynamicHTTPRoute, which parents of its
// HTTPRoute have not accepted the route's current generation ("" when all
// did); nil for a kind without parents.
type ParentsAcceptance func() string

// RouteParentsAcceptance is parentsAcceptance for the live route (nil
// when there is none).
func RouteParentsAcceptance(route *gatewayv1.HTTPRoute) ParentsAcceptance {
	return func() string {
		if route == nil {
			return "the HTTPRoute does not exist"
		}
		if len(route.Status.Parents) == 0 {
			return fmt.Sprintf("no parent has accepted generation %d of the HTTPRoute yet", route.Generation)
		}
		var waiting []string
		for _, p := range route.Status.Parents {
			c := meta.FindStatusCondition(p.Conditions, string(gatewayv1.RouteConditionAccepted))
			if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration < route.Generation {
				waiting = append(waiting, string(p.ParentRef.Name))
			}
		}
		if len(waiting) == 0 {
			return ""
		}
		return fmt.Sprintf("waiting for parent %s to accept generation %d of the HTTPRoute", strings.Join(waiting, ", "), route.Generation)
	}
}

package writes

import (
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// The manager's cache holds every switch, state and managed target; at
// 10 000 switches that is most of its memory (docs/benchmarks.md, "Scale").
// These transforms drop what the reconcilers never read before an object
// is stored.

// LastAppliedAnnotation is where client-side kubectl apply keeps a whole
// copy of the object.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// StripSwitch drops a switch's or a state's managedFields and the copy of
// it that client-side kubectl apply keeps in an annotation: the engine
// reads their spec, status and identity only. It shares what many
// objects hold alike (share.go).
func StripSwitch(in any) (any, error) {
	obj, err := meta.Accessor(in)
	if err != nil {
		return in, nil
	}
	if obj.GetManagedFields() != nil {
		obj.SetManagedFields(nil)
	}
	if a := obj.GetAnnotations(); a != nil {
		if _, ok := a[LastAppliedAnnotation]; ok {
			delete(a, LastAppliedAnnotation)
			obj.SetAnnotations(a)
		}
	}
	internMeta(obj)
	shareTemplates(in)
	if sw, ok := in.(interface{ SwitchStatus() *v1beta1.SwitchStatus }); ok {
		internConditions(sw.SwitchStatus().Conditions)
	}
	if st, ok := in.(interface {
		StateView() *v1beta1.DynamicIngressState
	}); ok {
		internConditions(st.StateView().Status.Conditions)
	}
	return in, nil
}

// StripTarget keeps of a target's managedFields only the entries of the
// operator's field owner (what target.UpToDate and the hand-over of created
// fields read) and drops its status but what spec.served reads (a route's
// parents' Accepted conditions): an ingress controller's load balancer
// entries, a route's other conditions. The
// hand-over of created fields rewrites the whole managedFields list, so it
// reads the target from the API server, not from the cache
// (SwitchReconciler.syncTarget).
func StripTarget(in any) (any, error) {
	if obj, err := meta.Accessor(in); err == nil {
		if entries := obj.GetManagedFields(); len(entries) > 0 {
			ours := make([]metav1.ManagedFieldsEntry, 0, 1)
			for _, e := range entries {
				if e.Manager == v1beta1.FieldOwner {
					ours = append(ours, e)
				}
			}
			if len(ours) != len(entries) {
				obj.SetManagedFields(ours)
			}
			internManagedFields(obj.GetManagedFields())
		}
		internMeta(obj)
	}
	switch t := in.(type) {
	case *networkingv1.Ingress:
		t.Status = networkingv1.IngressStatus{}
	case *gatewayv1.HTTPRoute:
		t.Status = acceptanceOnly(t.Status)
	}
	return in, nil
}

var (
	_ toolscache.TransformFunc = StripSwitch
	_ toolscache.TransformFunc = StripTarget
)

// acceptanceOnly is a route's status with, for each parent, only its
// reference, controller and Accepted condition (what spec.served reads).
func acceptanceOnly(in gatewayv1.HTTPRouteStatus) gatewayv1.HTTPRouteStatus {
	if len(in.Parents) == 0 {
		return gatewayv1.HTTPRouteStatus{}
	}
	out := gatewayv1.HTTPRouteStatus{}
	out.Parents = make([]gatewayv1.RouteParentStatus, len(in.Parents))
	for i, p := range in.Parents {
		out.Parents[i] = gatewayv1.RouteParentStatus{ParentRef: p.ParentRef, ControllerName: p.ControllerName}
		for _, c := range p.Conditions {
			if c.Type == string(gatewayv1.RouteConditionAccepted) {
				out.Parents[i].Conditions = []metav1.Condition{{Type: c.Type, Status: c.Status, ObservedGeneration: c.ObservedGeneration, Reason: c.Reason}}
			}
		}
	}
	return out
}

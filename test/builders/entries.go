package builders

import "github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"

// Entry starts an entry of spec.anyOf or spec.allOf named name that follows
// the DynamicIngressState state and expects the status code code.
func Entry(name, state, code string) v1beta1.StateEntry {
	return v1beta1.StateEntry{Name: name, State: state, Expected: v1beta1.ExpectedResponse{StatusCode: code}}
}

// ClusterEntry is Entry following the ClusterDynamicIngressState state.
func ClusterEntry(name, state, code string) v1beta1.StateEntry {
	return v1beta1.StateEntry{Name: name, StateRef: &v1beta1.StateReference{Kind: v1beta1.StateKindCluster, Name: state},
		Expected: v1beta1.ExpectedResponse{StatusCode: code}}
}

// AnyOf makes the DynamicIngress follow entries, active when any matches,
// instead of one state.
func (w *DynamicIngressWrapper) AnyOf(entries ...v1beta1.StateEntry) *DynamicIngressWrapper {
	w.Spec.State, w.Spec.StateRef, w.Spec.Expected = "", nil, v1beta1.ExpectedResponse{}
	w.Spec.AnyOf = entries
	return w
}

// AllOf makes the DynamicIngress follow entries, active when all match,
// instead of one state.
func (w *DynamicIngressWrapper) AllOf(entries ...v1beta1.StateEntry) *DynamicIngressWrapper {
	w.Spec.State, w.Spec.StateRef, w.Spec.Expected = "", nil, v1beta1.ExpectedResponse{}
	w.Spec.AllOf = entries
	return w
}

// AnyOf makes the DynamicHTTPRoute follow entries, active when any
// matches, instead of one state.
func (w *DynamicHTTPRouteWrapper) AnyOf(entries ...v1beta1.StateEntry) *DynamicHTTPRouteWrapper {
	w.Spec.State, w.Spec.StateRef, w.Spec.Expected = "", nil, v1beta1.ExpectedResponse{}
	w.Spec.AnyOf = entries
	return w
}

// AllOf makes the DynamicHTTPRoute follow entries, active when all match,
// instead of one state.
func (w *DynamicHTTPRouteWrapper) AllOf(entries ...v1beta1.StateEntry) *DynamicHTTPRouteWrapper {
	w.Spec.State, w.Spec.StateRef, w.Spec.Expected = "", nil, v1beta1.ExpectedResponse{}
	w.Spec.AllOf = entries
	return w
}

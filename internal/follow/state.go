// Package follow reads the state that a switch or a notifier follows, as
// the decisions read it: a DynamicIngressState of its own namespace, or
// the view of a ClusterDynamicIngressState whose grant admits the
// namespace (docs/behaviour.md). Both reconcilers that follow states use
// it; it imports neither.
package follow

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
)

// State returns the state ref that a switch (or a notifier) in
// namespace names, as the decisions read it, from the cache c: a DynamicIngressState in the switch's namespace,
// or the view of a ClusterDynamicIngressState whose grant admits the
// namespace. When there is none to follow it returns nil
// and why: the state does not exist, its grant does not admit the
// namespace, or this manager does not watch cluster states
// (clusterStates). The state is the cache's own: read it, never change it.
func State(ctx context.Context, c client.Reader, clusterStates bool, namespace string, ref v1beta1.StateReference) (*v1beta1.DynamicIngressState, *decision.Unfollowed, error) {
	if !ref.IsCluster() {
		state := &v1beta1.DynamicIngressState{}
		err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, state, client.UnsafeDisableDeepCopy)
		if apierrors.IsNotFound(err) {
			return nil, ptr.To(decision.NotFound(ref)), nil
		}
		if err != nil {
			return nil, nil, err
		}
		return state, nil, nil
	}
	if !clusterStates {
		return nil, ptr.To(decision.ClusterStatesNotWatched(ref)), nil
	}
	state := &v1beta1.ClusterDynamicIngressState{}
	err := c.Get(ctx, types.NamespacedName{Name: ref.Name}, state, client.UnsafeDisableDeepCopy)
	if apierrors.IsNotFound(err) {
		return nil, ptr.To(decision.NotFound(ref)), nil
	}
	if err != nil {
		return nil, nil, err
	}
	labels, known, err := namespaceLabels(ctx, c, namespace)
	if err != nil {
		return nil, nil, err
	}
	if !known {
		// Unknown labels are not "no labels": a grant with NotIn or
		// DoesNotExist would admit them. Decided again when the
		// Namespace shows up (namespaceRelabelled).
		return nil, ptr.To(decision.NamespaceNotKnown(ref.Name, namespace)), nil
	}
	if msg := decision.NotAdmitted(ref.Name, state.Spec.Followers.Namespaces, namespace, labels); msg != "" {
		return nil, &decision.Unfollowed{Reason: v1beta1.ReasonStateNotAdmitted, Message: msg}, nil
	}
	return state.StateView(), nil, nil
}

// namespaceLabels are the labels of a namespace, from the cache's
// metadata-only copy of Namespaces; known is false when the cache does not
// hold the namespace (not seen yet, or gone).
func namespaceLabels(ctx context.Context, c client.Reader, name string) (labels map[string]string, known bool, err error) {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	err = c.Get(ctx, types.NamespacedName{Name: name}, ns, client.UnsafeDisableDeepCopy)
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	return ns.GetLabels(), err == nil, err
}

// LabelsChanged passes the creation of a Namespace (its labels become
// known) and the updates that change its labels, which a cluster state's
// grant reads.
func LabelsChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return true },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
		},
	}
}

package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// retainedMode is the mode the target is in now when the switch's mode
// depends on it (failurePolicy Retain while the state gives no answer),
// read from the target's shape (decision.Current); nil otherwise. The cache
// holds this manager's last write to the target (getTarget waits for it),
// so this is the mode the operator last wrote, and after a restart the mode
// the target shows.
func (r *SwitchReconciler) retainedMode(ctx context.Context, sw target.Switch, state *v1beta1.DynamicIngressState) (*bool, error) {
	key := target.Key(sw)
	if !decision.RetainsMode(sw, state) || key.Namespace != sw.GetNamespace() {
		// A target in another namespace is refused by syncTarget, unread.
		return nil, nil
	}
	live, err := r.getTarget(ctx, key)
	if err != nil {
		return nil, err
	}
	return decision.Current(r.Kind, sw, state, live, r.pendingMode(sw)), nil
}

// pendingMode is the mode of the switch's last announced target write that
// its status does not show yet, nil when there is none.
func (r *SwitchReconciler) pendingMode(sw target.Switch) *bool {
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
func (r *SwitchReconciler) knownMode(sw target.Switch, from *bool) *bool {
	if from != nil {
		return from
	}
	return r.pendingMode(sw)
}

// modeOf is the mode a live target (nil when there is none) is in, nil when
// its shape does not tell.
func (r *SwitchReconciler) modeOf(sw target.Switch, live client.Object) *bool {
	return decision.TargetMode(r.Kind, sw, live)
}

// getState returns the state the switch follows (spec.state or
// spec.stateRef), as the decisions read it: a DynamicIngressState in the
// switch's namespace, or the view of a ClusterDynamicIngressState whose
// grant admits the namespace. When there is none to follow it returns nil
// and why: the state does not exist, its grant does not admit the
// namespace, or this manager does not watch cluster states.
func (r *SwitchReconciler) getState(ctx context.Context, sw target.Switch) (*v1beta1.DynamicIngressState, *decision.Unfollowed, error) {
	ref := sw.SwitchSpec().State
	if !ref.IsCluster() {
		state := &v1beta1.DynamicIngressState{}
		err := r.Get(ctx, types.NamespacedName{Namespace: sw.GetNamespace(), Name: ref.Name}, state, client.UnsafeDisableDeepCopy)
		if apierrors.IsNotFound(err) {
			return nil, ptr.To(decision.NotFound(ref)), nil
		}
		if err != nil {
			return nil, nil, err
		}
		return state, nil, nil
	}
	if !r.ClusterStates {
		return nil, ptr.To(decision.ClusterStatesNotWatched(ref)), nil
	}
	state := &v1beta1.ClusterDynamicIngressState{}
	err := r.Get(ctx, types.NamespacedName{Name: ref.Name}, state, client.UnsafeDisableDeepCopy)
	if apierrors.IsNotFound(err) {
		return nil, ptr.To(decision.NotFound(ref)), nil
	}
	if err != nil {
		return nil, nil, err
	}
	labels, known, err := r.namespaceLabels(ctx, sw.GetNamespace())
	if err != nil {
		return nil, nil, err
	}
	if !known {
		// Unknown labels are not "no labels": a grant with NotIn or
		// DoesNotExist would admit them. Decided again when the
		// Namespace shows up (namespaceRelabelled).
		return nil, ptr.To(decision.NamespaceNotKnown(ref.Name, sw.GetNamespace())), nil
	}
	if msg := decision.NotAdmitted(ref.Name, state.Spec.Followers.Namespaces, sw.GetNamespace(), labels); msg != "" {
		return nil, &decision.Unfollowed{Reason: v1beta1.ReasonStateNotAdmitted, Message: msg}, nil
	}
	return state.StateView(), nil, nil
}

// namespaceLabels are the labels of a namespace, from the cache's
// metadata-only copy of Namespaces; known is false when the cache does not
// hold the namespace (not seen yet, or gone).
func (r *SwitchReconciler) namespaceLabels(ctx context.Context, name string) (labels map[string]string, known bool, err error) {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	err = r.Get(ctx, types.NamespacedName{Name: name}, ns, client.UnsafeDisableDeepCopy)
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	return ns.GetLabels(), err == nil, err
}

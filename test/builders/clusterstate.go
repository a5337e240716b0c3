package builders

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// ClusterStateWrapper builds a v1beta1.ClusterDynamicIngressState.
type ClusterStateWrapper struct {
	v1beta1.ClusterDynamicIngressState
}

// Cluster is a ClusterDynamicIngressState with the state's name and source
// (the state's namespace is dropped) and a grant that admits no namespace
// yet: set one with FollowersAll or FollowersMatching.
func (w *StateWrapper) Cluster() *ClusterStateWrapper {
	spec := w.Spec.DeepCopy()
	return &ClusterStateWrapper{v1beta1.ClusterDynamicIngressState{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name},
		Spec:       v1beta1.ClusterDynamicIngressStateSpec{DynamicIngressStateSpec: *spec},
	}}
}

// FollowersAll admits every namespace.
func (w *ClusterStateWrapper) FollowersAll() *ClusterStateWrapper {
	w.Spec.Followers.Namespaces = v1beta1.FollowerNamespaces{From: v1beta1.NamespacesFromAll}
	return w
}

// FollowersMatching admits the namespaces with these labels.
func (w *ClusterStateWrapper) FollowersMatching(labels map[string]string) *ClusterStateWrapper {
	w.Spec.Followers.Namespaces = v1beta1.FollowerNamespaces{From: v1beta1.NamespacesFromSelector,
		Selector: &metav1.LabelSelector{MatchLabels: labels}}
	return w
}

// Obj returns the ClusterDynamicIngressState built so far (not a copy).
func (w *ClusterStateWrapper) Obj() *v1beta1.ClusterDynamicIngressState {
	return &w.ClusterDynamicIngressState
}

// YAML renders the ClusterDynamicIngressState, with apiVersion and kind,
// for kubectl.
func (w *ClusterStateWrapper) YAML() string {
	obj := w.DeepCopy()
	obj.TypeMeta = typeMeta(string(v1beta1.StateKindCluster))
	return toYAML(obj)
}

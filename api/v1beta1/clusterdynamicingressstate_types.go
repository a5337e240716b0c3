package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StateKind is the kind of state a switch follows.
// +kubebuilder:validation:Enum=DynamicIngressState;ClusterDynamicIngressState
type StateKind string

const (
	// StateKindNamespaced is a DynamicIngressState in the switch's own
	// namespace.
	StateKindNamespaced StateKind = "DynamicIngressState"
	// StateKindCluster is a cluster-scoped ClusterDynamicIngressState.
	StateKindCluster StateKind = "ClusterDynamicIngressState"
)

// StateReference names the state a switch follows, with its kind.
type StateReference struct {
	// kind of the state: DynamicIngressState (the default), in the switch's
	// namespace, or ClusterDynamicIngressState.
	// +optional
	Kind StateKind `json:"kind,omitempty"`

	// name of the state.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// IsCluster reports whether the reference names a
// ClusterDynamicIngressState.
func (r StateReference) IsCluster() bool { return r.Kind == StateKindCluster }

// String is the reference as messages show it: the kind and the quoted
// name.
func (r StateReference) String() string {
	kind := r.Kind
	if kind == "" {
		kind = StateKindNamespaced
	}
	return string(kind) + " \"" + r.Name + "\""
}

// followedState resolves spec.state and spec.stateRef into one reference
// with its kind set: spec.state when it is set, else spec.stateRef.
func followedState(state string, ref *StateReference) StateReference {
	if state != "" || ref == nil {
		return StateReference{Kind: StateKindNamespaced, Name: state}
	}
	out := *ref
	if out.Kind == "" {
		out.Kind = StateKindNamespaced
	}
	return out
}

// FromNamespaces says which namespaces may follow a cluster state.
// +kubebuilder:validation:Enum=All;Selector
type FromNamespaces string

const (
	// NamespacesFromAll admits every namespace.
	NamespacesFromAll FromNamespaces = "All"
	// NamespacesFromSelector admits the namespaces whose labels match the
	// selector.
	NamespacesFromSelector FromNamespaces = "Selector"
)

// StateFollowers is the grant of a cluster state: who may follow it.
type StateFollowers struct {
	// namespaces whose switches may follow the state.
	// +required
	Namespaces FollowerNamespaces `json:"namespaces"`
}

// FollowerNamespaces admits namespaces, in the shape of a Gateway's
// allowedRoutes.namespaces.
// +kubebuilder:validation:XValidation:rule="self.from != 'Selector' || has(self.selector)",message="selector is required when from is Selector",fieldPath=".selector"
type FollowerNamespaces struct {
	// from is All (every namespace) or Selector (the namespaces whose
	// labels match selector).
	// +required
	From FromNamespaces `json:"from,omitempty"`

	// selector over the labels of Namespaces, required with from
	// Selector and ignored otherwise. A selector that matches nothing
	// admits no namespace.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// ClusterDynamicIngressStateSpec is a DynamicIngressState's spec (exactly
// one source of a response) and the grant of the namespaces that may
// follow it.
// The rule "exactly one of fixedResponse, probe, schedule and service"
// comes with the embedded DynamicIngressStateSpec.
// +kubebuilder:validation:XValidation:rule="!has(self.service) || has(self.service.namespace)",message="a ClusterDynamicIngressState's service needs a namespace",fieldPath=".service.namespace"
type ClusterDynamicIngressStateSpec struct {
	// The source of the response: exactly one of fixedResponse, probe,
	// schedule and service, as in a DynamicIngressState. A probe header's
	// Secret is in the manager's cluster resource namespace; a service
	// names its namespace.
	DynamicIngressStateSpec `json:",inline"`

	// followers is the grant: the namespaces whose switches may follow
	// this state.
	// +required
	Followers StateFollowers `json:"followers"`
}

// ClusterDynamicIngressState is a platform team's state for every
// namespace that its grant admits: a DynamicIngressState that is cluster-
// scoped, probed once whatever the number of its followers.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cdis,categories=dynamic
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.status.mode`
// +kubebuilder:printcolumn:name="Code",type=string,JSONPath=`.status.statusCode`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Followers",type=string,JSONPath=`.spec.followers.namespaces.from`,priority=1
// +kubebuilder:printcolumn:name="Body",type=string,JSONPath=`.status.body`,priority=1
type ClusterDynamicIngressState struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the source of the response and the grant.
	// +required
	Spec ClusterDynamicIngressStateSpec `json:"spec"`

	// status holds the current response.
	// +optional
	Status DynamicIngressStateStatus `json:"status,omitempty"`
}

// ClusterDynamicIngressStateList is a list of ClusterDynamicIngressState.
// +kubebuilder:object:root=true
type ClusterDynamicIngressStateList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items is the list of ClusterDynamicIngressState.
	Items []ClusterDynamicIngressState `json:"items"`
}

// StateView is the state as the decision engine reads it: a
// DynamicIngressState with the cluster state's name, no namespace, its
// spec's source and its status. It shares the cluster state's maps,
// pointers and slices, so neither may be changed through it.
func (s *ClusterDynamicIngressState) StateView() *DynamicIngressState {
	return &DynamicIngressState{
		TypeMeta:   metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: string(StateKindCluster)},
		ObjectMeta: s.ObjectMeta,
		Spec:       s.Spec.DynamicIngressStateSpec,
		Status:     s.Status,
	}
}

// StateView is the state itself.
func (s *DynamicIngressState) StateView() *DynamicIngressState { return s }

// StateStatus returns the status, to read and change.
func (s *ClusterDynamicIngressState) StateStatus() *DynamicIngressStateStatus { return &s.Status }

// StateStatus returns the status, to read and change.
func (s *DynamicIngressState) StateStatus() *DynamicIngressStateStatus { return &s.Status }

func init() {
	register(&ClusterDynamicIngressState{}, &ClusterDynamicIngressStateList{})
}

package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// DynamicHTTPRouteSpec declares one target HTTPRoute, the two shapes it
// takes, and the state that selects between them.
// +kubebuilder:validation:XValidation:rule="has(self.passiveRoute) || has(self.activeRoute)",message="at least one of passiveRoute and activeRoute must be set"
// +kubebuilder:validation:XValidation:rule="has(self.anyOf) || has(self.allOf) || has(self.state) != has(self.stateRef)",message="exactly one of state and stateRef must be set"
// +kubebuilder:validation:XValidation:rule="!(has(self.anyOf) && has(self.allOf))",message="at most one of anyOf and allOf may be set"
// +kubebuilder:validation:XValidation:rule="!(has(self.anyOf) || has(self.allOf)) || !(has(self.state) || has(self.stateRef) || has(self.expected))",message="anyOf and allOf replace state, stateRef and expected: set a list or a single state, not both"
// +kubebuilder:validation:XValidation:rule="has(self.anyOf) || has(self.allOf) || has(self.expected)",message="expected is required with state or stateRef"
// +kubebuilder:validation:XValidation:rule="!has(self.overrideUntil) || has(self.override)",message="overrideUntil requires override",fieldPath=".overrideUntil"
type DynamicHTTPRouteSpec struct {
	// target names the HTTPRoute that this DynamicHTTPRoute creates and
	// owns. It cannot be changed after creation.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	Target TargetReference `json:"target"`

	// passiveRoute is the shape of the target while the state does not
	// match spec.expected. Null or absent means no HTTPRoute while passive.
	// +optional
	PassiveRoute *HTTPRouteVariant `json:"passiveRoute,omitempty"`

	// activeRoute is the shape of the target while the state matches
	// spec.expected, e.g. a RequestRedirect filter to a sorry page. Null or
	// absent means no HTTPRoute while active.
	// +optional
	ActiveRoute *HTTPRouteVariant `json:"activeRoute,omitempty"`

	// state is the name of a DynamicIngressState in the same namespace.
	// Exactly one of state and stateRef is set.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	State string `json:"state,omitempty"`

	// stateRef names the state to follow with its kind: a
	// DynamicIngressState in the same namespace, or a cluster-scoped
	// ClusterDynamicIngressState whose spec.followers admits this namespace.
	// Exactly one of state and stateRef is set.
	// +optional
	StateRef *StateReference `json:"stateRef,omitempty"`

	// expected is the response that makes this DynamicHTTPRoute active.
	// Every field that is set must match the state's response. Required
	// with state or stateRef.
	// +optional
	Expected ExpectedResponse `json:"expected,omitzero"`

	// anyOf lists several states: active when any entry's state matches.
	// Instead of state, stateRef and expected.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	AnyOf []StateEntry `json:"anyOf,omitempty"`

	// allOf lists several states: active when every entry's state
	// matches. Instead of state, stateRef and expected.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	AllOf []StateEntry `json:"allOf,omitempty"`

	// failurePolicy is the mode the target takes while the state gives no
	// answer: Passive (the default), Active, or Retain.
	// +optional
	FailurePolicy FailurePolicy `json:"failurePolicy,omitempty"`

	// override pins the mode whatever the state says: Active or Passive.
	// +optional
	Override Mode `json:"override,omitempty"`

	// overrideUntil ends the pin of override at this time (RFC 3339): the
	// DynamicHTTPRoute then follows its state again, with no edit (the operator
	// never writes spec); status.override.phase turns Expired. Requires
	// override; when set or changed, it must be in the future.
	// +optional
	OverrideUntil *metav1.Time `json:"overrideUntil,omitempty"`

	// overrideReason says why the pin was set (an incident's number, a
	// sentence): recorded in status.override and in notifications. 1 to
	// 256 characters.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	OverrideReason string `json:"overrideReason,omitempty"`

	// served checks the flip where users see it: after each write of the
	// target, url is requested every period until it answers as the
	// current mode's shape does, and every parent of the HTTPRoute has
	// accepted its current generation (the Served condition).
	// +optional
	Served *ServedCheck `json:"served,omitempty"`
}

// HTTPRouteVariant is one shape of the target HTTPRoute.
type HTTPRouteVariant struct {
	// template is the HTTPRoute to make: its labels, annotations and spec.
	// +required
	Template HTTPRouteTemplate `json:"template"`
}

// HTTPRouteTemplate describes an HTTPRoute without its name and namespace,
// which come from spec.target.
type HTTPRouteTemplate struct {
	// metadata holds the labels and annotations of the HTTPRoute.
	// +optional
	Metadata TemplateMetadata `json:"metadata,omitempty"`

	// spec is the gateway.networking.k8s.io/v1 HTTPRouteSpec of the
	// HTTPRoute. Its schema is the cluster's own: the admission webhook
	// validates each template by a server-side dry run against the Gateway
	// API CRDs installed, whatever their version.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Spec gatewayv1.HTTPRouteSpec `json:"spec,omitempty"`
}

// DynamicHTTPRoute makes one target Gateway API HTTPRoute take its active
// or passive shape, depending on whether a shared DynamicIngressState
// matches spec.expected.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=dhr,categories=dynamic
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.target.name`
// +kubebuilder:selectablefield:JSONPath=`.spec.state`
// +kubebuilder:selectablefield:JSONPath=`.spec.stateRef.name`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="StateRef",type=string,JSONPath=`.spec.stateRef.name`
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.status.conditions[?(@.type=="Active")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Active")].reason`,priority=1
// +kubebuilder:printcolumn:name="Override",type=string,JSONPath=`.status.override.summary`,priority=1
// +kubebuilder:printcolumn:name="Served",type=string,JSONPath=`.status.conditions[?(@.type=="Served")].status`,priority=1
type DynamicHTTPRoute struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec declares the target, its two shapes and the state that selects one.
	// +required
	Spec DynamicHTTPRouteSpec `json:"spec"`

	// status reports whether the state matches and the target is in sync.
	// +optional
	Status SwitchStatus `json:"status,omitempty"`
}

// DynamicHTTPRouteList is a list of DynamicHTTPRoute.
// +kubebuilder:object:root=true
type DynamicHTTPRouteList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items is the list of DynamicHTTPRoute.
	Items []DynamicHTTPRoute `json:"items"`
}

// SwitchSpec returns the fields every kind of switch shares.
func (d *DynamicHTTPRoute) SwitchSpec() SwitchSpec {
	return switchSpec(d.Spec.Target, d.Spec.State, d.Spec.StateRef, d.Spec.Expected, d.Spec.AnyOf, d.Spec.AllOf, d.Spec.FailurePolicy, Pin{Mode: d.Spec.Override, Until: d.Spec.OverrideUntil, Reason: d.Spec.OverrideReason}, d.Spec.Served)
}

// SwitchStatus returns the status, to read and change.
func (d *DynamicHTTPRoute) SwitchStatus() *SwitchStatus { return &d.Status }

func init() {
	register(&DynamicHTTPRoute{}, &DynamicHTTPRouteList{})
}

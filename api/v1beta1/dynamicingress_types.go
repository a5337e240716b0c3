package v1beta1

import (
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DynamicIngressSpec declares one target Ingress, the two shapes it takes,
// and the state that selects between them.
// +kubebuilder:validation:XValidation:rule="has(self.passiveIngress) || has(self.activeIngress)",message="at least one of passiveIngress and activeIngress must be set"
type DynamicIngressSpec struct {
	// target names the Ingress that this DynamicIngress creates and owns.
	// It cannot be changed after creation.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	Target TargetReference `json:"target"`

	// passiveIngress is the shape of the target while the state does not
	// match spec.expected. Null or absent means no Ingress while passive.
	// +optional
	PassiveIngress *IngressVariant `json:"passiveIngress,omitempty"`

	// activeIngress is the shape of the target while the state matches
	// spec.expected. Null or absent means no Ingress while active.
	// +optional
	ActiveIngress *IngressVariant `json:"activeIngress,omitempty"`

	// state is the name of a DynamicIngressState in the same namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	State string `json:"state"`

	// expected is the response that makes this DynamicIngress active. Every
	// field that is set must match the state's response.
	// +required
	Expected ExpectedResponse `json:"expected"`
}

// TargetReference names the target Ingress.
type TargetReference struct {
	// name of the target Ingress.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// namespace of the target Ingress. Defaulted to the namespace of the
	// DynamicIngress, and must equal it.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// IngressVariant is one shape of the target Ingress.
type IngressVariant struct {
	// template is the Ingress to make: its labels, annotations and spec.
	// +required
	Template IngressTemplate `json:"template"`
}

// IngressTemplate describes an Ingress without its name and namespace,
// which come from spec.target.
type IngressTemplate struct {
	// metadata holds the labels and annotations of the Ingress.
	// +optional
	Metadata TemplateMetadata `json:"metadata,omitempty"`

	// spec is the networking.k8s.io/v1 IngressSpec of the Ingress.
	// +optional
	Spec networkingv1.IngressSpec `json:"spec,omitempty"`
}

// TemplateMetadata is the part of an object's metadata a template may set.
type TemplateMetadata struct {
	// labels of the Ingress. The operator adds
	// app.kubernetes.io/managed-by: dynamic-ingress-operator.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// annotations of the Ingress.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ExpectedResponse is the response a DynamicIngress waits for.
// +kubebuilder:validation:XValidation:rule="has(self.statusCode) || has(self.body)",message="at least one of statusCode and body must be set"
type ExpectedResponse struct {
	// statusCode is the HTTP status code to match, three digits from 100 to
	// 599, compared as a string.
	// +optional
	// +kubebuilder:validation:MaxLength=3
	// +kubebuilder:validation:XValidation:rule="self.matches('^[1-5][0-9][0-9]$')",message="must be an HTTP status code: three digits from 100 to 599"
	StatusCode string `json:"statusCode,omitempty"`

	// body is the response body to match. When both this and the state's
	// body are JSON, they match when they are the same JSON value; otherwise
	// they match when equal after trimming surrounding whitespace.
	// +optional
	// +kubebuilder:validation:MaxLength=1048576
	Body *string `json:"body,omitempty"`
}

// DynamicIngressStatus is the observed state of a DynamicIngress.
type DynamicIngressStatus struct {
	// observedGeneration is the metadata.generation last acted upon.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Active (the state matches spec.expected) and Ready (the
	// target Ingress is exactly what the selected template says).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DynamicIngress makes one target Ingress take its active or passive shape,
// depending on whether a shared DynamicIngressState matches spec.expected.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=di,categories=dynamic
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.target.name`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.spec.state`
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.status.conditions[?(@.type=="Active")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DynamicIngress struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec declares the target, its two shapes and the state that selects one.
	// +required
	Spec DynamicIngressSpec `json:"spec"`

	// status reports whether the state matches and the target is in sync.
	// +optional
	Status DynamicIngressStatus `json:"status,omitempty"`
}

// DynamicIngressList is a list of DynamicIngress.
// +kubebuilder:object:root=true
type DynamicIngressList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items is the list of DynamicIngress.
	Items []DynamicIngress `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DynamicIngress{}, &DynamicIngressList{})
}

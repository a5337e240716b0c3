// Package v1beta1 contains the API of dynamic-ingress-operator: DynamicIngress,
// which declares the two shapes of one Ingress, and DynamicIngressState, the
// shared response that decides which shape every DynamicIngress takes.
//
// +kubebuilder:object:generate=true
// +groupName=ingress.dynamicingress.io
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "ingress.dynamicingress.io", Version: "v1beta1"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme

	// knownTypes are the kinds (and their lists) that each kind's file
	// registers in its init.
	knownTypes []runtime.Object
)

// register adds objects to the kinds that AddToScheme adds. The API
// package depends on apimachinery only, not on controller-runtime.
func register(objects ...runtime.Object) {
	knownTypes = append(knownTypes, objects...)
}

// addKnownTypes adds the kinds of this package and the meta/v1 types of its
// group version (list and get options, watch events) to scheme.
func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, knownTypes...)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}

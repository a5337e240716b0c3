// Package v1beta1 contains the API of dynamic-ingress-operator: DynamicIngress,
// which declares the two shapes of one Ingress, and DynamicIngressState, the
// shared response that decides which shape every DynamicIngress takes.
//
// +kubebuilder:object:generate=true
// +groupName=ingress.dynamicingress.io
package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "ingress.dynamicingress.io", Version: "v1beta1"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

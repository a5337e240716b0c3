package target

import (
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// Ingress is the adapter of DynamicIngress and its networking.k8s.io/v1
// Ingress.
type Ingress struct{}

var _ Kind = Ingress{}

// SwitchKind implements Kind.
func (Ingress) SwitchKind() string { return "DynamicIngress" }

// NewSwitch implements Kind.
func (Ingress) NewSwitch() Switch { return &v1beta1.DynamicIngress{} }

// NewSwitchList implements Kind.
func (Ingress) NewSwitchList() client.ObjectList { return &v1beta1.DynamicIngressList{} }

// SwitchItems implements Kind.
func (Ingress) SwitchItems(list client.ObjectList) []Switch {
	items := list.(*v1beta1.DynamicIngressList).Items
	out := make([]Switch, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// TargetGVK implements Kind.
func (Ingress) TargetGVK() schema.GroupVersionKind {
	return networkingv1.SchemeGroupVersion.WithKind("Ingress")
}

// NewTarget implements Kind.
func (Ingress) NewTarget() client.Object { return &networkingv1.Ingress{} }

// NewTargetList implements Kind.
func (Ingress) NewTargetList() client.ObjectList { return &networkingv1.IngressList{} }

// TargetSpec implements Kind.
func (Ingress) TargetSpec(obj client.Object) any { return obj.(*networkingv1.Ingress).Spec }

// Template implements Kind.
func (Ingress) Template(sw Switch, active bool) (Template, bool) {
	spec := Underlying(sw).(*v1beta1.DynamicIngress).Spec
	variant := spec.PassiveIngress
	if active {
		variant = spec.ActiveIngress
	}
	if variant == nil {
		return Template{}, false
	}
	return Template{Metadata: variant.Template.Metadata, Spec: variant.Template.Spec}, true
}

// TemplateField implements Kind.
func (Ingress) TemplateField(active bool) string {
	if active {
		return "spec.activeIngress"
	}
	return "spec.passiveIngress"
}

// OwnedFields implements Kind.
func (Ingress) OwnedFields(existing client.Object, fieldOwner string) (any, error) {
	return networkingv1ac.ExtractIngress(existing.(*networkingv1.Ingress), fieldOwner)
}

// Default implements Kind: an Ingress has no schema defaults that a
// template's fields would miss.
func (Ingress) Default(map[string]any) {}

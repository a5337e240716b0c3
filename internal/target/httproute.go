package target

import (
	"fmt"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1ac "sigs.k8s.io/gateway-api/applyconfiguration/apis/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// HTTPRoute is the adapter of DynamicHTTPRoute and its Gateway API
// gateway.networking.k8s.io/v1 HTTPRoute.
type HTTPRoute struct {
	// schema is the HTTPRoute schema of the cluster's Gateway API CRD, for
	// its defaults; nil fills in none.
	schema *structuralschema.Structural
}

var _ Kind = HTTPRoute{}

// HTTPRouteCRDName is the name of the Gateway API CRD that defines
// HTTPRoutes.
const HTTPRouteCRDName = "httproutes.gateway.networking.k8s.io"

// NewHTTPRoute returns the adapter, with the defaults of the v1 schema of
// crd, the cluster's HTTPRoute CRD. With a nil crd no defaults are filled
// in (UpToDate then sees a difference wherever the server defaulted a
// field the template left out).
func NewHTTPRoute(crd *apiextensionsv1.CustomResourceDefinition) (HTTPRoute, error) {
	if crd == nil {
		return HTTPRoute{}, nil
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != gatewayv1.GroupVersion.Version || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		internal := &apiextensions.JSONSchemaProps{}
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
			return HTTPRoute{}, fmt.Errorf("reading the schema of %s: %w", crd.Name, err)
		}
		structural, err := structuralschema.NewStructural(internal)
		if err != nil {
			return HTTPRoute{}, fmt.Errorf("reading the schema of %s: %w", crd.Name, err)
		}
		return HTTPRoute{schema: structural}, nil
	}
	return HTTPRoute{}, fmt.Errorf("%s has no %s schema", crd.Name, gatewayv1.GroupVersion.Version)
}

// SwitchKind implements Kind.
func (HTTPRoute) SwitchKind() string { return "DynamicHTTPRoute" }

// NewSwitch implements Kind.
func (HTTPRoute) NewSwitch() Switch { return &v1beta1.DynamicHTTPRoute{} }

// NewSwitchList implements Kind.
func (HTTPRoute) NewSwitchList() client.ObjectList { return &v1beta1.DynamicHTTPRouteList{} }

// SwitchItems implements Kind.
func (HTTPRoute) SwitchItems(list client.ObjectList) []Switch {
	items := list.(*v1beta1.DynamicHTTPRouteList).Items
	out := make([]Switch, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// TargetGVK implements Kind.
func (HTTPRoute) TargetGVK() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: gatewayv1.GroupVersion.Group, Version: gatewayv1.GroupVersion.Version, Kind: "HTTPRoute"}
}

// NewTarget implements Kind.
func (HTTPRoute) NewTarget() client.Object { return &gatewayv1.HTTPRoute{} }

// NewTargetList implements Kind.
func (HTTPRoute) NewTargetList() client.ObjectList { return &gatewayv1.HTTPRouteList{} }

// TargetSpec implements Kind.
func (HTTPRoute) TargetSpec(obj client.Object) any { return obj.(*gatewayv1.HTTPRoute).Spec }

// Template implements Kind.
func (HTTPRoute) Template(sw Switch, active bool) (Template, bool) {
	spec := Underlying(sw).(*v1beta1.DynamicHTTPRoute).Spec
	variant := spec.PassiveRoute
	if active {
		variant = spec.ActiveRoute
	}
	if variant == nil {
		return Template{}, false
	}
	return Template{Metadata: variant.Template.Metadata, Spec: variant.Template.Spec}, true
}

// TemplateField implements Kind.
func (HTTPRoute) TemplateField(active bool) string {
	if active {
		return "spec.activeRoute"
	}
	return "spec.passiveRoute"
}

// OwnedFields implements Kind.
func (HTTPRoute) OwnedFields(existing client.Object, fieldOwner string) (any, error) {
	return gatewayv1ac.ExtractHTTPRoute(existing.(*gatewayv1.HTTPRoute), fieldOwner)
}

// Default implements Kind: HTTPRoute's schema defaults many fields (a
// parentRef's group and kind, a backendRef's weight, a rule's match), and
// its lists are atomic, so the fields the operator owns hold those defaults.
func (h HTTPRoute) Default(content map[string]any) {
	if h.schema != nil {
		defaulting.Default(content, h.schema)
	}
}

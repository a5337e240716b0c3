package plugin

import (
	"encoding/json"
	"errors"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// httpRouteSchemaName is the HTTPRoute's schema in its group version's
// OpenAPI v3 document.
const httpRouteSchemaName = "io.k8s.networking.gateway.v1.HTTPRoute"

// Kinds are the adapters of the switch kinds the cluster serves: Ingress
// always, HTTPRoute when discovery lists the Gateway API's HTTPRoute, with
// the defaults of its schema read from the API server's OpenAPI v3
// document. Discovery and OpenAPI are open to every authenticated user
// (the system:discovery role), so a user bound only to view gets the same
// defaults as the operator, which reads them from the CRD, and "in shape"
// cannot disagree with it. When the document cannot be read, HTTPRoutes go
// without defaults: an in-shape check may then see a difference in a
// defaulted field.
func Kinds(disco discovery.DiscoveryInterface) []target.Kind {
	kinds := []target.Kind{target.Ingress{}}
	gv := target.HTTPRoute{}.TargetGVK().GroupVersion()
	resources, err := disco.ServerResourcesForGroupVersion(gv.String())
	if err != nil || !servesKind(resources, target.HTTPRoute{}.TargetGVK().Kind) {
		return kinds
	}
	crd, err := httpRouteSchema(disco)
	if err != nil {
		return append(kinds, target.HTTPRoute{})
	}
	kind, err := target.NewHTTPRoute(crd)
	if err != nil {
		return append(kinds, target.HTTPRoute{})
	}
	return append(kinds, kind)
}

// servesKind says whether resources list kind.
func servesKind(resources *metav1.APIResourceList, kind string) bool {
	if resources == nil {
		return false
	}
	for _, r := range resources.APIResources {
		if r.Kind == kind {
			return true
		}
	}
	return false
}

// httpRouteSchema reads the HTTPRoute's spec schema from the OpenAPI v3
// document of its group version, as the CRD the target adapter reads its
// defaults from.
func httpRouteSchema(disco discovery.DiscoveryInterface) (*apiextensionsv1.CustomResourceDefinition, error) {
	gv := target.HTTPRoute{}.TargetGVK().GroupVersion()
	paths, err := disco.OpenAPIV3().Paths()
	if err != nil {
		return nil, err
	}
	doc, ok := paths["apis/"+gv.String()]
	if !ok {
		return nil, apierrors.NewNotFound(gv.WithResource("openapi").GroupResource(), gv.String())
	}
	raw, err := doc.Schema("application/json")
	if err != nil {
		return nil, err
	}
	return crdFromOpenAPI(raw)
}

// crdFromOpenAPI makes, from an OpenAPI v3 document, a CRD whose v1 schema
// holds the HTTPRoute's spec: all that its defaults need. The metadata is
// left out: the document refers to ObjectMeta's schema elsewhere, and
// HTTPRoute defaults nothing in it.
func crdFromOpenAPI(raw []byte) (*apiextensionsv1.CustomResourceDefinition, error) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("reading the OpenAPI v3 document: %w", err)
	}
	route, ok := doc.Components.Schemas[httpRouteSchemaName]
	if !ok || route.Properties["spec"] == nil {
		return nil, errors.New("the OpenAPI v3 document has no HTTPRoute spec schema")
	}
	spec := apiextensionsv1.JSONSchemaProps{}
	if err := json.Unmarshal(route.Properties["spec"], &spec); err != nil {
		return nil, fmt.Errorf("reading the HTTPRoute spec schema: %w", err)
	}
	gv := target.HTTPRoute{}.TargetGVK().GroupVersion()
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: target.HTTPRouteCRDName},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: gv.Version, Schema: &apiextensionsv1.CustomResourceValidation{
				OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec}},
			}}},
		},
	}, nil
}

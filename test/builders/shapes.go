package builders

import (
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// IngressShape builds a v1beta1.IngressVariant, one shape of a
// DynamicIngress's target.
type IngressShape struct {
	v1beta1.IngressVariant
}

// IngressTo is an Ingress shape with one rule for host whose path "/"
// (type Prefix) goes to port 80 of service; no labels nor annotations.
func IngressTo(host, service string) *IngressShape {
	return &IngressShape{v1beta1.IngressVariant{Template: v1beta1.IngressTemplate{
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
			Host: host,
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{
					Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
						Name: service, Port: networkingv1.ServiceBackendPort{Number: 80},
					}},
				}},
			}},
		}}},
	}}}
}

// Obj returns the variant built so far (not a copy); nil for a nil shape.
func (s *IngressShape) Obj() *v1beta1.IngressVariant {
	if s == nil {
		return nil
	}
	return &s.IngressVariant
}

// Annotation adds an annotation to the template's metadata.
func (s *IngressShape) Annotation(k, v string) *IngressShape {
	setKey(&s.Template.Metadata.Annotations, k, v)
	return s
}

// Label adds a label to the template's metadata.
func (s *IngressShape) Label(k, v string) *IngressShape {
	setKey(&s.Template.Metadata.Labels, k, v)
	return s
}

// Path sets the path of the first rule's first path.
func (s *IngressShape) Path(p string) *IngressShape {
	s.Template.Spec.Rules[0].HTTP.Paths[0].Path = p
	return s
}

// Port sets the service port of the first rule's first path (80 by
// default): the port of a LoopbackService.
func (s *IngressShape) Port(port int32) *IngressShape {
	s.Template.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Number = port
	return s
}

// ClassName sets the template's ingressClassName.
func (s *IngressShape) ClassName(c string) *IngressShape {
	s.Template.Spec.IngressClassName = ptr.To(c)
	return s
}

// HTTPRouteShape builds a v1beta1.HTTPRouteVariant, one shape of a
// DynamicHTTPRoute's target.
type HTTPRouteShape struct {
	v1beta1.HTTPRouteVariant
}

// publicRoute is an HTTPRoute spec for host attached to the Gateway
// "public", with the given rule.
func publicRoute(host string, rule gatewayv1.HTTPRouteRule) *HTTPRouteShape {
	return &HTTPRouteShape{v1beta1.HTTPRouteVariant{Template: v1beta1.HTTPRouteTemplate{
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "public"}}},
			Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(host)},
			Rules:           []gatewayv1.HTTPRouteRule{rule},
		},
	}}}
}

// RouteTo is an HTTPRoute shape for host, attached to the Gateway
// "public", sending everything to port 80 of service; no labels nor
// annotations.
func RouteTo(host, service string) *HTTPRouteShape {
	return publicRoute(host, gatewayv1.HTTPRouteRule{BackendRefs: []gatewayv1.HTTPBackendRef{{
		BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
			Name: gatewayv1.ObjectName(service), Port: ptr.To(gatewayv1.PortNumber(80)),
		}},
	}}})
}

// RedirectTo is an HTTPRoute shape for host, attached to the Gateway
// "public", redirecting every request (302) to statusHost; no labels nor
// annotations.
func RedirectTo(host, statusHost string) *HTTPRouteShape {
	return publicRoute(host, gatewayv1.HTTPRouteRule{Filters: []gatewayv1.HTTPRouteFilter{{
		Type: gatewayv1.HTTPRouteFilterRequestRedirect,
		RequestRedirect: &gatewayv1.HTTPRequestRedirectFilter{
			Hostname:   ptr.To(gatewayv1.PreciseHostname(statusHost)),
			StatusCode: ptr.To(302),
		},
	}}})
}

// Port sets the port of the rules' backendRefs (80 unless set).
func (s *HTTPRouteShape) Port(port int32) *HTTPRouteShape {
	for i := range s.Template.Spec.Rules {
		for j := range s.Template.Spec.Rules[i].BackendRefs {
			s.Template.Spec.Rules[i].BackendRefs[j].Port = ptr.To(gatewayv1.PortNumber(port))
		}
	}
	return s
}

// Obj returns the variant built so far (not a copy); nil for a nil shape.
func (s *HTTPRouteShape) Obj() *v1beta1.HTTPRouteVariant {
	if s == nil {
		return nil
	}
	return &s.HTTPRouteVariant
}

// Annotation adds an annotation to the template's metadata.
func (s *HTTPRouteShape) Annotation(k, v string) *HTTPRouteShape {
	setKey(&s.Template.Metadata.Annotations, k, v)
	return s
}

// Label adds a label to the template's metadata.
func (s *HTTPRouteShape) Label(k, v string) *HTTPRouteShape {
	setKey(&s.Template.Metadata.Labels, k, v)
	return s
}

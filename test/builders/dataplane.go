package builders

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// LoopbackService is a Service of type ExternalName naming 127.0.0.1 with
// one port: a proxy that resolves ExternalName Services (Traefik with
// allowExternalNameServices) sends its requests to a local server listening
// on 127.0.0.1:port. The API server refuses loopback addresses in
// EndpointSlices, so no Service can list 127.0.0.1 as an endpoint; for a
// proxy that refuses ExternalName Services, see LoopbackClusterIP.
func LoopbackService(ns, name string, port int32) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: objectMeta(ns, name),
		Spec: corev1.ServiceSpec{
			Type:         corev1.ServiceTypeExternalName,
			ExternalName: "127.0.0.1",
			Ports:        []corev1.ServicePort{{Name: "http", Port: port}},
		},
	}
}

// LoopbackClusterIP is a Service of type ClusterIP whose ClusterIP is ip,
// an address of the local cluster's loopback Service range, with one port
// (named "http"), marked for Traefik's native load balancing
// (traefik.io/service.nativelb): Traefik's Gateway API provider, which
// refuses ExternalName Services, then sends the requests of a route to
// ip:port, where a local server listens. The API server refuses loopback
// addresses in EndpointSlices, and nothing runs the EndpointSlice
// controller beside the tests' API server.
func LoopbackClusterIP(ns, name, ip string, port int32) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: objectMeta(ns, name),
		Spec: corev1.ServiceSpec{
			Type:      corev1.ServiceTypeClusterIP,
			ClusterIP: ip,
			Ports:     []corev1.ServicePort{{Name: "http", Port: port}},
		},
	}
	svc.Annotations = map[string]string{"traefik.io/service.nativelb": "true"}
	return svc
}

// TraefikGateway is a GatewayClass named after ns and name whose
// controllerName is controller, and a Gateway ns/name of that class
// with one HTTP listener "web" on port that accepts routes from its own
// namespace: with Traefik's Gateway API provider (controller
// traefik.io/gateway-controller, port that of its entry point), the
// HTTPRoutes of ns whose parentRefs name the Gateway are served.
func TraefikGateway(ns, name, controller string, port int32) []client.Object {
	class := &gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
		Spec:       gatewayv1.GatewayClassSpec{ControllerName: gatewayv1.GatewayController(controller)},
	}
	gw := &gatewayv1.Gateway{
		ObjectMeta: objectMeta(ns, name),
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: gatewayv1.ObjectName(class.Name),
			Listeners: []gatewayv1.Listener{{
				Name: "web", Port: gatewayv1.PortNumber(port), Protocol: gatewayv1.HTTPProtocolType,
			}},
		},
	}
	return []client.Object{class, gw}
}

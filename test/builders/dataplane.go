package builders

import (
	corev1 "k8s.io/api/core/v1"
)

// LoopbackService is a Service of type ExternalName naming 127.0.0.1 with
// one port: a proxy that resolves ExternalName Services (Traefik with
// allowExternalNameServices) sends its requests to a local server listening
// on 127.0.0.1:port. The API server refuses loopback addresses in
// EndpointSlices, so a ClusterIP Service cannot point there.
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

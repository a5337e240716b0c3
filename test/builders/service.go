package builders

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// ServiceState is a state ns/name that follows the Service ns/service;
// minReady and the delays are left to the defaults until set.
func ServiceState(ns, name, service string) *StateWrapper {
	return &StateWrapper{v1beta1.DynamicIngressState{
		ObjectMeta: objectMeta(ns, name),
		Spec:       v1beta1.DynamicIngressStateSpec{Service: &v1beta1.ServiceSource{Name: service}},
	}}
}

// ServiceNamespace sets spec.service.namespace.
func (w *StateWrapper) ServiceNamespace(ns string) *StateWrapper {
	w.Spec.Service.Namespace = ns
	return w
}

// MinReady sets spec.service.minReady.
func (w *StateWrapper) MinReady(n int32) *StateWrapper {
	w.Spec.Service.MinReady = ptr.To(n)
	return w
}

// UnavailableAfter sets spec.service.unavailableAfter.
func (w *StateWrapper) UnavailableAfter(d time.Duration) *StateWrapper {
	w.Spec.Service.UnavailableAfter = &metav1.Duration{Duration: d}
	return w
}

// AvailableAfter sets spec.service.availableAfter.
func (w *StateWrapper) AvailableAfter(d time.Duration) *StateWrapper {
	w.Spec.Service.AvailableAfter = &metav1.Duration{Duration: d}
	return w
}

// Service is a ClusterIP Service ns/name without a selector (nothing
// writes its EndpointSlices but the test) on port 80.
func Service(ns, name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: objectMeta(ns, name),
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
}

// SliceWrapper builds a discoveryv1.EndpointSlice of a Service.
type SliceWrapper struct {
	discoveryv1.EndpointSlice
}

// EndpointSlice is an IPv4 EndpointSlice ns/name of the Service ns/service,
// with no endpoints yet. Tests write slices themselves (a local control
// plane has no kubelet and no EndpointSlice controller); their addresses
// must never be sent a request.
func EndpointSlice(ns, name, service string) *SliceWrapper {
	meta := objectMeta(ns, name)
	meta.Labels = map[string]string{discoveryv1.LabelServiceName: service}
	return &SliceWrapper{discoveryv1.EndpointSlice{
		ObjectMeta:  meta,
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](80)}},
	}}
}

// AddressType sets the slice's address type.
func (w *SliceWrapper) AddressType(t discoveryv1.AddressType) *SliceWrapper {
	w.EndpointSlice.AddressType = t
	return w
}

// Ready adds ready endpoints, one per address.
func (w *SliceWrapper) Ready(addresses ...string) *SliceWrapper {
	for _, a := range addresses {
		w.Endpoint(a, ptr.To(true), nil)
	}
	return w
}

// NotReady adds endpoints that are not ready, one per address.
func (w *SliceWrapper) NotReady(addresses ...string) *SliceWrapper {
	for _, a := range addresses {
		w.Endpoint(a, ptr.To(false), nil)
	}
	return w
}

// Endpoint adds one endpoint with these conditions (nil: unset).
func (w *SliceWrapper) Endpoint(address string, ready, terminating *bool) *SliceWrapper {
	w.Endpoints = append(w.Endpoints, discoveryv1.Endpoint{
		Addresses:  []string{address},
		Conditions: discoveryv1.EndpointConditions{Ready: ready, Terminating: terminating},
	})
	return w
}

// Obj returns the EndpointSlice built so far (not a copy).
func (w *SliceWrapper) Obj() *discoveryv1.EndpointSlice { return &w.EndpointSlice }

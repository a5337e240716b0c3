package builders

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// ServedWrapper builds a v1beta1.ServedCheck (spec.served).
type ServedWrapper struct {
	v1beta1.ServedCheck
}

// Served starts a check of url that is served in active mode when it
// answers activeCode and in passive mode when it answers passiveCode.
func Served(url, activeCode, passiveCode string) *ServedWrapper {
	return &ServedWrapper{v1beta1.ServedCheck{URL: url,
		Active: v1beta1.ExpectedResponse{StatusCode: activeCode}, Passive: v1beta1.ExpectedResponse{StatusCode: passiveCode}}}
}

// Obj returns the check built so far (not a copy).
func (w *ServedWrapper) Obj() *v1beta1.ServedCheck { return &w.ServedCheck }

// Period sets how often the URL is requested while not yet served.
func (w *ServedWrapper) Period(d time.Duration) *ServedWrapper {
	w.ServedCheck.Period = &metav1.Duration{Duration: d}
	return w
}

// Timeout sets how long after a write the shape must be served.
func (w *ServedWrapper) Timeout(d time.Duration) *ServedWrapper {
	w.ServedCheck.Timeout = &metav1.Duration{Duration: d}
	return w
}

// Header adds a request header with a literal value.
func (w *ServedWrapper) Header(k, v string) *ServedWrapper {
	w.Headers = append(w.Headers, v1beta1.HTTPHeader{Name: k, Value: v})
	return w
}

// HeaderFromSecret adds a request header whose value is the key of a
// Secret in the switch's namespace.
func (w *ServedWrapper) HeaderFromSecret(name, secret, key string) *ServedWrapper {
	w.Headers = append(w.Headers, v1beta1.HTTPHeader{Name: name,
		ValueFrom: &v1beta1.HeaderValueSource{SecretKeyRef: v1beta1.SecretKeySelector{Name: secret, Key: key}}})
	return w
}

// Served makes the DynamicIngress check that its target's shape is served
// (a copy of check).
func (w *DynamicIngressWrapper) Served(check *ServedWrapper) *DynamicIngressWrapper {
	w.Spec.Served = check.DeepCopy()
	return w
}

// Served makes the DynamicHTTPRoute check that its target's shape is
// served (a copy of check).
func (w *DynamicHTTPRouteWrapper) Served(check *ServedWrapper) *DynamicHTTPRouteWrapper {
	w.Spec.Served = check.DeepCopy()
	return w
}

// Package v1beta1 holds the admission webhooks of both kinds: thin typed
// shells around the pure defaulting and validation functions of this
// package (docs/behaviour.md, "Admission").
package v1beta1

import (
	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// DefaultDynamicIngress sets spec.target.namespace to the object's
// namespace when it is empty.
func DefaultDynamicIngress(di *v1beta1.DynamicIngress) {
	if di.Spec.Target.Namespace == "" {
		di.Spec.Target.Namespace = di.Namespace
	}
}

// DefaultDynamicIngressState fills in a probe's type, method, interval,
// timeout (the shorter of 5s and the interval), failureThreshold and
// successThreshold, and a Service source's minReady (1),
// unavailableAfter (10s) and availableAfter (30s).
func DefaultDynamicIngressState(state *v1beta1.DynamicIngressState) {
	if p := state.Spec.Probe; p != nil {
		p.Default()
	}
	if s := state.Spec.Service; s != nil {
		s.Default()
	}
}

// DefaultDynamicHTTPRoute sets spec.target.namespace to the object's
// namespace when it is empty.
func DefaultDynamicHTTPRoute(dhr *v1beta1.DynamicHTTPRoute) {
	if dhr.Spec.Target.Namespace == "" {
		dhr.Spec.Target.Namespace = dhr.Namespace
	}
}

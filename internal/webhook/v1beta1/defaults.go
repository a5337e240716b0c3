// Package v1beta1 holds the admission webhooks of both kinds: thin typed
// shells around the pure defaulting and validation functions of this
// package (SPEC §4).
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
// timeout (the shorter of 5s and the interval) and failureThreshold.
func DefaultDynamicIngressState(state *v1beta1.DynamicIngressState) {
	p := state.Spec.Probe
	if p == nil {
		return
	}
	if p.Type == "" {
		p.Type = v1beta1.ProbeTypeHTTP
	}
	if p.Method == "" {
		p.Method = "GET"
	}
	if p.Interval == nil {
		p.Interval = &metav1.Duration{Duration: v1beta1.DefaultProbeInterval}
	}
	if p.Timeout == nil {
		p.Timeout = &metav1.Duration{Duration: p.TimeoutOrDefault()}
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = v1beta1.DefaultProbeFailureThreshold
	}
}

package v1beta1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Probe defaults. The schema sets interval and the thresholds; the
// timeout default depends on the interval, which only the webhook (and the
// controller, for objects that bypassed it) can work out.
const (
	DefaultProbeInterval         = 30 * time.Second
	MaxDefaultProbeTimeout       = 5 * time.Second
	DefaultProbeFailureThreshold = 3
	DefaultProbeSuccessThreshold = 1
)

// IntervalOrDefault is spec.probe.interval, or 30s when unset.
func (p *HTTPProbe) IntervalOrDefault() time.Duration {
	if p.Interval != nil && p.Interval.Duration > 0 {
		return p.Interval.Duration
	}
	return DefaultProbeInterval
}

// TimeoutOrDefault is spec.probe.timeout, or the shorter of 5s and the
// interval when unset.
func (p *HTTPProbe) TimeoutOrDefault() time.Duration {
	if p.Timeout != nil {
		return p.Timeout.Duration
	}
	return min(MaxDefaultProbeTimeout, p.IntervalOrDefault())
}

// Default fills in what is unset: type HTTP, method GET, interval 30s,
// timeout the shorter of 5s and the interval, failureThreshold 3,
// successThreshold 1. The defaulting webhook applies it; the controller
// applies it to a copy, for objects that reached the API server without the
// webhook.
func (p *HTTPProbe) Default() {
	if p.Type == "" {
		p.Type = ProbeTypeHTTP
	}
	if p.Method == "" {
		p.Method = "GET"
	}
	if p.Interval == nil {
		p.Interval = &metav1.Duration{Duration: DefaultProbeInterval}
	}
	if p.Timeout == nil {
		p.Timeout = &metav1.Duration{Duration: p.TimeoutOrDefault()}
	}
	if p.FailureThreshold == nil {
		p.FailureThreshold = ptr.To[int32](DefaultProbeFailureThreshold)
	}
	if p.SuccessThreshold == nil {
		p.SuccessThreshold = ptr.To[int32](DefaultProbeSuccessThreshold)
	}
}

// FailureThresholdOrDefault is spec.probe.failureThreshold, or 3 when unset.
func (p *HTTPProbe) FailureThresholdOrDefault() int32 {
	if p.FailureThreshold != nil {
		return *p.FailureThreshold
	}
	return DefaultProbeFailureThreshold
}

// SuccessThresholdOrDefault is spec.probe.successThreshold, or 1 when unset.
func (p *HTTPProbe) SuccessThresholdOrDefault() int32 {
	if p.SuccessThreshold != nil {
		return *p.SuccessThreshold
	}
	return DefaultProbeSuccessThreshold
}

// Service source defaults.
const (
	DefaultServiceMinReady         = 1
	DefaultServiceUnavailableAfter = 10 * time.Second
	DefaultServiceAvailableAfter   = 30 * time.Second
)

// Default fills in what is unset: minReady 1, unavailableAfter 10s,
// availableAfter 30s. The defaulting webhook applies it; the controller
// reads through the OrDefault accessors, for objects that bypassed it.
func (s *ServiceSource) Default() {
	if s.MinReady == nil {
		s.MinReady = ptr.To[int32](DefaultServiceMinReady)
	}
	if s.UnavailableAfter == nil {
		s.UnavailableAfter = &metav1.Duration{Duration: DefaultServiceUnavailableAfter}
	}
	if s.AvailableAfter == nil {
		s.AvailableAfter = &metav1.Duration{Duration: DefaultServiceAvailableAfter}
	}
}

// MinReadyOrDefault is spec.service.minReady, or 1 when unset.
func (s *ServiceSource) MinReadyOrDefault() int {
	if s.MinReady != nil {
		return int(*s.MinReady)
	}
	return DefaultServiceMinReady
}

// UnavailableAfterOrDefault is spec.service.unavailableAfter, or 10s when
// unset.
func (s *ServiceSource) UnavailableAfterOrDefault() time.Duration {
	if s.UnavailableAfter != nil {
		return s.UnavailableAfter.Duration
	}
	return DefaultServiceUnavailableAfter
}

// AvailableAfterOrDefault is spec.service.availableAfter, or 30s when
// unset.
func (s *ServiceSource) AvailableAfterOrDefault() time.Duration {
	if s.AvailableAfter != nil {
		return s.AvailableAfter.Duration
	}
	return DefaultServiceAvailableAfter
}

package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DynamicIngressStateSpec holds exactly one source of a response: a fixed
// one, edited by hand, an HTTP endpoint that the operator probes, a
// schedule of maintenance windows, or a Service's ready endpoints.
// +kubebuilder:validation:XValidation:rule="(has(self.fixedResponse) ? 1 : 0) + (has(self.probe) ? 1 : 0) + (has(self.schedule) ? 1 : 0) + (has(self.service) ? 1 : 0) == 1",message="exactly one of fixedResponse, probe, schedule and service must be set"
type DynamicIngressStateSpec struct {
	// fixedResponse is a response set by hand.
	// +optional
	FixedResponse *FixedResponse `json:"fixedResponse,omitempty"`

	// probe is an HTTP endpoint whose response is the state's response.
	// +optional
	Probe *HTTPProbe `json:"probe,omitempty"`

	// schedule is a set of maintenance windows: the response is statusCode
	// "200" with body {"open":true} inside any window, {"open":false}
	// outside.
	// +optional
	Schedule *Schedule `json:"schedule,omitempty"`

	// service is a Service whose ready endpoints give the response:
	// statusCode "200" with body {"available":true} while at least
	// minReady endpoints are ready, "503" with {"available":false}
	// otherwise, each only after the count has stayed on its side of
	// minReady for availableAfter or unavailableAfter.
	// +optional
	Service *ServiceSource `json:"service,omitempty"`

	// overridePolicy holds the pins (spec.override) of the switches that
	// follow this state to rules, checked at admission when a pin is set
	// or changed: how long a pin may last, and whether it must say why.
	// With anyOf or allOf, the strictest of the followed states' policies
	// applies.
	// +optional
	OverridePolicy *OverridePolicy `json:"overridePolicy,omitempty"`
}

// OverridePolicy is what a pin of a state's follower must carry.
type OverridePolicy struct {
	// maxDuration is the longest a pin may last: a pin must carry
	// overrideUntil at most this far ahead, 1m to 720h.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('720h')",message="must be at least 1m and at most 720h"
	MaxDuration *metav1.Duration `json:"maxDuration,omitempty"`

	// requireReason makes a pin carry overrideReason.
	// +optional
	RequireReason bool `json:"requireReason,omitempty"`

	// approval makes a pin to one of its modes wait for a second person:
	// it is PendingApproval, and the switch follows its state, until a
	// user other than the pin's author, with the verb approve on the
	// switch's resource, approves it.
	// +optional
	Approval *OverrideApproval `json:"approval,omitempty"`
}

// OverrideApproval names the pinned modes that need a second person.
type OverrideApproval struct {
	// modes that need approval: Active and/or Passive (Passive forces the
	// normal site live against the state).
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	Modes []Mode `json:"modes"`
}

// ServiceSource is a Service whose ready endpoints a state counts, and how
// long a change of the count must hold before the response follows it.
type ServiceSource struct {
	// name of the Service.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// namespace of the Service: required on a ClusterDynamicIngressState;
	// on a DynamicIngressState it may only be the state's own namespace
	// (the default).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// minReady is how many ready endpoints the Service needs to be
	// available, 1 to 100000. Defaults to 1.
	// +optional
	// +default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	MinReady *int32 `json:"minReady,omitempty"`

	// unavailableAfter is how long the count must stay below minReady
	// before the response turns to 503, 0s to 1h. Defaults to 10s.
	// +optional
	// +default="10s"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('1h')",message="must be at least 0s and at most 1h"
	UnavailableAfter *metav1.Duration `json:"unavailableAfter,omitempty"`

	// availableAfter is how long the count must stay at or above minReady
	// before the response turns to 200 again, 0s to 1h. Defaults to 30s.
	// +optional
	// +default="30s"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('1h')",message="must be at least 0s and at most 1h"
	AvailableAfter *metav1.Duration `json:"availableAfter,omitempty"`
}

// Schedule is a set of maintenance windows.
type Schedule struct {
	// timeZone is the IANA time zone in which cron windows are read, such
	// as Asia/Tokyo. Defaults to UTC. One-off windows carry their own
	// offset.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone,omitempty"`

	// windows are the maintenance windows, 1 to 32; the state is open
	// inside any of them. Overlapping or touching windows merge.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Windows []ScheduleWindow `json:"windows"`
}

// ScheduleWindow is a recurring window (cron and duration) or a one-off
// window (start and end).
// +kubebuilder:validation:XValidation:rule="has(self.cron) ? (has(self.duration) && !has(self.start) && !has(self.end)) : (has(self.start) && has(self.end) && !has(self.duration))",message="a window is either cron with duration, or start with end"
type ScheduleWindow struct {
	// cron names the start of each recurring window: five fields (minute,
	// hour, day of month, month, day of week), read in timeZone, e.g.
	// "0 2 * * 0" for Sundays at 02:00.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Cron string `json:"cron,omitempty"`

	// duration of each recurring window, from 1m to 168h.
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`

	// start of a one-off window, RFC 3339 with its offset, e.g.
	// "2026-12-24T00:00:00+09:00".
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Format=date-time
	Start string `json:"start,omitempty"`

	// end of a one-off window, RFC 3339, after start.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Format=date-time
	End string `json:"end,omitempty"`
}

// FixedResponse is a response that does not come from a probe.
type FixedResponse struct {
	// status is the HTTP status code of the response, three digits from
	// 100 to 599.
	// +required
	// +kubebuilder:validation:MaxLength=3
	// +kubebuilder:validation:XValidation:rule="self.matches('^[1-5][0-9][0-9]$')",message="must be an HTTP status code: three digits from 100 to 599"
	Status string `json:"status"`

	// body of the response, at most 64 KiB (65536 bytes): it is copied
	// whole into the state's status, which shares etcd's object size limit
	// with everything else in the object.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	Body string `json:"body,omitempty"`
}

// MaxBodyBytes is the longest body a state holds, in bytes: the MaxLength
// of spec.fixedResponse.body and of status.body, and the largest
// --probe-max-body-bytes the manager accepts. A status keeps its body
// whole, and etcd limits the size of the whole object.
const MaxBodyBytes = 65536

// ProbeType is the kind of probe. HTTP is the only one for now.
// +kubebuilder:validation:Enum=HTTP
type ProbeType string

// ProbeTypeHTTP probes an HTTP or HTTPS URL.
const ProbeTypeHTTP ProbeType = "HTTP"

// HTTPProbe describes an HTTP request the operator sends on an interval.
// The url rule is here rather than on the field: a rule on a string field
// makes the API server repeat the string in its rejection, and a URL may
// hold a token.
// +kubebuilder:validation:XValidation:rule="!has(self.timeout) || !has(self.interval) || duration(self.timeout) <= duration(self.interval)",message="must not be longer than the interval",fieldPath=".timeout"
// +kubebuilder:validation:XValidation:rule="isURL(self.url) && url(self.url).getScheme() in ['http', 'https'] && size(url(self.url).getHostname()) > 0",message="must be an absolute http or https URL with a host",fieldPath=".url"
type HTTPProbe struct {
	// type of the probe. HTTP is the only type for now.
	// +optional
	// +default="HTTP"
	Type ProbeType `json:"type,omitempty"`

	// method of the request: GET, HEAD or POST.
	// +optional
	// +default="GET"
	// +kubebuilder:validation:Enum=GET;HEAD;POST
	Method string `json:"method,omitempty"`

	// url is the absolute http or https URL to probe. Redirects are not
	// followed; addresses in the manager's --probe-deny-cidrs are refused.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url"`

	// interval between two probes, at least 1s and at most 24h.
	// +optional
	// +default="30s"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="must be at least 1s and at most 24h"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// timeout of one probe, more than 0 and at most interval. Defaults to
	// the shorter of 5s and interval.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be more than 0"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// failureThreshold is the number of consecutive failed probes after
	// which the response is cleared, at least 1. An explicit 0 is rejected,
	// not defaulted.
	// +optional
	// +default=3
	// +kubebuilder:validation:Minimum=1
	FailureThreshold *int32 `json:"failureThreshold,omitempty"`

	// successThreshold is the number of consecutive probes that must return
	// a response other than the state's current one before it becomes the
	// state's response, 1 to 10: a failure or another response starts the
	// count over. Failures follow failureThreshold. Defaults to 1.
	// +optional
	// +default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	SuccessThreshold *int32 `json:"successThreshold,omitempty"`

	// bodyExpression is a CEL expression over the response (response.code,
	// response.body, response.json, as in a DynamicIngress's
	// expected.expression) whose result the probe records as the state's
	// body instead of the whole body: a string as it is, any other value as
	// its JSON text. Answers that reduce to the same result are the same
	// response, so a status API whose answers carry a timestamp (a
	// Prometheus query's evaluation time) is written once, not at every
	// probe. An evaluation error is a probe failure with reason expression.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	BodyExpression string `json:"bodyExpression,omitempty"`

	// headers sent with every probe.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Headers []HTTPHeader `json:"headers,omitempty"`
}

// HTTPHeader is one header of a probe request: a literal value, or a value
// read from a Secret when the probe is sent.
// +kubebuilder:validation:XValidation:rule="has(self.value) != has(self.valueFrom)",message="exactly one of value and valueFrom must be set"
type HTTPHeader struct {
	// name of the header.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name"`

	// value of the header, written in the state. Anyone who can read the
	// state reads it: put a token in a Secret and use valueFrom.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Value string `json:"value,omitempty"`

	// valueFrom reads the value from a Secret in the state's namespace
	// when the probe is sent; a rotated Secret is used within one
	// interval or 30s, whichever is longer.
	// +optional
	ValueFrom *HeaderValueSource `json:"valueFrom,omitempty"`
}

// HeaderValueSource says where a header's value comes from.
type HeaderValueSource struct {
	// secretKeyRef names a key of a Secret in the state's namespace.
	// +required
	SecretKeyRef SecretKeySelector `json:"secretKeyRef"`
}

// SecretKeySelector names one key of a Secret in the state's namespace.
type SecretKeySelector struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// key of the value in the Secret's data.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// StateMode says where a state's response comes from.
// +kubebuilder:validation:Enum=Fixed;Probe;Schedule;Service
type StateMode string

const (
	// StateModeFixed means the response is spec.fixedResponse.
	StateModeFixed StateMode = "Fixed"
	// StateModeProbe means the response comes from spec.probe.
	StateModeProbe StateMode = "Probe"
	// StateModeSchedule means the response comes from spec.schedule.
	StateModeSchedule StateMode = "Schedule"
	// StateModeService means the response comes from spec.service.
	StateModeService StateMode = "Service"
)

// DynamicIngressStateStatus is the current response of a state.
type DynamicIngressStateStatus struct {
	// conditions holds Ready, True when the state has a current response.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the metadata.generation last acted upon.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// mode is Fixed, Probe, Schedule or Service, after the field set in
	// spec.
	// +optional
	Mode StateMode `json:"mode,omitempty"`

	// statusCode is the fixed status or the last probed HTTP status; empty
	// when there is no response.
	// +optional
	// +kubebuilder:validation:MaxLength=3
	StatusCode string `json:"statusCode,omitempty"`

	// body is the fixed body or the last probed body, at most the manager's
	// --probe-max-body-bytes, which is at most 64 KiB (65536 bytes).
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	Body string `json:"body,omitempty"`

	// bodyTruncated is true when the probed body was longer than the limit.
	// +optional
	BodyTruncated bool `json:"bodyTruncated,omitempty"`

	// lastUpdateTime is when statusCode or body last changed, to the
	// microsecond: the operator measures switch latency from it.
	// +optional
	LastUpdateTime *metav1.MicroTime `json:"lastUpdateTime,omitempty"`

	// nextTransitionTime is, for a schedule, when the state next opens or
	// closes; absent when no window lies ahead, or when none lies within
	// the operator's search horizon (the Ready message then says how far
	// it looked).
	// +optional
	NextTransitionTime *metav1.Time `json:"nextTransitionTime,omitempty"`

	// history is the last 20 changes of the response, newest first,
	// written with the change itself: what changed, when, and by what
	// cause, kept after the events expired.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	History []HistoryEntry `json:"history,omitempty"`
}

// MaxHistory is how many changes status.history keeps.
const MaxHistory = 20

// HistoryCause is what made a state's response change.
// +kubebuilder:validation:Enum=Fixed;Probe;Schedule;Service;NoResponse
type HistoryCause string

// The causes of a response change.
const (
	// HistoryCauseFixed: spec.fixedResponse was edited.
	HistoryCauseFixed HistoryCause = "Fixed"
	// HistoryCauseProbe: a probe got another answer.
	HistoryCauseProbe HistoryCause = "Probe"
	// HistoryCauseSchedule: a window opened or closed.
	HistoryCauseSchedule HistoryCause = "Schedule"
	// HistoryCauseService: the Service's ready endpoints crossed minReady
	// and stayed across.
	HistoryCauseService HistoryCause = "Service"
	// HistoryCauseNoResponse: the state lost its response.
	HistoryCauseNoResponse HistoryCause = "NoResponse"
)

// HistoryEntry is one change of a state's response.
type HistoryEntry struct {
	// sequence counts the state's response changes since it was created;
	// it never repeats.
	// +required
	// +kubebuilder:validation:Minimum=1
	Sequence int64 `json:"sequence"`

	// time of the change, to the microsecond.
	// +required
	Time metav1.MicroTime `json:"time"`

	// statusCode after the change; empty when the state lost its
	// response.
	// +optional
	// +kubebuilder:validation:MaxLength=3
	StatusCode string `json:"statusCode,omitempty"`

	// bodyDigest is "sha256:" and the hex digest of the body after the
	// change.
	// +optional
	// +kubebuilder:validation:MaxLength=71
	BodyDigest string `json:"bodyDigest,omitempty"`

	// cause of the change: Fixed, Probe, Schedule, Service or NoResponse.
	// +required
	Cause HistoryCause `json:"cause"`

	// flip is set once every follower that the manager serves shows the
	// change in its status.
	// +optional
	Flip *FlipSummary `json:"flip,omitempty"`
}

// FlipSummary is how a change of a state reached its followers.
type FlipSummary struct {
	// followers is how many switches followed the state at the change.
	// +required
	// +kubebuilder:validation:Minimum=0
	Followers int32 `json:"followers"`

	// namespaces is how many namespaces those switches are in.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Namespaces int32 `json:"namespaces,omitempty"`

	// completedAfter is how long after the change the last follower's
	// status showed it, e.g. "6.31s".
	// +required
	// +kubebuilder:validation:MaxLength=32
	CompletedAfter string `json:"completedAfter"`
}

// DynamicIngressState is a shared response, fixed or probed over HTTP,
// that DynamicIngresses compare with what they expect.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=dis,categories=dynamic
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.status.mode`
// +kubebuilder:printcolumn:name="Code",type=string,JSONPath=`.status.statusCode`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Body",type=string,JSONPath=`.status.body`,priority=1
type DynamicIngressState struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the source of the response.
	// +required
	Spec DynamicIngressStateSpec `json:"spec"`

	// status holds the current response.
	// +optional
	Status DynamicIngressStateStatus `json:"status,omitempty"`
}

// DynamicIngressStateList is a list of DynamicIngressState.
// +kubebuilder:object:root=true
type DynamicIngressStateList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items is the list of DynamicIngressState.
	Items []DynamicIngressState `json:"items"`
}

func init() {
	register(&DynamicIngressState{}, &DynamicIngressStateList{})
}

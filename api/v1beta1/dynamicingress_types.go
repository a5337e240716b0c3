package v1beta1

import (
	"fmt"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DynamicIngressSpec declares one target Ingress, the two shapes it takes,
// and the state that selects between them.
// +kubebuilder:validation:XValidation:rule="has(self.passiveIngress) || has(self.activeIngress)",message="at least one of passiveIngress and activeIngress must be set"
// +kubebuilder:validation:XValidation:rule="has(self.anyOf) || has(self.allOf) || has(self.state) != has(self.stateRef)",message="exactly one of state and stateRef must be set"
// +kubebuilder:validation:XValidation:rule="!(has(self.anyOf) && has(self.allOf))",message="at most one of anyOf and allOf may be set"
// +kubebuilder:validation:XValidation:rule="!(has(self.anyOf) || has(self.allOf)) || !(has(self.state) || has(self.stateRef) || has(self.expected))",message="anyOf and allOf replace state, stateRef and expected: set a list or a single state, not both"
// +kubebuilder:validation:XValidation:rule="has(self.anyOf) || has(self.allOf) || has(self.expected)",message="expected is required with state or stateRef"
// +kubebuilder:validation:XValidation:rule="!has(self.overrideUntil) || has(self.override)",message="overrideUntil requires override",fieldPath=".overrideUntil"
type DynamicIngressSpec struct {
	// target names the Ingress that this DynamicIngress creates and owns.
	// It cannot be changed after creation.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	Target TargetReference `json:"target"`

	// passiveIngress is the shape of the target while the state does not
	// match spec.expected. Null or absent means no Ingress while passive.
	// +optional
	PassiveIngress *IngressVariant `json:"passiveIngress,omitempty"`

	// activeIngress is the shape of the target while the state matches
	// spec.expected. Null or absent means no Ingress while active.
	// +optional
	ActiveIngress *IngressVariant `json:"activeIngress,omitempty"`

	// state is the name of a DynamicIngressState in the same namespace.
	// Exactly one of state and stateRef is set.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	State string `json:"state,omitempty"`

	// stateRef names the state to follow with its kind: a
	// DynamicIngressState in the same namespace, or a cluster-scoped
	// ClusterDynamicIngressState whose spec.followers admits this namespace.
	// Exactly one of state and stateRef is set.
	// +optional
	StateRef *StateReference `json:"stateRef,omitempty"`

	// expected is the response that makes this DynamicIngress active. Every
	// field that is set must match the state's response. Required with
	// state or stateRef.
	// +optional
	Expected ExpectedResponse `json:"expected,omitzero"`

	// anyOf lists several states: the DynamicIngress is active when any
	// entry's state matches its expected response. Instead of state,
	// stateRef and expected.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	AnyOf []StateEntry `json:"anyOf,omitempty"`

	// allOf lists several states: the DynamicIngress is active when every
	// entry's state matches its expected response. Instead of state,
	// stateRef and expected.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	AllOf []StateEntry `json:"allOf,omitempty"`

	// failurePolicy is the mode the target takes while the state gives no
	// answer (it has no response, or does not exist): Passive (the default),
	// Active, or Retain (stay in the current mode; a new DynamicIngress
	// starts passive).
	// +optional
	FailurePolicy FailurePolicy `json:"failurePolicy,omitempty"`

	// override pins the mode whatever the state says: Active or Passive.
	// Absent, the DynamicIngress follows its state. A break-glass for one
	// DynamicIngress; removing it returns to the state at once.
	// +optional
	Override Mode `json:"override,omitempty"`

	// overrideUntil ends the pin of override at this time (RFC 3339): the
	// DynamicIngress then follows its state again, with no edit (the operator
	// never writes spec); status.override.phase turns Expired. Requires
	// override; when set or changed, it must be in the future.
	// +optional
	OverrideUntil *metav1.Time `json:"overrideUntil,omitempty"`

	// overrideReason says why the pin was set (an incident's number, a
	// sentence): recorded in status.override and in notifications. 1 to
	// 256 characters.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	OverrideReason string `json:"overrideReason,omitempty"`

	// served checks the flip where users see it: after each write of the
	// target, url is requested every period until it answers as the
	// current mode's shape does (the Served condition).
	// +optional
	Served *ServedCheck `json:"served,omitempty"`
}

// ServedCheck is how a switch checks that the data plane serves its
// target's current shape (docs/behaviour.md, "Served").
type ServedCheck struct {
	// url is requested through the data plane: an absolute http or https
	// URL.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url,omitempty"`

	// headers sent with each request, as a probe's (a Host header names
	// the virtual host).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Headers []HTTPHeader `json:"headers,omitempty"`

	// active is what url answers once the active shape is served.
	// +required
	Active ExpectedResponse `json:"active,omitzero"`

	// passive is what url answers once the passive shape is served.
	// +required
	Passive ExpectedResponse `json:"passive,omitzero"`

	// period is how often url is requested while the shape is not served
	// yet: 250ms to 10s, 1s by default.
	// +optional
	Period *metav1.Duration `json:"period,omitempty"`

	// timeout is how long after the target's write the shape must be
	// served: 5s to 30m, 2m by default; after it, Served is False.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// ServedStatus is the mode the data plane was last seen serving.
type ServedStatus struct {
	// mode last seen served.
	// +required
	Mode Mode `json:"mode"`

	// since is when it was first seen served.
	// +required
	Since metav1.Time `json:"since"`

	// after is how long after the target was written it was seen served,
	// e.g. "2.31s".
	// +optional
	// +kubebuilder:validation:MaxLength=32
	After string `json:"after,omitempty"`
}

// FailurePolicy is the mode a DynamicIngress takes while its state gives no
// answer.
// +kubebuilder:validation:Enum=Passive;Active;Retain
type FailurePolicy string

const (
	// FailurePolicyPassive selects the passive template (the default).
	FailurePolicyPassive FailurePolicy = "Passive"
	// FailurePolicyActive selects the active template.
	FailurePolicyActive FailurePolicy = "Active"
	// FailurePolicyRetain keeps the current mode.
	FailurePolicyRetain FailurePolicy = "Retain"
)

// The override audit annotations of a switch (docs/behaviour.md,
// "Override audit"): who last set, changed or removed spec.override, as
// the admission request names the user, and when (RFC 3339, UTC). Only the
// defaulting webhook writes them.
const (
	OverrideByAnnotation = "ingress.dynamicingress.io/override-by"
	OverrideAtAnnotation = "ingress.dynamicingress.io/override-at"
)

// The override approval annotations of a switch (docs/behaviour.md,
// "Approval"): a user asks to approve the pending pin by setting
// override-approved-by (to anything); the defaulting webhook writes the
// user's name into it as the admission request names them, and the time
// into override-approved-at (OverrideAtFormat). A change of the pin
// removes both.
const (
	OverrideApprovedByAnnotation = "ingress.dynamicingress.io/override-approved-by"
	OverrideApprovedAtAnnotation = "ingress.dynamicingress.io/override-approved-at"
)

// OverrideAtFormat is the format of the override-at annotation: RFC 3339
// in UTC to the microsecond, so that two changes within a second read
// apart (a notifier sends each).
const OverrideAtFormat = "2006-01-02T15:04:05.000000Z07:00"

// Mode is one of the two shapes of a target.
// +kubebuilder:validation:Enum=Active;Passive
type Mode string

const (
	// ModeActive is the shape of spec.activeIngress.
	ModeActive Mode = "Active"
	// ModePassive is the shape of spec.passiveIngress.
	ModePassive Mode = "Passive"
)

// BodyMatch is how spec.expected.body is compared with the state's body.
// +kubebuilder:validation:Enum=Exact;Contains
type BodyMatch string

const (
	// BodyMatchExact means the same JSON value when both bodies are JSON, else
	// the same text once surrounding whitespace is trimmed.
	BodyMatchExact BodyMatch = "Exact"
	// BodyMatchContains means the observed JSON contains the expected JSON
	// (every expected key present, at any depth) when both are JSON, else
	// the observed text contains the expected text.
	BodyMatchContains BodyMatch = "Contains"
)

// TargetReference names the target Ingress.
type TargetReference struct {
	// name of the target Ingress.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// namespace of the target Ingress. Defaulted to the namespace of the
	// DynamicIngress, and must equal it.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// IngressVariant is one shape of the target Ingress.
type IngressVariant struct {
	// template is the Ingress to make: its labels, annotations and spec.
	// +required
	Template IngressTemplate `json:"template"`
}

// IngressTemplate describes an Ingress without its name and namespace,
// which come from spec.target.
type IngressTemplate struct {
	// metadata holds the labels and annotations of the Ingress.
	// +optional
	Metadata TemplateMetadata `json:"metadata,omitempty"`

	// spec is the networking.k8s.io/v1 IngressSpec of the Ingress.
	// +optional
	Spec networkingv1.IngressSpec `json:"spec,omitempty"`
}

// TemplateMetadata is the part of an object's metadata a template may set.
type TemplateMetadata struct {
	// labels of the Ingress. The operator adds
	// app.kubernetes.io/managed-by: dynamic-ingress-operator.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// annotations of the Ingress.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ExpectedResponse is the response a DynamicIngress waits for.
// +kubebuilder:validation:XValidation:rule="has(self.statusCode) || has(self.body) || has(self.expression)",message="at least one of statusCode, body and expression must be set"
type ExpectedResponse struct {
	// statusCode is the HTTP status code to match, three digits from 100 to
	// 599, compared as a string.
	// +optional
	// +kubebuilder:validation:MaxLength=3
	// +kubebuilder:validation:XValidation:rule="self.matches('^[1-5][0-9][0-9]$')",message="must be an HTTP status code: three digits from 100 to 599"
	StatusCode string `json:"statusCode,omitempty"`

	// body is the response body to match. When both this and the state's
	// body are JSON, they match when they are the same JSON value; otherwise
	// they match when equal after trimming surrounding whitespace.
	// +optional
	// +kubebuilder:validation:MaxLength=1048576
	Body *string `json:"body,omitempty"`

	// bodyMatch is how body is compared: Exact (the default) or Contains
	// (the observed JSON holds every expected key with a matching value,
	// arrays element by element; for text, a substring).
	// +optional
	BodyMatch BodyMatch `json:"bodyMatch,omitempty"`

	// expression is a CEL expression that must evaluate to true, over
	// response.code (int), response.body (string) and response.json (the
	// body parsed as JSON, null when it is not JSON); for example
	// `response.json.killswitch.enabled == true`. An evaluation error (a
	// missing key without has()) does not match.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Expression string `json:"expression,omitempty"`
}

// StateEntry is one of the states a switch with anyOf or allOf follows,
// with the response it expects of it.
// +kubebuilder:validation:XValidation:rule="has(self.state) != has(self.stateRef)",message="exactly one of state and stateRef must be set"
type StateEntry struct {
	// name names the entry in status.states, conditions and events: a DNS
	// label, unique in the list.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// state is the name of a DynamicIngressState in the same namespace.
	// Exactly one of state and stateRef is set.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	State string `json:"state,omitempty"`

	// stateRef names the state with its kind, as spec.stateRef does.
	// Exactly one of state and stateRef is set.
	// +optional
	StateRef *StateReference `json:"stateRef,omitempty"`

	// expected is the response of this entry's state that matches.
	// +required
	Expected ExpectedResponse `json:"expected"`
}

// EntryStatus is what one entry of anyOf or allOf decided.
type EntryStatus struct {
	// name is the entry's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// matched is True when the entry's state matches its expected
	// response, False when it answers otherwise, and Unknown when it gives
	// no answer (NoResponse, StateNotFound, StateNotAdmitted).
	// +required
	// +kubebuilder:validation:Enum=True;False;Unknown
	Matched metav1.ConditionStatus `json:"matched"`

	// reason is why: Matched, NotMatched, NoResponse, StateNotFound,
	// StateNotAdmitted or ClusterStatesNotWatched.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason"`
}

// SwitchStatus is the observed state of a DynamicIngress or a
// DynamicHTTPRoute.
type SwitchStatus struct {
	// conditions are Active (the state matches spec.expected) and Ready (the
	// target is exactly what the selected template says).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the metadata.generation last acted upon.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// state is what the STATE column shows: spec.state, or anyOf(N) /
	// allOf(N) for a list of N states (empty for spec.stateRef, which the
	// STATEREF column shows).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	State string `json:"state,omitempty"`

	// served is, with spec.served, the mode the data plane was last seen
	// serving.
	// +optional
	Served *ServedStatus `json:"served,omitempty"`

	// states are, with anyOf or allOf, what each entry decided, in the
	// list's order.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	States []EntryStatus `json:"states,omitempty"`

	// override is, while spec.override is set, the pin: its mode, who set
	// it and when, until when, why, and whether it is in effect.
	// +optional
	Override *OverrideStatus `json:"override,omitempty"`
}

// OverridePhase is where a pin stands.
// +kubebuilder:validation:Enum=PendingApproval;InEffect;Expired
type OverridePhase string

// The phases of a pin.
const (
	// OverridePhasePendingApproval: the pin waits for a second person's
	// approval; the switch follows its state meanwhile.
	OverridePhasePendingApproval OverridePhase = "PendingApproval"
	// OverridePhaseInEffect: the pin holds the mode.
	OverridePhaseInEffect OverridePhase = "InEffect"
	// OverridePhaseExpired: spec.overrideUntil has passed; the switch
	// follows its state again.
	OverridePhaseExpired OverridePhase = "Expired"
)

// OverrideStatus is a switch's pin as the operator acts on it.
type OverrideStatus struct {
	// mode pinned: Active or Passive.
	// +required
	Mode Mode `json:"mode"`

	// by is the user who last set or changed the pin, from the
	// override-by annotation.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	By string `json:"by,omitempty"`

	// at is when the pin was last set or changed, from the override-at
	// annotation.
	// +optional
	At *metav1.Time `json:"at,omitempty"`

	// until is spec.overrideUntil.
	// +optional
	Until *metav1.Time `json:"until,omitempty"`

	// reason is spec.overrideReason.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Reason string `json:"reason,omitempty"`

	// approvedBy is the user who approved the pin, when its mode needs
	// approval.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	ApprovedBy string `json:"approvedBy,omitempty"`

	// phase is PendingApproval, InEffect or Expired. A phase, against the
	// API conventions' preference for conditions, because the pin's audit
	// is a record of where it stands, not a condition of the switch: the
	// Active condition's reason says whether the pin decides.
	// +required
	Phase OverridePhase `json:"phase"` //nolint:kubeapilinter // the pin's documented phase (docs/behaviour.md, "Pins that end")

	// summary is what the OVERRIDE column shows: the mode, and the phase
	// when the pin is not in effect, e.g. "Active (Expired)".
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Summary string `json:"summary,omitempty"`
}

// DynamicIngress makes one target Ingress take its active or passive shape,
// depending on whether a shared DynamicIngressState matches spec.expected.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=di,categories=dynamic
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.target.name`
// +kubebuilder:selectablefield:JSONPath=`.spec.state`
// +kubebuilder:selectablefield:JSONPath=`.spec.stateRef.name`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="StateRef",type=string,JSONPath=`.spec.stateRef.name`
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.status.conditions[?(@.type=="Active")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Active")].reason`,priority=1
// +kubebuilder:printcolumn:name="Override",type=string,JSONPath=`.status.override.summary`,priority=1
// +kubebuilder:printcolumn:name="Served",type=string,JSONPath=`.status.conditions[?(@.type=="Served")].status`,priority=1
type DynamicIngress struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec declares the target, its two shapes and the state that selects one.
	// +required
	Spec DynamicIngressSpec `json:"spec"`

	// status reports whether the state matches and the target is in sync.
	// +optional
	Status SwitchStatus `json:"status,omitempty"`
}

// DynamicIngressList is a list of DynamicIngress.
// +kubebuilder:object:root=true
type DynamicIngressList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items is the list of DynamicIngress.
	Items []DynamicIngress `json:"items"`
}

func init() {
	register(&DynamicIngress{}, &DynamicIngressList{})
}

// SwitchSpec is what every kind of switch (DynamicIngress,
// DynamicHTTPRoute) has in its spec besides its templates.
// It is a view for the controllers, never serialised.
type SwitchSpec struct {
	Target TargetReference `json:"-"`
	// State is the state the switch follows, from spec.state or
	// spec.stateRef, its kind always set.
	State StateReference `json:"-"`
	// StateName and StateRef are spec.state and spec.stateRef as they are
	// written, for validation.
	StateName     string           `json:"-"`
	StateRef      *StateReference  `json:"-"`
	Expected      ExpectedResponse `json:"-"`
	FailurePolicy FailurePolicy    `json:"-"`
	// Override is spec.override, the pinned mode ("" when not pinned).
	Override Mode `json:"-"`
	// OverrideUntil and OverrideReason are spec.overrideUntil and
	// spec.overrideReason.
	OverrideUntil  *metav1.Time `json:"-"`
	OverrideReason string       `json:"-"`
	// AnyOf and AllOf are spec.anyOf and spec.allOf; with either, State,
	// StateName, StateRef and Expected are empty.
	AnyOf []StateEntry `json:"-"`
	AllOf []StateEntry `json:"-"`
	// Served is spec.served.
	Served *ServedCheck `json:"-"`
}

// Pin is a switch's spec.override with its end and reason.
type Pin struct {
	Mode   Mode         `json:"-"`
	Until  *metav1.Time `json:"-"`
	Reason string       `json:"-"`
}

// Combination is how a switch's states decide its mode.
type Combination string

const (
	// CombinationSingle is one state: spec.state or spec.stateRef.
	CombinationSingle Combination = ""
	// CombinationAnyOf is spec.anyOf: active when any entry matches.
	CombinationAnyOf Combination = "anyOf"
	// CombinationAllOf is spec.allOf: active when every entry matches.
	CombinationAllOf Combination = "allOf"
)

// FollowedEntry is one state a switch follows and the response it
// expects of it, its kind always set. Name is empty for a single state.
type FollowedEntry struct {
	Name     string           `json:"-"`
	State    StateReference   `json:"-"`
	Expected ExpectedResponse `json:"-"`
}

// Combination says whether the switch follows one state or a list.
func (s SwitchSpec) Combination() Combination {
	switch {
	case len(s.AnyOf) > 0:
		return CombinationAnyOf
	case len(s.AllOf) > 0:
		return CombinationAllOf
	}
	return CombinationSingle
}

// Entries are the states the switch follows with what it expects of each:
// the list's entries in order, or the single state as one unnamed entry.
func (s SwitchSpec) Entries() []FollowedEntry {
	list := s.AnyOf
	if len(list) == 0 {
		list = s.AllOf
	}
	if len(list) == 0 {
		return []FollowedEntry{{State: s.State, Expected: s.Expected}}
	}
	out := make([]FollowedEntry, len(list))
	for i, e := range list {
		out[i] = FollowedEntry{Name: e.Name, State: followedState(e.State, e.StateRef), Expected: e.Expected}
	}
	return out
}

// FollowsCluster says whether any state the switch follows is a
// ClusterDynamicIngressState.
func (s SwitchSpec) FollowsCluster() bool {
	for _, e := range s.Entries() {
		if e.State.IsCluster() {
			return true
		}
	}
	return false
}

// Summary is what the STATE column shows (status.state): spec.state, or
// anyOf(N) / allOf(N); empty for spec.stateRef.
func (s SwitchSpec) Summary() string {
	if c := s.Combination(); c != CombinationSingle {
		return fmt.Sprintf("%s(%d)", c, len(s.AnyOf)+len(s.AllOf))
	}
	return s.StateName
}

// switchSpec is the view of a switch's spec fields.
func switchSpec(target TargetReference, state string, ref *StateReference, expected ExpectedResponse, anyOf, allOf []StateEntry, policy FailurePolicy, pin Pin, served *ServedCheck) SwitchSpec {
	spec := SwitchSpec{Target: target, FailurePolicy: policy, Override: pin.Mode, OverrideUntil: pin.Until, OverrideReason: pin.Reason,
		AnyOf: anyOf, AllOf: allOf, Served: served}
	if len(anyOf) == 0 && len(allOf) == 0 {
		spec.State, spec.StateName, spec.StateRef, spec.Expected = followedState(state, ref), state, ref, expected
	}
	return spec
}

// SwitchSpec returns the fields every kind of switch shares.
func (d *DynamicIngress) SwitchSpec() SwitchSpec {
	return switchSpec(d.Spec.Target, d.Spec.State, d.Spec.StateRef, d.Spec.Expected, d.Spec.AnyOf, d.Spec.AllOf, d.Spec.FailurePolicy, Pin{Mode: d.Spec.Override, Until: d.Spec.OverrideUntil, Reason: d.Spec.OverrideReason}, d.Spec.Served)
}

// SwitchStatus returns the status, to read and change.
func (d *DynamicIngress) SwitchStatus() *SwitchStatus { return &d.Status }

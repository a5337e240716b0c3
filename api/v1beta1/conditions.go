package v1beta1

// Condition types. Both kinds report Ready; DynamicIngress also reports Active.
const (
	// ConditionActive is True on a DynamicIngress when its state's response
	// matches spec.expected, so the active template is selected.
	ConditionActive = "Active"
	// ConditionReady is True on a DynamicIngress when its target Ingress is
	// exactly what the selected template says, and on a DynamicIngressState
	// when it has a current response.
	ConditionReady = "Ready"
	// ConditionServed is True on a switch with spec.served when the data
	// plane serves its target's current shape.
	ConditionServed = "Served"
)

// Reasons of the Served condition.
const (
	// ReasonServed: spec.served.url answers as the current mode's shape.
	ReasonServed = "Served"
	// ReasonNotServed: it did not within spec.served.timeout.
	ReasonNotServed = "NotServed"
	// ReasonChecking: the target was written and url is being requested.
	ReasonChecking = "Checking"
)

// Reasons of the DynamicIngressNotifier Ready condition.
const (
	// ReasonDelivered: the last notification was delivered.
	ReasonDelivered = "Delivered"
	// ReasonIdle: nothing was sent yet, and nothing is waiting.
	ReasonIdle = "Idle"
	// ReasonDeliveryFailing: the sink refused or did not answer the last
	// notification; it is retried unless the sink answered a 4xx other
	// than 429.
	ReasonDeliveryFailing = "DeliveryFailing"
	// ReasonSecretNotFound: a sink header's Secret or key is missing.
	ReasonSecretNotFound = "SecretNotFound"
)

// Reasons of the DynamicIngress Active condition.
const (
	// ReasonMatched: the state's response matches spec.expected.
	ReasonMatched = "Matched"
	// ReasonNotMatched: the state has a response and it does not match.
	ReasonNotMatched = "NotMatched"
	// ReasonNoResponse: the state has no response (empty statusCode).
	ReasonNoResponse = "NoResponse"
	// ReasonStateNotFound: the DynamicIngressState named in spec.state does
	// not exist. Used by both conditions of a DynamicIngress.
	ReasonStateNotFound = "StateNotFound"
	// ReasonStateNotAdmitted: the ClusterDynamicIngressState named in
	// spec.stateRef does not admit the switch's namespace (its
	// spec.followers). Used by both conditions.
	ReasonStateNotAdmitted = "StateNotAdmitted"
	// ReasonClusterStatesNotWatched: the switch follows a
	// ClusterDynamicIngressState, and the manager's install does not let it
	// read them (namespaced mode without the opt-in). Used by both
	// conditions.
	ReasonClusterStatesNotWatched = "ClusterStatesNotWatched"
	// ReasonOverridden: spec.override pins the mode, whatever the state
	// says.
	ReasonOverridden = "Overridden"
)

// Reasons of the DynamicIngress Ready condition.
const (
	// ReasonSynced: the target Ingress is what the selected template says.
	ReasonSynced = "Synced"
	// ReasonTargetConflict: an Ingress that this DynamicIngress does not
	// control exists at the target name; it is left untouched.
	ReasonTargetConflict = "TargetConflict"
	// ReasonApplyFailed: creating, changing or deleting the target failed.
	ReasonApplyFailed = "ApplyFailed"
)

// Reasons of the DynamicIngressState Ready condition.
const (
	// ReasonFixed: the state has a fixed response.
	ReasonFixed = "Fixed"
	// ReasonProbeSucceeded: the last probe got an HTTP response.
	ReasonProbeSucceeded = "ProbeSucceeded"
	// ReasonScheduled: the response comes from the state's schedule.
	ReasonScheduled = "Scheduled"
	// ReasonEndpointsCounted: the response comes from the ready endpoints
	// of the state's Service.
	ReasonEndpointsCounted = "EndpointsCounted"
	// ReasonServiceNotFound: the state's Service does not exist; the state
	// has no response.
	ReasonServiceNotFound = "ServiceNotFound"
	// ReasonInvalidSchedule: spec.schedule cannot be read (an object that
	// bypassed admission); the state has no response.
	ReasonInvalidSchedule = "InvalidSchedule"
	// ReasonProbeFailed: the last probe failed; the message holds the error.
	ReasonProbeFailed = "ProbeFailed"
	// ReasonPending: no probe has been done yet for the current spec.
	ReasonPending = "Pending"
	// ReasonStatusWriteFailed: the API server refused the state's new
	// status (for instance too large for etcd); the status keeps the
	// response it had and the message holds the error.
	ReasonStatusWriteFailed = "StatusWriteFailed"
)

// Event reasons, besides the condition reasons above that are also used as
// Warning event reasons (TargetConflict, ApplyFailed, StateNotFound,
// ProbeFailed).
const (
	// EventReasonSwitched is a Normal event emitted when a DynamicIngress
	// changes between active and passive.
	EventReasonSwitched = "Switched"
	// EventReasonOverridden is a Normal event emitted when spec.override
	// starts pinning a DynamicIngress's mode.
	EventReasonOverridden = "Overridden"
	// EventReasonOverrideRemoved is a Normal event emitted when a
	// DynamicIngress follows its state again after an override.
	EventReasonOverrideRemoved = "OverrideRemoved"
	// EventReasonOverrideExpired is a Normal event emitted once when a pin
	// ends at spec.overrideUntil and the switch follows its state again.
	EventReasonOverrideExpired = "OverrideExpired"
)

// Labels and names the operator puts on what it manages.
const (
	// LabelManagedBy is the label every target Ingress carries; the manager
	// caches only Ingresses that have it.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy on target Ingresses.
	ManagedByValue = "dynamic-ingress-operator"
	// FieldOwner is the server-side apply field manager of every write.
	FieldOwner = "dynamic-ingress-operator"
)

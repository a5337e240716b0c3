package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NotificationType is one kind of notification a DynamicIngressNotifier
// sends (docs/notifications.md).
// +kubebuilder:validation:Enum=StateChanged;FlipCompleted;FlipStalled;ProbeFailed;Overridden;OverrideExpired
type NotificationType string

// The notification types.
const (
	// NotificationStateChanged: a state's response changed (one entry of
	// its status.history).
	NotificationStateChanged NotificationType = "StateChanged"
	// NotificationFlipCompleted: every follower of a change shows it.
	NotificationFlipCompleted NotificationType = "FlipCompleted"
	// NotificationFlipStalled: they did not within the manager's
	// --flip-stalled-after.
	NotificationFlipStalled NotificationType = "FlipStalled"
	// NotificationProbeFailed: a state's Ready condition turned False.
	NotificationProbeFailed NotificationType = "ProbeFailed"
	// NotificationOverridden: a follower in the notifier's namespace got,
	// changed or lost spec.override.
	NotificationOverridden NotificationType = "Overridden"
	// NotificationOverrideExpired: the pin of a follower in the
	// notifier's namespace ended by its spec.overrideUntil (its
	// status.override turned Expired). A type of its own: a notifier that
	// lists its events gets it only when it lists it.
	NotificationOverrideExpired NotificationType = "OverrideExpired"
)

// NotificationTypes are every type, in the order a notifier lists them
// (and sends those of the same time: a pin's Overridden before its
// OverrideExpired).
var NotificationTypes = []NotificationType{NotificationStateChanged, NotificationFlipCompleted,
	NotificationFlipStalled, NotificationProbeFailed, NotificationOverridden, NotificationOverrideExpired}

// SinkFormat is how a notification is written to a sink.
// +kubebuilder:validation:Enum=CloudEvents;Slack
type SinkFormat string

// The sink formats.
const (
	// SinkFormatCloudEvents is a CloudEvents 1.0 event in structured JSON
	// (application/cloudevents+json).
	SinkFormatCloudEvents SinkFormat = "CloudEvents"
	// SinkFormatSlack is a Slack incoming webhook's {"text": ...}.
	SinkFormatSlack SinkFormat = "Slack"
)

// MaxNotifierStates is how many states one notifier may name.
const MaxNotifierStates = 32

// DynamicIngressNotifierSpec says which states' changes to send where.
type DynamicIngressNotifierSpec struct {
	// states are the states whose changes are sent: DynamicIngressStates
	// in the notifier's namespace, or ClusterDynamicIngressStates that
	// admit it.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	States []StateReference `json:"states"`

	// events are the notification types sent; all six when empty (the
	// admission webhook writes them out). A list sends only what it names:
	// OverrideExpired is not implied by Overridden.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=6
	Events []NotificationType `json:"events,omitempty"`

	// sink is where the notifications are posted.
	// +required
	Sink NotificationSink `json:"sink"`
}

// NotificationSink is an HTTP endpoint that receives notifications.
type NotificationSink struct {
	// url is an http or https URL; the manager's address guard applies,
	// as for probes.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url"`

	// format of the posted body: CloudEvents (the default) or Slack.
	// +optional
	Format SinkFormat `json:"format,omitempty"`

	// headers sent with every notification, literal or read from Secrets
	// in the notifier's namespace.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Headers []HTTPHeader `json:"headers,omitempty"`
}

// DynamicIngressNotifierStatus is what the notifier delivered.
type DynamicIngressNotifierStatus struct {
	// conditions holds Ready (True: Delivered or Idle; False:
	// DeliveryFailing, SecretNotFound, StateNotAdmitted, StateNotFound or
	// ClusterStatesNotWatched).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// states are the names of spec.states, comma-separated, for the STATES
	// column.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	States string `json:"states,omitempty"`

	// sinkHost is the host of spec.sink.url, for the SINK column.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	SinkHost string `json:"sinkHost,omitempty"`

	// lastDelivery is the last notification sent, delivered or not.
	// +optional
	LastDelivery *NotificationDelivery `json:"lastDelivery,omitempty"`

	// delivered is, per state, what was delivered last: the manager sends
	// what follows it, from the state's history, after a restart too.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Delivered []DeliveredState `json:"delivered,omitempty"`

	// overrides are, per switch, the override audit whose Overridden was
	// delivered last (or that was there when the notifier began): a
	// switch's change is sent when its audit differs from this one,
	// whatever the clocks said; and the expired pin whose OverrideExpired
	// was, while the switch's status.override still shows it.
	// +optional
	// +listType=map
	// +listMapKey=switch
	// +kubebuilder:validation:MaxItems=10000
	Overrides []DeliveredOverride `json:"overrides,omitempty"`

	// lastOverride is no longer written: a notifier that has it and no
	// overrides starts its record of overrides from the audits there are.
	// +optional
	LastOverride *DeliveredOverride `json:"lastOverride,omitempty"`

	// failed counts the notifications the sink refused or did not answer
	// (each retry counts).
	// +optional
	// +kubebuilder:validation:Minimum=0
	Failed int64 `json:"failed,omitempty"`

	// dropped counts the changes that fell out of a state's history
	// before they were delivered.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Dropped int64 `json:"dropped,omitempty"`
}

// NotificationDelivery is one attempt at sending a notification.
type NotificationDelivery struct {
	// time of the attempt.
	// +required
	Time metav1.Time `json:"time"`

	// type of the notification.
	// +required
	Type NotificationType `json:"type"`

	// id of the notification, the same at every retry.
	// +required
	// +kubebuilder:validation:MaxLength=512
	ID string `json:"id"`

	// result is Delivered, or the error (the status code or what failed).
	// +required
	// +kubebuilder:validation:MaxLength=1024
	Result string `json:"result"`
}

// DeliveredState is what a notifier delivered last about one state.
type DeliveredState struct {
	// kind of the state.
	// +required
	Kind StateKind `json:"kind"`

	// name of the state.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// uid of the state: a state deleted and created again starts over.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	UID string `json:"uid,omitempty"`

	// sequence is the history sequence whose StateChanged was delivered
	// last (or that was current when the notifier began).
	// +required
	// +kubebuilder:validation:Minimum=0
	Sequence int64 `json:"sequence"`

	// completed is the history sequence whose FlipCompleted was
	// delivered last.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Completed int64 `json:"completed,omitempty"`

	// stalled is the history sequence whose FlipStalled was delivered
	// last.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Stalled int64 `json:"stalled,omitempty"`

	// probeFailedAt is when the state's Ready turned False, for the last
	// ProbeFailed delivered.
	// +optional
	ProbeFailedAt *metav1.Time `json:"probeFailedAt,omitempty"`
}

// DeliveredOverride is the override change of one switch a notifier
// delivered last.
type DeliveredOverride struct {
	// at is the change's ingress.dynamicingress.io/override-at.
	// +required
	At metav1.MicroTime `json:"at"`

	// switch is "kind/name" of the switch.
	// +required
	// +kubebuilder:validation:MaxLength=512
	Switch string `json:"switch"`

	// expired is the pin whose OverrideExpired was delivered last (or that
	// had expired when the notifier began), kept while the switch's
	// status.override says that pin expired: a pin's expiry is sent once.
	// +optional
	Expired *DeliveredExpiry `json:"expired,omitempty"`
}

// DeliveredExpiry names an expired pin of a switch, as its
// status.override does.
type DeliveredExpiry struct {
	// until is the pin's overrideUntil, when it ended.
	// +required
	Until metav1.Time `json:"until"`

	// at is when the pin was set or last changed (status.override.at).
	// +optional
	At *metav1.Time `json:"at,omitempty"`
}

// DynamicIngressNotifier sends the changes of states to an HTTP sink:
// CloudEvents or Slack messages, at least once and in order.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=dnotify,categories=dynamic
// +kubebuilder:printcolumn:name="States",type=string,JSONPath=`.status.states`
// +kubebuilder:printcolumn:name="Sink",type=string,JSONPath=`.status.sinkHost`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Last",type=date,JSONPath=`.status.lastDelivery.time`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DynamicIngressNotifier struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names the states and the sink.
	// +required
	Spec DynamicIngressNotifierSpec `json:"spec"`

	// status says what was delivered.
	// +optional
	Status DynamicIngressNotifierStatus `json:"status,omitempty"`
}

// DynamicIngressNotifierList is a list of DynamicIngressNotifier.
// +kubebuilder:object:root=true
type DynamicIngressNotifierList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items is the list of DynamicIngressNotifier.
	Items []DynamicIngressNotifier `json:"items"`
}

// SendsEvent reports whether the notifier sends notifications of type t.
func (n *DynamicIngressNotifier) SendsEvent(t NotificationType) bool {
	if len(n.Spec.Events) == 0 {
		return true
	}
	for _, e := range n.Spec.Events {
		if e == t {
			return true
		}
	}
	return false
}

func init() {
	register(&DynamicIngressNotifier{}, &DynamicIngressNotifierList{})
}

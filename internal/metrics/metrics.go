// Package metrics holds the operator's own Prometheus metrics, served on the
// manager's metrics endpoint beside controller-runtime's. The reconcilers
// call one function per fact (a target's mode, a switch, a probe, a state's
// response, a deleted object); this package keeps the series consistent: a
// changed label deletes the old series, a deleted object deletes all of its
// own.
//
// Every function is safe for concurrent use.
package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The kinds of object that own a target (the kind label).
const (
	KindDynamicIngress   = "DynamicIngress"
	KindDynamicHTTPRoute = "DynamicHTTPRoute"
)

// The metric names, as the dashboard and the alerts in docs/operations.md
// spell them.
const (
	ActiveName        = "dynamicingress_active"
	SwitchesName      = "dynamicingress_switches_total"
	SwitchLatencyName = "dynamicingress_switch_latency_seconds"
	ProbeDurationName = "dynamicingressstate_probe_duration_seconds"
	ProbeFailuresName = "dynamicingressstate_probe_failures_total"
	StateUpName       = "dynamicingressstate_up"
	ServedName        = "dynamicingress_served_seconds"
	NotServedName     = "dynamicingress_not_served_total"
)

// FailureReasons are the values of the reason label of ProbeFailuresName,
// one per kind of probe failure (internal/probe's FailureReason). Each
// probed state starts with all of them at zero, so that rate() and
// increase() see the first failure of a reason: a counter series that
// appears with the value 1 has no earlier sample to rise from.
var FailureReasons = []string{"dns", "connect", "tls", "timeout", "denied", "http", "read", "expression", "secret"}

// switchLatencyBuckets span 5ms to 60s. A switch of one target is a watch
// event and one write, tens of milliseconds; a state driving a thousand
// targets is paced by the client-side rate limit (--kube-api-qps 200:
// about 5s for the last one); a write the API server refused is retried
// with backoff capped at 60s. The top bucket is that cap: a switch slower
// than it waited on more than a retry.
var switchLatencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60}

// probeDurationBuckets span 5ms to 30s. An in-cluster endpoint answers in
// milliseconds, a remote one in tens to hundreds; the default probe
// timeout is 5s, so a timed-out probe lands just above the 5s bound, in the
// 10s bucket, apart from slow answers. Timeouts set longer than 30s are
// rare enough for +Inf.
var probeDurationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// set is every collector and what is needed to keep their series
// consistent. Tests swap in a fresh one; the manager uses the one
// registered at init.
type set struct {
	// targets has each target's active, switches and not served series.
	targets       *targetSeries
	switchLatency *prometheus.HistogramVec
	probeDuration *prometheus.HistogramVec
	probeFailures *prometheus.CounterVec
	stateUp       *prometheus.GaugeVec
	served        *prometheus.HistogramVec

	mu sync.Mutex
	// probed holds the states whose failure counters are initialised.
	probed map[stateKey]struct{}
}

type targetKey struct{ kind, namespace, name string }

type stateKey struct{ namespace, name string }

func newSet() *set {
	return &set{
		targets: newTargetSeries(),
		switchLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    SwitchLatencyName,
			Help:    "Time from the state's response change (its status.lastUpdateTime) to the switched target written.",
			Buckets: switchLatencyBuckets,
		}, []string{"kind"}),
		probeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    ProbeDurationName,
			Help:    "Duration of each probe of the state, failed or not.",
			Buckets: probeDurationBuckets,
		}, []string{"namespace", "name"}),
		probeFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: ProbeFailuresName,
			Help: "Probes of the state that got no HTTP response, by reason (dns, connect, tls, timeout, denied, http, read).",
		}, []string{"namespace", "name", "reason"}),
		stateUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: StateUpName,
			Help: "1 while the state has a response (a status code), 0 while it has none.",
		}, []string{"namespace", "name"}),
		served: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    ServedName,
			Help:    "Time from a switch's target written to spec.served.url answering with its shape (the Served condition turning True).",
			Buckets: switchLatencyBuckets,
		}, []string{"kind"}),
		probed: map[stateKey]struct{}{},
	}
}

func (s *set) collectors() []prometheus.Collector {
	return []prometheus.Collector{s.targets, s.switchLatency, s.probeDuration, s.probeFailures, s.stateUp, s.served}
}

// current is the set the package functions write to.
var current = newSet()

func init() {
	ctrlmetrics.Registry.MustRegister(current.collectors()...)
}

// SetActive records the mode of a target (kind is KindDynamicIngress or
// KindDynamicHTTPRoute) and the state it follows. Call it on every
// reconcile that decided the mode, so that a restarted manager reports
// every object. When the object now follows another state, the series
// with the old state is deleted: one object, one series.
func SetActive(kind, namespace, name, state string, active bool) {
	current.setActive(kind, namespace, name, state, active)
}

func (s *set) setActive(kind, namespace, name, state string, active bool) {
	s.targets.setActive(targetKey{kind, namespace, name}, state, active)
}

// RecordSwitch counts a switch of a target to its active (toActive) or
// passive shape, and observes its latency when latencyKnown (the state had
// a status.lastUpdateTime). Call it once the switched target is written,
// never for the first mode at creation. A negative latency (the clocks of
// two manager replicas disagree) counts as zero.
func RecordSwitch(kind, namespace, name string, toActive bool, latency time.Duration, latencyKnown bool) {
	current.recordSwitch(kind, namespace, name, toActive, latency, latencyKnown)
}

func (s *set) recordSwitch(kind, namespace, name string, toActive bool, latency time.Duration, latencyKnown bool) {
	s.targets.recordSwitch(targetKey{kind, namespace, name}, toActive)
	if latencyKnown {
		s.switchLatency.WithLabelValues(kind).Observe(max(latency, 0).Seconds())
	}
}

// ForgetTarget deletes every series of a deleted object. The latency
// histogram, by kind only, keeps its observations.
func ForgetTarget(kind, namespace, name string) {
	current.forgetTarget(kind, namespace, name)
}

func (s *set) forgetTarget(kind, namespace, name string) {
	s.targets.forget(targetKey{kind, namespace, name})
}

// ObserveProbe records one probe of a state, failed or not: its duration,
// and the failure's reason (one of FailureReasons), "" when the probe got
// an HTTP response. Call it only for a probe whose state is still
// registered (its context not cancelled): an observation made after
// ForgetState would bring the state's series back.
func ObserveProbe(namespace, name string, d time.Duration, failureReason string) {
	current.observeProbe(namespace, name, d, failureReason)
}

func (s *set) observeProbe(namespace, name string, d time.Duration, failureReason string) {
	key := stateKey{namespace, name}
	// Under the lock, so that a concurrent ForgetState or ForgetProbes
	// deletes all of this observation's series or none of them (never
	// leaving failure counters without their duration series).
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.probed[key]; !ok {
		s.probed[key] = struct{}{}
		for _, r := range FailureReasons {
			s.probeFailures.WithLabelValues(namespace, name, r)
		}
	}
	s.probeDuration.WithLabelValues(namespace, name).Observe(d.Seconds())
	if failureReason != "" {
		s.probeFailures.WithLabelValues(namespace, name, failureReason).Inc()
	}
}

// SetStateUp records whether a state has a response. Call it on every
// reconcile of the state, fixed or probed.
func SetStateUp(namespace, name string, up bool) {
	current.stateUp.WithLabelValues(namespace, name).Set(boolFloat(up))
}

// ForgetProbes deletes the probe series of a state that is no longer
// probed (its spec changed to a fixed response); its up series stays.
func ForgetProbes(namespace, name string) {
	current.forgetProbes(namespace, name)
}

func (s *set) forgetProbes(namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.probed, stateKey{namespace, name})
	labels := prometheus.Labels{"namespace": namespace, "name": name}
	s.probeDuration.DeletePartialMatch(labels)
	s.probeFailures.DeletePartialMatch(labels)
}

// ForgetState deletes every series of a deleted state.
func ForgetState(namespace, name string) {
	current.forgetProbes(namespace, name)
	current.stateUp.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "name": name})
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Events dropped (docs/behaviour.md, "Statuses before events"): a counter by namespace
// alone, apart from the set above, since it belongs to no one object.

// EventsDroppedName is the counter of the events of a namespace's switches
// that the manager dropped.
const EventsDroppedName = "dynamicingress_events_dropped_total"

var eventsDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: EventsDroppedName,
	Help: "Events of the namespace's switches dropped unrecorded: more than the namespace's bound waited to be recorded. Each overflow is told by one EventsDropped Warning.",
}, []string{"namespace"})

func init() {
	ctrlmetrics.Registry.MustRegister(eventsDropped)
}

// CountEventsDropped counts n more events of namespace dropped. n = 0
// makes the namespace's series, at zero, before its first drop, so that
// increase() sees that drop.
func CountEventsDropped(namespace string, n int) {
	eventsDropped.WithLabelValues(namespace).Add(float64(n))
}

// RecordServed observes how long after its target was written a switch's
// shape was served (served), or counts a write whose shape was not served
// within the timeout.
func RecordServed(kind, namespace, name string, served bool, after time.Duration) {
	if served {
		current.served.WithLabelValues(kind).Observe(max(after, 0).Seconds())
		return
	}
	current.targets.countNotServed(targetKey{kind, namespace, name})
}

// Notifications (docs/notifications.md): a counter apart from the set
// above, by notifier.

// NotificationsName is the counter of the notifications notifiers sent.
const NotificationsName = "dynamicingress_notifications_total"

// The results of a notification.
const (
	// NotificationDelivered: the sink answered 2xx.
	NotificationDelivered = "delivered"
	// NotificationRetried: it failed and will be sent again (connection
	// error, timeout, 429 or 5xx).
	NotificationRetried = "retried"
	// NotificationFailed: the sink refused it (another 4xx, or a 1xx or
	// 3xx) and it is not sent again.
	NotificationFailed = "failed"
)

var notifications = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: NotificationsName,
	Help: "Notifications a DynamicIngressNotifier sent, by type and result (delivered, retried, failed).",
}, []string{"namespace", "name", "type", "result"})

func init() {
	ctrlmetrics.Registry.MustRegister(notifications)
}

// CountNotification counts one notification of the notifier
// namespace/name sent with this result.
func CountNotification(namespace, name, notificationType, result string) {
	notifications.WithLabelValues(namespace, name, notificationType, result).Inc()
}

// ForgetNotifier drops the series of a deleted notifier.
func ForgetNotifier(namespace, name string) {
	notifications.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "name": name})
}

// MemoryAtRestName is the gauge that says whether the manager's lower
// garbage-collector target at rest is in effect (docs/operations.md,
// "Memory at rest").
const MemoryAtRestName = "dynamicingress_manager_memory_at_rest"

// RegisterRest registers MemoryAtRestName, 1 while atRest says so. Call it
// once, from the manager's main.
func RegisterRest(atRest func() bool) {
	ctrlmetrics.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: MemoryAtRestName,
		Help: "1 while the manager is at rest (30s of few allocations) and collects garbage with --gc-percent-at-rest; 0 while it works.",
	}, func() float64 {
		if atRest() {
			return 1
		}
		return 0
	}))
}

package builders

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// StateWrapper builds a v1beta1.DynamicIngressState.
type StateWrapper struct {
	v1beta1.DynamicIngressState
}

// FixedState is a state ns/name that always answers code with body.
func FixedState(ns, name, code, body string) *StateWrapper {
	return &StateWrapper{v1beta1.DynamicIngressState{
		ObjectMeta: objectMeta(ns, name),
		Spec:       v1beta1.DynamicIngressStateSpec{FixedResponse: &v1beta1.FixedResponse{Status: code, Body: body}},
	}}
}

// ProbedState is a state ns/name that probes url; interval, timeout and
// failure threshold are left to the defaults until set.
func ProbedState(ns, name, url string) *StateWrapper {
	return &StateWrapper{v1beta1.DynamicIngressState{
		ObjectMeta: objectMeta(ns, name),
		Spec:       v1beta1.DynamicIngressStateSpec{Probe: &v1beta1.HTTPProbe{URL: url}},
	}}
}

// ScheduleState is a state ns/name with a schedule and no windows yet.
func ScheduleState(ns, name string) *StateWrapper {
	return &StateWrapper{v1beta1.DynamicIngressState{
		ObjectMeta: objectMeta(ns, name),
		Spec:       v1beta1.DynamicIngressStateSpec{Schedule: &v1beta1.Schedule{}},
	}}
}

// Obj returns the DynamicIngressState built so far (not a copy).
func (w *StateWrapper) Obj() *v1beta1.DynamicIngressState { return &w.DynamicIngressState }

// YAML renders the DynamicIngressState, with apiVersion and kind, for
// kubectl.
func (w *StateWrapper) YAML() string {
	obj := w.DeepCopy()
	obj.TypeMeta = typeMeta("DynamicIngressState")
	return toYAML(obj)
}

// probe is the state's probe, made when the state has none.
func (w *StateWrapper) probe() *v1beta1.HTTPProbe {
	if w.Spec.Probe == nil {
		w.Spec.Probe = &v1beta1.HTTPProbe{}
	}
	return w.Spec.Probe
}

// Interval sets the probe's interval.
func (w *StateWrapper) Interval(d time.Duration) *StateWrapper {
	w.probe().Interval = &metav1.Duration{Duration: d}
	return w
}

// Timeout sets the probe's timeout.
func (w *StateWrapper) Timeout(d time.Duration) *StateWrapper {
	w.probe().Timeout = &metav1.Duration{Duration: d}
	return w
}

// FailureThreshold sets how many failed probes in a row lose the response.
func (w *StateWrapper) FailureThreshold(n int32) *StateWrapper {
	w.probe().FailureThreshold = ptr.To(n)
	return w
}

// SuccessThreshold sets how many probes in a row must return a changed
// response before it is recorded.
func (w *StateWrapper) SuccessThreshold(n int32) *StateWrapper {
	w.probe().SuccessThreshold = ptr.To(n)
	return w
}

// BodyExpression sets the probe's bodyExpression.
func (w *StateWrapper) BodyExpression(expr string) *StateWrapper {
	w.probe().BodyExpression = expr
	return w
}

// Header adds a request header to the probe.
func (w *StateWrapper) Header(k, v string) *StateWrapper {
	p := w.probe()
	p.Headers = append(p.Headers, v1beta1.HTTPHeader{Name: k, Value: v})
	return w
}

// HeaderFromSecret adds a probe header whose value is the key of a Secret
// in the state's namespace.
func (w *StateWrapper) HeaderFromSecret(name, secret, key string) *StateWrapper {
	p := w.probe()
	p.Headers = append(p.Headers, v1beta1.HTTPHeader{Name: name,
		ValueFrom: &v1beta1.HeaderValueSource{SecretKeyRef: v1beta1.SecretKeySelector{Name: secret, Key: key}}})
	return w
}

// schedule is the state's schedule, made when the state has none.
func (w *StateWrapper) schedule() *v1beta1.Schedule {
	if w.Spec.Schedule == nil {
		w.Spec.Schedule = &v1beta1.Schedule{}
	}
	return w.Spec.Schedule
}

// TimeZone sets the schedule's IANA time zone.
func (w *StateWrapper) TimeZone(z string) *StateWrapper {
	w.schedule().TimeZone = z
	return w
}

// Cron adds a recurring window: it opens at each time expr names and
// lasts d.
func (w *StateWrapper) Cron(expr string, d time.Duration) *StateWrapper {
	return w.Window(v1beta1.ScheduleWindow{Cron: expr, Duration: &metav1.Duration{Duration: d}})
}

// OneOff adds a window from start to end (RFC 3339 times).
func (w *StateWrapper) OneOff(start, end string) *StateWrapper {
	return w.Window(v1beta1.ScheduleWindow{Start: start, End: end})
}

// Window adds a window as given, for windows Cron and OneOff cannot make
// (such as invalid ones).
func (w *StateWrapper) Window(win v1beta1.ScheduleWindow) *StateWrapper {
	s := w.schedule()
	s.Windows = append(s.Windows, win)
	return w
}

// overridePolicy is the state's overridePolicy, made on first use.
func (w *StateWrapper) overridePolicy() *v1beta1.OverridePolicy {
	if w.Spec.OverridePolicy == nil {
		w.Spec.OverridePolicy = &v1beta1.OverridePolicy{}
	}
	return w.Spec.OverridePolicy
}

// MaxPin sets overridePolicy.maxDuration.
func (w *StateWrapper) MaxPin(d time.Duration) *StateWrapper {
	w.overridePolicy().MaxDuration = &metav1.Duration{Duration: d}
	return w
}

// RequireReason sets overridePolicy.requireReason.
func (w *StateWrapper) RequireReason() *StateWrapper {
	w.overridePolicy().RequireReason = true
	return w
}

// ApprovalFor sets overridePolicy.approval.modes.
func (w *StateWrapper) ApprovalFor(modes ...v1beta1.Mode) *StateWrapper {
	w.overridePolicy().Approval = &v1beta1.OverrideApproval{Modes: modes}
	return w
}

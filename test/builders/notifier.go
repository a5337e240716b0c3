package builders

import (
	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// NotifierWrapper builds a v1beta1.DynamicIngressNotifier.
type NotifierWrapper struct {
	v1beta1.DynamicIngressNotifier
}

// Notifier starts a notifier in ns posting CloudEvents to sinkURL.
func Notifier(ns, name, sinkURL string) *NotifierWrapper {
	w := &NotifierWrapper{}
	w.Namespace, w.Name = ns, name
	w.Spec.Sink.URL = sinkURL
	return w
}

// Obj returns the notifier built so far (not a copy).
func (w *NotifierWrapper) Obj() *v1beta1.DynamicIngressNotifier { return &w.DynamicIngressNotifier }

// YAML renders the notifier, with apiVersion and kind, for kubectl.
func (w *NotifierWrapper) YAML() string {
	obj := w.DeepCopy()
	obj.TypeMeta = typeMeta("DynamicIngressNotifier")
	return toYAML(obj)
}

// State adds a DynamicIngressState of the notifier's namespace.
func (w *NotifierWrapper) State(name string) *NotifierWrapper {
	w.Spec.States = append(w.Spec.States, v1beta1.StateReference{Kind: v1beta1.StateKindNamespaced, Name: name})
	return w
}

// ClusterState adds a ClusterDynamicIngressState.
func (w *NotifierWrapper) ClusterState(name string) *NotifierWrapper {
	w.Spec.States = append(w.Spec.States, v1beta1.StateReference{Kind: v1beta1.StateKindCluster, Name: name})
	return w
}

// Events sets the notification types sent.
func (w *NotifierWrapper) Events(types ...v1beta1.NotificationType) *NotifierWrapper {
	w.Spec.Events = types
	return w
}

// Slack posts Slack messages instead of CloudEvents.
func (w *NotifierWrapper) Slack() *NotifierWrapper {
	w.Spec.Sink.Format = v1beta1.SinkFormatSlack
	return w
}

// Header adds a sink header with a literal value.
func (w *NotifierWrapper) Header(name, value string) *NotifierWrapper {
	w.Spec.Sink.Headers = append(w.Spec.Sink.Headers, v1beta1.HTTPHeader{Name: name, Value: value})
	return w
}

// SecretHeader adds a sink header read from a Secret's key.
func (w *NotifierWrapper) SecretHeader(name, secret, key string) *NotifierWrapper {
	w.Spec.Sink.Headers = append(w.Spec.Sink.Headers, v1beta1.HTTPHeader{Name: name,
		ValueFrom: &v1beta1.HeaderValueSource{SecretKeyRef: v1beta1.SecretKeySelector{Name: secret, Key: key}}})
	return w
}

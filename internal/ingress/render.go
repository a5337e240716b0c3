// Package ingress turns a DynamicIngress template into the target Ingress
// and tells whether the target already is what the template says (docs/behaviour.md).
package ingress

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"

	networkingv1 "k8s.io/api/networking/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// SelectTemplate returns the template of the mode, nil when that mode has
// no Ingress.
func SelectTemplate(spec v1beta1.DynamicIngressSpec, active bool) *v1beta1.IngressTemplate {
	variant := spec.PassiveIngress
	if active {
		variant = spec.ActiveIngress
	}
	if variant == nil {
		return nil
	}
	return &variant.Template
}

// TargetNamespace is the namespace of the target Ingress: spec.target's,
// or the DynamicIngress's own when that is empty.
func TargetNamespace(di *v1beta1.DynamicIngress) string {
	if di.Spec.Target.Namespace != "" {
		return di.Spec.Target.Namespace
	}
	return di.Namespace
}

// Render returns the target Ingress as an apply configuration: the
// template's labels (plus the managed-by label), annotations and spec, and a
// controller reference to the DynamicIngress.
func Render(di *v1beta1.DynamicIngress, tpl *v1beta1.IngressTemplate) (*networkingv1ac.IngressApplyConfiguration, error) {
	labels := maps.Clone(tpl.Metadata.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1beta1.LabelManagedBy] = v1beta1.ManagedByValue

	out := networkingv1ac.Ingress(di.Spec.Target.Name, TargetNamespace(di)).
		WithLabels(labels).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(v1beta1.GroupVersion.String()).
			WithKind("DynamicIngress").
			WithName(di.Name).
			WithUID(di.UID).
			WithController(true).
			WithBlockOwnerDeletion(true))
	if len(tpl.Metadata.Annotations) > 0 {
		out.WithAnnotations(tpl.Metadata.Annotations)
	}
	spec, err := specApplyConfiguration(tpl.Spec)
	if err != nil {
		return nil, err
	}
	if spec != nil {
		out.WithSpec(spec)
	}
	return out, nil
}

// Object is the typed Ingress an apply configuration describes, to create it.
func Object(ac *networkingv1ac.IngressApplyConfiguration) (*networkingv1.Ingress, error) {
	raw, err := json.Marshal(ac)
	if err != nil {
		return nil, err
	}
	out := &networkingv1.Ingress{}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, err
	}
	return out, nil
}

// specApplyConfiguration converts a typed IngressSpec; both share one JSON
// form. An empty spec gives nil, so that nothing is claimed for it.
func specApplyConfiguration(spec networkingv1.IngressSpec) (*networkingv1ac.IngressSpecApplyConfiguration, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encoding the template's spec: %w", err)
	}
	if string(raw) == "{}" {
		return nil, nil
	}
	out := &networkingv1ac.IngressSpecApplyConfiguration{}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("decoding the template's spec: %w", err)
	}
	return out, nil
}

// UpToDate reports whether the fields that fieldOwner owns on existing are
// exactly desired: then an apply would change nothing and is not sent. A
// field the previous template set and desired lacks, or a field another
// actor took over, makes it false.
func UpToDate(existing *networkingv1.Ingress, desired *networkingv1ac.IngressApplyConfiguration, fieldOwner string) (bool, error) {
	owned, err := networkingv1ac.ExtractIngress(existing, fieldOwner)
	if err != nil {
		return false, fmt.Errorf("reading the fields %s owns on Ingress %s/%s: %w", fieldOwner, existing.Namespace, existing.Name, err)
	}
	a, err := normalized(owned)
	if err != nil {
		return false, err
	}
	b, err := normalized(desired)
	if err != nil {
		return false, err
	}
	return reflect.DeepEqual(a, b), nil
}

// normalized is the JSON form of v without nulls, empty objects and empty
// lists, which an apply treats as absent.
func normalized(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return prune(out), nil
}

func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			val = prune(val)
			if isEmpty(val) {
				delete(t, k)
				continue
			}
			t[k] = val
		}
		return t
	case []any:
		for i := range t {
			t[i] = prune(t[i])
		}
		return t
	}
	return v
}

func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}

// Package target turns the selected template of a switch (a DynamicIngress
// or a DynamicHTTPRoute) into the object to apply, and tells whether the
// target already is what the template says (docs/architecture.md). The
// switching engine and the admission webhooks work through the Kind
// interface; each target kind (Ingress, HTTPRoute) is a small adapter.
package target

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// Switch is an object that switches one target between two templates: a
// DynamicIngress or a DynamicHTTPRoute.
type Switch interface {
	client.Object
	// SwitchSpec is the part of the spec every kind of switch shares.
	SwitchSpec() v1beta1.SwitchSpec
	// SwitchStatus is the status, to read and change.
	SwitchStatus() *v1beta1.SwitchStatus
}

// Underlying is the switch object behind a view of it (a view that
// changes what SwitchSpec says, such as decision.Unpinned), or sw itself.
func Underlying(sw Switch) Switch {
	if v, ok := sw.(interface{ Underlying() Switch }); ok {
		return v.Underlying()
	}
	return sw
}

// Template is one shape of a target: its metadata and its spec, a typed
// spec of the target kind (an IngressSpec, an HTTPRouteSpec).
type Template struct {
	Metadata v1beta1.TemplateMetadata
	Spec     any
}

// Kind is what the switching engine needs to know of one kind of switch and
// its target: an adapter. Adding a target kind means a new API type and a
// new Kind, nothing else.
type Kind interface {
	// SwitchKind is the kind of the switch object, e.g. "DynamicIngress".
	SwitchKind() string
	// NewSwitch returns an empty switch object; NewSwitchList a list of them.
	NewSwitch() Switch
	NewSwitchList() client.ObjectList
	// SwitchItems returns the items of a list made by NewSwitchList.
	SwitchItems(list client.ObjectList) []Switch
	// TargetGVK is the target's group, version and kind.
	TargetGVK() schema.GroupVersionKind
	// NewTarget returns an empty typed target object; NewTargetList a
	// list of them.
	NewTarget() client.Object
	NewTargetList() client.ObjectList
	// TargetSpec returns the spec of a target object made by NewTarget.
	TargetSpec(obj client.Object) any
	// Template returns the template of a mode, false when that mode has no
	// target.
	Template(sw Switch, active bool) (Template, bool)
	// TemplateField is the path of a mode's template, for messages, e.g.
	// "spec.activeIngress".
	TemplateField(active bool) string
	// OwnedFields returns the fields fieldOwner owns on existing, as an
	// apply configuration.
	OwnedFields(existing client.Object, fieldOwner string) (any, error)
	// Default fills in what the API server's defaulting would, on an
	// object rendered as unstructured content, so that it compares equal to
	// what the server keeps. Kinds without schema defaults do nothing.
	Default(content map[string]any)
}

// Namespace is the namespace of the target: spec.target's, or the
// switch's own when that is empty.
func Namespace(sw Switch) string {
	if ns := sw.SwitchSpec().Target.Namespace; ns != "" {
		return ns
	}
	return sw.GetNamespace()
}

// Key is the namespace and name of the target.
func Key(sw Switch) client.ObjectKey {
	return client.ObjectKey{Namespace: Namespace(sw), Name: sw.SwitchSpec().Target.Name}
}

// Render returns the target of the selected template as an unstructured
// object: the template's labels (plus the managed-by label), annotations
// and spec, and a controller reference to the switch. It returns nil when
// the mode has no target.
func Render(kind Kind, sw Switch, active bool) (*unstructured.Unstructured, error) {
	tpl, ok := kind.Template(sw, active)
	if !ok {
		return nil, nil
	}
	labels := maps.Clone(tpl.Metadata.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1beta1.LabelManagedBy] = v1beta1.ManagedByValue

	out := &unstructured.Unstructured{Object: map[string]any{}}
	out.SetGroupVersionKind(kind.TargetGVK())
	key := Key(sw)
	out.SetNamespace(key.Namespace)
	out.SetName(key.Name)
	out.SetLabels(labels)
	if len(tpl.Metadata.Annotations) > 0 {
		out.SetAnnotations(tpl.Metadata.Annotations)
	}
	out.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: v1beta1.GroupVersion.String(), Kind: kind.SwitchKind(), Name: sw.GetName(), UID: sw.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}})
	spec, err := content(tpl.Spec)
	if err != nil {
		return nil, fmt.Errorf("encoding the template's spec: %w", err)
	}
	if m, ok := spec.(map[string]any); ok && len(m) > 0 {
		out.Object["spec"] = m
	}
	return out, nil
}

// UpToDate reports whether the fields the operator's field owner owns on
// existing are exactly desired: then an apply would change nothing and is
// not sent. A field the previous template set and desired lacks, or a field
// another actor took over, makes it false. desired is compared as the API
// server would keep it, with the kind's defaults filled in.
func UpToDate(kind Kind, existing client.Object, desired *unstructured.Unstructured) (bool, error) {
	want := desired.DeepCopy().Object
	kind.Default(want)
	// The common case of a flip first, cheaply: the new template's spec is
	// not in the live object at all. Only when it is do the fields our
	// field owner owns decide (decoding managedFields costs more than the
	// rest of a reconcile).
	if contained, err := specContained(want, kind.TargetSpec(existing)); err != nil || !contained {
		return false, err
	}
	owned, err := kind.OwnedFields(existing, v1beta1.FieldOwner)
	if err != nil {
		return false, fmt.Errorf("reading the fields %s owns on %s %s/%s: %w", v1beta1.FieldOwner, kind.TargetGVK().Kind,
			existing.GetNamespace(), existing.GetName(), err)
	}
	a, err := content(owned)
	if err != nil {
		return false, err
	}
	b, err := content(want)
	if err != nil {
		return false, err
	}
	return reflect.DeepEqual(a, b), nil
}

// ModeOf tells which of a switch's two shapes a live target is in: active
// or not, and known false when its shape does not tell (it follows neither
// template, or both alike). live is nil when there is no target. The engine
// keeps this mode under failurePolicy Retain, and announces a switch when
// a write changes it (docs/behaviour.md, "Failure policy and override").
func ModeOf(kind Kind, sw Switch, live client.Object) (active, known bool, err error) {
	var desired [2]*unstructured.Unstructured // passive, active
	var follows [2]bool
	for i, mode := range []bool{false, true} {
		if desired[i], err = Render(kind, sw, mode); err != nil {
			return false, false, err
		}
		switch {
		case desired[i] == nil:
			follows[i] = live == nil
		case live != nil:
			want := desired[i].DeepCopy().Object
			kind.Default(want)
			if follows[i], err = specContained(want, kind.TargetSpec(live)); err != nil {
				return false, false, err
			}
		}
	}
	if follows[0] != follows[1] {
		return follows[1], true, nil
	}
	if !follows[0] || live == nil {
		return false, false, nil
	}
	// Both specs are in the live target (the same spec, say, with other
	// annotations): the fields our field owner owns decide.
	var upToDate [2]bool
	for i := range desired {
		if upToDate[i], err = UpToDate(kind, live, desired[i]); err != nil {
			return false, false, err
		}
	}
	if upToDate[0] != upToDate[1] {
		return upToDate[1], true, nil
	}
	return false, false, nil
}

// specContained reports whether every field of the desired object's spec
// is in liveSpec, the live object's spec, with the same value (lists
// element by element, of the same length). The live spec may hold more:
// fields others set. Only the specs are encoded, not the live object's
// metadata (its managedFields are most of its size).
func specContained(desired map[string]any, liveSpec any) (bool, error) {
	have, err := content(liveSpec)
	if err != nil {
		return false, err
	}
	want, err := content(desired["spec"])
	if err != nil {
		return false, err
	}
	return contains(have, want), nil
}

// contains reports whether want is part of have.
func contains(have, want any) bool {
	switch w := want.(type) {
	case nil:
		return true
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if !contains(h[k], v) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !contains(h[i], w[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(have, want)
}

// content is the JSON form of v without nulls, empty objects and empty
// lists, which an apply treats as absent.
func content(v any) (any, error) {
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

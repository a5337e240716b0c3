package writes

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// The cache keeps every switch, state and managed target, and its objects
// are read-only: controller-runtime gives every Get and List a deep copy,
// and the lists that ask for none (client.UnsafeDisableDeepCopy) only
// read. So strings that many objects hold alike (the namespace, an owner's
// kind, a condition's type and reason, a field manager's name) can be one
// string for all of them, and so can equal maps of labels or annotations
// (shareMap): each object then keeps a pointer instead of a copy
// (docs/benchmarks.md, "Memory at rest").

// interned keeps the handle of every string intern was given: unique
// keeps a canonical string only while a handle to it lives, so without
// these each collection would forget them and the next object would keep
// a copy again. The strings are few (namespaces, kinds, API versions,
// field managers, condition types, statuses and reasons).
var interned sync.Map // string → unique.Handle[string]

// intern is s's canonical copy: one for every equal string the cache holds.
func intern(s string) string {
	if s == "" {
		return s
	}
	if h, ok := interned.Load(s); ok {
		return h.(unique.Handle[string]).Value()
	}
	h := unique.Make(s)
	interned.Store(h.Value(), h)
	return h.Value()
}

// internMeta shares obj's namespace, its owners' API versions and kinds,
// and its labels and annotations maps.
func internMeta(obj metav1.Object) {
	obj.SetNamespace(intern(obj.GetNamespace()))
	obj.SetLabels(shareMap(obj.GetLabels()))
	obj.SetAnnotations(shareMap(obj.GetAnnotations()))
	for i := range obj.GetOwnerReferences() {
		ref := &obj.GetOwnerReferences()[i]
		ref.APIVersion, ref.Kind = intern(ref.APIVersion), intern(ref.Kind)
	}
}

// internManagedFields shares each entry's manager, operation, API version
// and fields type.
func internManagedFields(entries []metav1.ManagedFieldsEntry) {
	for i := range entries {
		e := &entries[i]
		e.Manager, e.APIVersion, e.FieldsType = intern(e.Manager), intern(e.APIVersion), intern(e.FieldsType)
		e.Operation = metav1.ManagedFieldsOperationType(intern(string(e.Operation)))
	}
}

// internConditions shares each condition's type, status and reason.
func internConditions(cs []metav1.Condition) {
	for i := range cs {
		c := &cs[i]
		c.Type, c.Status, c.Reason = intern(c.Type), metav1.ConditionStatus(intern(string(c.Status))), intern(c.Reason)
	}
}

// maxSharedMaps bounds the distinct maps shareMap keeps: maps of switches
// since deleted stay in it, so a cluster whose templates' labels and
// annotations all differ keeps at most this many (a few MiB), and the
// ones past it keep their own.
const maxSharedMaps = 4096

// sharedMaps are the label and annotation maps shareMap hands out, by
// their content (mapKey).
var sharedMaps = struct {
	sync.Mutex
	byContent map[string]map[string]string
}{byContent: map[string]map[string]string{}}

// shareMap is one map for every equal map of labels or annotations the
// cache holds: many switches' templates carry the same annotations, and
// every target the operator's label (a map of one entry costs about 300
// bytes). Maps of more than 16 entries keep their own.
func shareMap(m map[string]string) map[string]string {
	if len(m) == 0 || len(m) > 16 {
		return m
	}
	key := mapKey(m)
	sharedMaps.Lock()
	defer sharedMaps.Unlock()
	if shared, ok := sharedMaps.byContent[key]; ok {
		if maps.Equal(shared, m) {
			return shared
		}
		// Another content with the same key (an annotation's value may
		// hold a NUL): this map keeps its own.
		return m
	}
	if len(sharedMaps.byContent) < maxSharedMaps {
		sharedMaps.byContent[key] = m
	}
	return m
}

// mapKey is m's content as one string: its keys in order, each with its
// value, NUL-separated. Label keys and values hold no NUL, but an
// annotation's value may, so two maps can share a key: shareMap compares
// the maps themselves before it shares one.
func mapKey(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(m[k])
		b.WriteByte(0)
	}
	return b.String()
}

// shareTemplates shares the labels and annotations of a switch's two
// templates.
func shareTemplates(in any) {
	var metas []*v1beta1.TemplateMetadata
	switch sw := in.(type) {
	case *v1beta1.DynamicIngress:
		for _, v := range []*v1beta1.IngressVariant{sw.Spec.PassiveIngress, sw.Spec.ActiveIngress} {
			if v != nil {
				metas = append(metas, &v.Template.Metadata)
			}
		}
	case *v1beta1.DynamicHTTPRoute:
		for _, v := range []*v1beta1.HTTPRouteVariant{sw.Spec.PassiveRoute, sw.Spec.ActiveRoute} {
			if v != nil {
				metas = append(metas, &v.Template.Metadata)
			}
		}
	}
	for _, m := range metas {
		m.Labels, m.Annotations = shareMap(m.Labels), shareMap(m.Annotations)
	}
}

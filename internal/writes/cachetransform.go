package writes

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"unique"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// The manager's cache holds every switch, state and managed target; at
// 10 000 switches that is most of its memory (docs/benchmarks.md, "Scale").
// These transforms drop what the reconcilers never read before an object
// is stored.

// LastAppliedAnnotation is where client-side kubectl apply keeps a whole
// copy of the object.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// StripSwitch drops a switch's or a state's managedFields and the copy of
// it that client-side kubectl apply keeps in an annotation: the engine
// reads their spec, status and identity only. It shares the strings that
// many objects hold alike (interned).
func StripSwitch(in any) (any, error) {
	obj, err := meta.Accessor(in)
	if err != nil {
		return in, nil
	}
	if obj.GetManagedFields() != nil {
		obj.SetManagedFields(nil)
	}
	if a := obj.GetAnnotations(); a != nil {
		if _, ok := a[LastAppliedAnnotation]; ok {
			delete(a, LastAppliedAnnotation)
			obj.SetAnnotations(a)
		}
	}
	internMeta(obj)
	shareTemplates(in)
	if sw, ok := in.(interface{ SwitchStatus() *v1beta1.SwitchStatus }); ok {
		internConditions(sw.SwitchStatus().Conditions)
	}
	if st, ok := in.(interface {
		StateView() *v1beta1.DynamicIngressState
	}); ok {
		internConditions(st.StateView().Status.Conditions)
	}
	return in, nil
}

// The cache keeps every switch, state and managed target, and its objects
// are read-only: controller-runtime gives every Get and List a deep copy,
// and the lists that ask for none (client.UnsafeDisableDeepCopy) only
// read. So strings that many objects hold alike (the namespace, an owner's
// kind, a condition's type and reason, a field manager's name) can be one
// string for all of them, and so can the labels of a target that has only
// the operator's own: each object then keeps a pointer instead of a copy
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
		return shared
	}
	if len(sharedMaps.byContent) < maxSharedMaps {
		sharedMaps.byContent[key] = m
	}
	return m
}

// mapKey is m's content as one string: its keys in order, each with its
// value, NUL-separated (neither keys nor values hold a NUL).
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

// StripTarget keeps of a target's managedFields only the entries of the
// operator's field owner (what target.UpToDate and the hand-over of created
// fields read) and drops its status but what spec.served reads (a route's
// parents' Accepted conditions): an ingress controller's load balancer
// entries, a route's other conditions. The
// hand-over of created fields rewrites the whole managedFields list, so it
// reads the target from the API server, not from the cache
// (SwitchReconciler.syncTarget).
func StripTarget(in any) (any, error) {
	if obj, err := meta.Accessor(in); err == nil {
		if entries := obj.GetManagedFields(); len(entries) > 0 {
			ours := make([]metav1.ManagedFieldsEntry, 0, 1)
			for _, e := range entries {
				if e.Manager == v1beta1.FieldOwner {
					ours = append(ours, e)
				}
			}
			if len(ours) != len(entries) {
				obj.SetManagedFields(ours)
			}
			kept := obj.GetManagedFields()
			for i := range kept {
				e := &kept[i]
				e.Manager, e.APIVersion, e.FieldsType = intern(e.Manager), intern(e.APIVersion), intern(e.FieldsType)
				e.Operation = metav1.ManagedFieldsOperationType(intern(string(e.Operation)))
			}
		}
		internMeta(obj)
	}
	switch t := in.(type) {
	case *networkingv1.Ingress:
		t.Status = networkingv1.IngressStatus{}
	case *gatewayv1.HTTPRoute:
		t.Status = acceptanceOnly(t.Status)
	}
	return in, nil
}

var (
	_ toolscache.TransformFunc = StripSwitch
	_ toolscache.TransformFunc = StripTarget
)

// acceptanceOnly is a route's status with, for each parent, only its
// reference, controller and Accepted condition (what spec.served reads).
func acceptanceOnly(in gatewayv1.HTTPRouteStatus) gatewayv1.HTTPRouteStatus {
	if len(in.Parents) == 0 {
		return gatewayv1.HTTPRouteStatus{}
	}
	out := gatewayv1.HTTPRouteStatus{}
	out.Parents = make([]gatewayv1.RouteParentStatus, len(in.Parents))
	for i, p := range in.Parents {
		out.Parents[i] = gatewayv1.RouteParentStatus{ParentRef: p.ParentRef, ControllerName: p.ControllerName}
		for _, c := range p.Conditions {
			if c.Type == string(gatewayv1.RouteConditionAccepted) {
				out.Parents[i].Conditions = []metav1.Condition{{Type: c.Type, Status: c.Status, ObservedGeneration: c.ObservedGeneration, Reason: c.Reason}}
			}
		}
	}
	return out
}

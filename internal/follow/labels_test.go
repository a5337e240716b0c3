package follow_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/follow"
)

// namespaceMeta is a Namespace as the manager's metadata-only watch sees
// it, with these labels and annotations.
func namespaceMeta(resourceVersion string, labels, annotations map[string]string) *metav1.PartialObjectMetadata {
	ns := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: "shop", ResourceVersion: resourceVersion, Labels: labels, Annotations: annotations}}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	return ns
}

// TestLabelsChanged: the notifiers and switches of a namespace are looked
// at again when it is created (its labels become known) or its labels
// change, which a cluster state's grant reads; not on any other change of
// the Namespace, nor on its deletion.
func TestLabelsChanged(t *testing.T) {
	shop := map[string]string{"team": "shop"}
	update := func(old, updated *metav1.PartialObjectMetadata) func(predicate.Predicate) bool {
		return func(p predicate.Predicate) bool {
			return p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: updated})
		}
	}
	for _, tt := range []struct {
		name   string
		passes func(predicate.Predicate) bool
		want   bool
	}{
		{"a Namespace created with labels", func(p predicate.Predicate) bool {
			return p.Create(event.CreateEvent{Object: namespaceMeta("1", shop, nil)})
		}, true},
		{"a Namespace created without labels", func(p predicate.Predicate) bool {
			return p.Create(event.CreateEvent{Object: namespaceMeta("1", nil, nil)})
		}, true},
		{"a label added", update(namespaceMeta("1", nil, nil), namespaceMeta("2", shop, nil)), true},
		{"a second label added", update(namespaceMeta("1", shop, nil),
			namespaceMeta("2", map[string]string{"team": "shop", "tier": "gold"}, nil)), true},
		{"a label's value changed", update(namespaceMeta("1", shop, nil),
			namespaceMeta("2", map[string]string{"team": "payments"}, nil)), true},
		{"a label removed", update(namespaceMeta("1", map[string]string{"team": "shop", "tier": "gold"}, nil),
			namespaceMeta("2", shop, nil)), true},
		{"the last label removed", update(namespaceMeta("1", shop, nil), namespaceMeta("2", nil, nil)), true},
		{"a label renamed, same value", update(namespaceMeta("1", shop, nil),
			namespaceMeta("2", map[string]string{"owner": "shop"}, nil)), true},
		{"labels unchanged, an annotation added", update(namespaceMeta("1", shop, nil),
			namespaceMeta("2", shop, map[string]string{"note": "x"})), false},
		{"no labels before or after (nil and empty)", update(namespaceMeta("1", nil, nil),
			namespaceMeta("2", map[string]string{}, nil)), false},
		{"a Namespace deleted", func(p predicate.Predicate) bool {
			return p.Delete(event.DeleteEvent{Object: namespaceMeta("1", shop, nil)})
		}, false},
		{"a generic event", func(p predicate.Predicate) bool {
			return p.Generic(event.GenericEvent{Object: namespaceMeta("1", shop, nil)})
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.passes(follow.LabelsChanged()); got != tt.want {
				t.Errorf("LabelsChanged passes = %v, want %v", got, tt.want)
			}
		})
	}
}

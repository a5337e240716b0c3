package suite

import (
	"bytes"
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// Find returns the rendered objects of a kind.
func Find(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// Only returns the one rendered object of a kind, decoded into T.
func Only[T any](t testing.TB, objs []*unstructured.Unstructured, kind string) *T {
	t.Helper()
	found := Find(objs, kind)
	if len(found) != 1 {
		t.Fatalf("%d objects of kind %s, want 1", len(found), kind)
	}
	return Decode[T](t, found[0])
}

// Named returns the rendered object of a kind and name, decoded into T.
func Named[T any](t testing.TB, objs []*unstructured.Unstructured, kind, name string) *T {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return Decode[T](t, o)
		}
	}
	t.Fatalf("no %s %s", kind, name)
	return nil
}

// Decode converts an object into T, refusing fields T does not know (a
// misspelt field in a template would otherwise go unnoticed).
func Decode[T any](t testing.TB, o *unstructured.Unstructured) *T {
	t.Helper()
	raw, err := json.Marshal(o.Object)
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("decoding the %s %s: %v", o.GetKind(), o.GetName(), err)
	}
	return out
}

// SelectsPods reports whether a label selector selects the Deployment's
// pods; an empty selector selects nothing here.
func SelectsPods(t testing.TB, sel *metav1.LabelSelector, deploy *appsv1.Deployment) bool {
	t.Helper()
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	return s.Matches(labels.Set(deploy.Spec.Template.Labels))
}

// Package builders makes the operator's objects for tests: fluent wrappers
// in the style of "builder(ns, name).Field(v).Obj()", shared by unit,
// envtest and end-to-end tests.
//
// It imports neither testing nor gomega, so any test package can use it.
// Every builder wraps the object it builds and changes it in place; Obj
// returns a pointer to that object, not a copy, so call Obj once per
// builder and keep building on a fresh builder for another object.
package builders

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// objectMeta names an object in a namespace.
func objectMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name}
}

// typeMeta is the apiVersion and kind of one of the operator's kinds.
func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: kind}
}

// toYAML renders obj as YAML; it panics when obj cannot be marshalled,
// which for the operator's own types is a programming error.
func toYAML(obj any) string {
	out, err := yaml.Marshal(obj)
	if err != nil {
		panic(fmt.Sprintf("builders: marshalling %T to YAML: %v", obj, err))
	}
	return string(out)
}

// setKey sets m[k] = v, making the map when it is nil.
func setKey(m *map[string]string, k, v string) {
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[k] = v
}

package switches

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestPreconditionFailed(t *testing.T) {
	ingress := schema.GroupKind{Group: "networking.k8s.io", Kind: "Ingress"}
	uid := field.Invalid(field.NewPath("metadata", "uid"), "9fb8284f", "field is immutable")
	rules := field.Invalid(field.NewPath("spec", "rules").Index(0).Child("host"), "-a-", "a lowercase RFC 1123 subdomain must consist of...")
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		// What the API server answers an apply naming the UID of a
		// target deleted and created again (it lists the cause twice).
		{"the target created again", apierrors.NewInvalid(ingress, "web", field.ErrorList{uid, uid}), true},
		{"the same, wrapped", fmt.Errorf("applying Ingress shop/web: %w", apierrors.NewInvalid(ingress, "web", field.ErrorList{uid})), true},
		{"the target changed or gone", apierrors.NewConflict(schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses"}, "web", errors.New("uid mismatch")), true},
		{"a template the API server refuses", apierrors.NewInvalid(ingress, "web", field.ErrorList{rules}), false},
		{"a refused template, and the target created again", apierrors.NewInvalid(ingress, "web", field.ErrorList{uid, rules}), false},
		{"Invalid without causes", apierrors.NewInvalid(ingress, "web", nil), false},
		{"another error", apierrors.NewForbidden(schema.GroupResource{Resource: "ingresses"}, "web", errors.New("no")), false},
		{"no error", nil, false},
	} {
		if got := preconditionFailed(tc.err); got != tc.want {
			t.Errorf("%s: preconditionFailed = %v, want %v", tc.name, got, tc.want)
		}
	}
}

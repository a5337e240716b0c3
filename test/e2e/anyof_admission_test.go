package e2e

import (
	"fmt"
	"testing"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestAnyOfAdmission: kubectl apply of a switch whose anyOf or allOf is
// not one the operator can follow fails with one line naming the field
// path, whether the CRD's schema or the webhook refuses it, and creates
// nothing; a valid anyOf is accepted.
func TestAnyOfAdmission(t *testing.T) {
	name, label, value := clusterState(t, "200")
	ns := newNamespace(t, "anyof-admission")
	platform := builders.ClusterEntry("platform", name, "503")
	window := builders.Entry("window", "shop-maintenance", "200")
	anyOf := func(di string, entries ...v1beta1.StateEntry) *builders.DynamicIngressWrapper {
		return webIngress(ns, di, "").AnyOf(entries...)
	}

	mixed := anyOf("mixed", window)
	mixed.State("flag").ExpectCode("200")
	both := builders.ClusterEntry("both", name, "503")
	both.State = "flag"
	badExpression := window
	badExpression.Expected = v1beta1.ExpectedResponse{Expression: `response.code == "503"`}
	nine := make([]v1beta1.StateEntry, 9)
	for i := range nine {
		nine[i] = builders.Entry(fmt.Sprintf("e%d", i), "flag", "200")
	}
	grant := fmt.Sprintf(`ClusterDynamicIngressState %q does not admit namespace %q: its spec.followers.namespaces admits the namespaces whose labels match "%s=%s"`, name, ns, label, value)

	// The schema's and the CRD's CEL rules run before the webhook: their
	// messages are the API server's.
	tests := []struct {
		name, object, manifest, stderr string
	}{
		{"both anyOf and state", "di/mixed", mixed.YAML(),
			`The DynamicIngress "mixed" is invalid: spec: Invalid value: anyOf and allOf replace state, stateRef and expected: set a list or a single state, not both`},
		{"both anyOf and allOf", "di/lists", func() string {
			w := anyOf("lists", window)
			w.Obj().Spec.AllOf = []v1beta1.StateEntry{platform}
			return w.YAML()
		}(), `The DynamicIngress "lists" is invalid: spec: Invalid value: at most one of anyOf and allOf may be set`},
		{"an entry with both state and stateRef", "di/both", anyOf("both", window, both).YAML(),
			`The DynamicIngress "both" is invalid: spec.anyOf[1]: Invalid value: exactly one of state and stateRef must be set`},
		{"an entry's expression that does not compile", "di/expression", anyOf("expression", platform, badExpression).YAML(),
			`The DynamicIngress "expression" is invalid: spec.anyOf[1].expected.expression: Invalid value: "response.code == \"503\"": compilation failed: ERROR: <input>:1:15: found no matching overload for '_==_' applied to '(int, string)'` + "\n" +
				` | response.code == "503"` + "\n" +
				` | ..............^`},
		{"9 entries", "di/nine", anyOf("nine", nine...).YAML(),
			"The DynamicIngress \"nine\" is invalid: \n" +
				"* spec.anyOf: Too many: 9: must have at most 8 items\n" +
				"* <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"},
		{"an empty anyOf", "di/empty", fmt.Sprintf(`apiVersion: ingress.dynamicingress.io/v1beta1
kind: DynamicIngress
metadata: {namespace: %s, name: empty}
spec:
  target: {name: empty}
  anyOf: []
  activeIngress:
    template:
      spec: {defaultBackend: {service: {name: sorry, port: {number: 80}}}}
`, ns),
			`The DynamicIngress "empty" is invalid: spec.anyOf: Invalid value: 0: spec.anyOf in body should have at least 1 items`},
		{"a name that is not a DNS label", "di/badname", anyOf("badname", builders.Entry("Window", "flag", "200")).YAML(),
			`The DynamicIngress "badname" is invalid: spec.anyOf[0].name: Invalid value: "Window": spec.anyOf[0].name in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'`},
		{"a duplicate name", "di/duplicate", anyOf("duplicate", window, platform, window).YAML(),
			`The DynamicIngress "duplicate" is invalid: spec.anyOf[2]: Duplicate value: {"name":"window"}`},
		{"an entry's stateRef to a cluster state that does not admit the namespace", "di/outside", anyOf("outside", window, platform).YAML(),
			`The DynamicIngress "outside" is invalid: spec.anyOf[1].stateRef: Forbidden: ` + grant},
		{"an allOf entry of a DynamicHTTPRoute, likewise", "dhr/outside", webRoute(ns, "outside", "").AllOf(platform).YAML(),
			`The DynamicHTTPRoute "outside" is invalid: spec.allOf[0].stateRef: Forbidden: ` + grant},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			applyRefused(t, ns, tt.object, tt.manifest, tt.stderr)
		})
	}

	// Accepted: a list of a namespaced state that does not exist yet and a
	// cluster state, once the namespace is admitted.
	kubectl(t, "", "label", "namespace", ns, label+"="+value)
	apply(t, anyOf("site", window, platform).YAML())
	got := kubectl(t, "", "get", "-n", ns, "di", "site", "-o", "jsonpath={.spec.anyOf[*].name}")
	if got != "window platform" {
		t.Errorf("spec.anyOf names of di %s/site: %q, want %q", ns, got, "window platform")
	}
}

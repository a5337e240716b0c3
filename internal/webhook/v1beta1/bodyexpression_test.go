package v1beta1

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/match"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
)

// TestValidateBodyExpression: what kubectl prints for a probe's
// bodyExpression that does not compile or costs too much, on
// spec.probe.bodyExpression with the compiler's message.
func TestValidateBodyExpression(t *testing.T) {
	const prefix = `DynamicIngressState.ingress.dynamicingress.io "flags" is invalid: `
	tests := []struct {
		name, expr, want string
	}{
		{"a Prometheus value", `size(response.json.data.result) == 0 ? "0" : response.json.data.result[0].value[1]`, ""},
		{"any result type", `response.code`, ""},
		{"a syntax error", `response.json.data.result[0`,
			prefix + `spec.probe.bodyExpression: Invalid value: "response.json.data.result[0": compilation failed: ERROR: <input>:1:28: Syntax error: missing ']' at '<EOF>'` + "\n" +
				" | response.json.data.result[0\n" +
				" | ...........................^"},
		{"a type error", `response.code + "x"`,
			prefix + `spec.probe.bodyExpression: Invalid value: "response.code + \"x\"": compilation failed: ERROR: <input>:1:15: found no matching overload for '_+_' applied to '(int, string)'` + "\n" +
				" | response.code + \"x\"\n" +
				" | ..............^"},
		{"over the cost budget", `response.json.a.map(x, response.json.b.map(y, response.json.c.map(z, x)))`,
			prefix + `spec.probe.bodyExpression: Invalid value: "response.json.a.map(x, response.json.b.map(y, response.json.c.map(z, x)))": ` +
				"estimated cost beyond any bound exceeds the limit 10000000: the cost is estimated for a response body of up to 3145728 bytes; " +
				"simplify the expression, e.g. avoid nested loops over response.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := validProbeState()
			state.Spec.Probe.BodyExpression = tt.expr
			err := invalid(state.Name, "DynamicIngressState", ValidateDynamicIngressState(state, probe.Guard{}))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("what kubectl prints (-want +got):\n%s", diff)
			}
			if tt.want == "" && match.CompileBodyExpression(tt.expr) != nil {
				t.Errorf("accepted here but not by match.CompileBodyExpression")
			}
		})
	}
}

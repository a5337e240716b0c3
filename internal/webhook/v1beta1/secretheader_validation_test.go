package v1beta1

import (
	"testing"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestValidateHeaderValueOrValueFrom checks the webhook's own rule, which
// repeats the CRD's for a manager that validates objects the API server
// did not (a dry run of a stored object).
func TestValidateHeaderValueOrValueFrom(t *testing.T) {
	both := builders.ProbedState("shop", "flags", "https://flags.example.com/").HeaderFromSecret("Authorization", "t", "k").Obj()
	both.Spec.Probe.Headers[0].Value = "x"
	neither := builders.ProbedState("shop", "flags", "https://flags.example.com/").Header("Authorization", "").Obj()
	for _, tt := range []struct {
		name string
		obj  *v1beta1.DynamicIngressState
		want string
	}{
		{"both", both, "spec.probe.headers[0]: Invalid value: exactly one of value and valueFrom must be set, not both"},
		{"neither", neither, "spec.probe.headers[0]: Required value: exactly one of value and valueFrom must be set"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			DefaultDynamicIngressState(tt.obj)
			errs := ValidateDynamicIngressState(tt.obj, probe.Guard{})
			if got := errs.ToAggregate(); got == nil || got.Error() != tt.want {
				t.Errorf("errors = %v, want %q", got, tt.want)
			}
		})
	}
}

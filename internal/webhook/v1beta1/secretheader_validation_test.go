package v1beta1

import (
	"testing"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestValidateHeaderValueOrValueFrom checks the webhook's own rules: it
// repeats the CRD's "not both" in the same words, leaves "neither" to the
// CRD (an empty literal value reads as none in Go), and checks the Secret
// reference's name and key.
func TestValidateHeaderValueOrValueFrom(t *testing.T) {
	state := func() *builders.StateWrapper {
		return builders.ProbedState("shop", "flags", "https://flags.example.com/")
	}
	both := state().HeaderFromSecret("Authorization", "t", "k").Obj()
	both.Spec.Probe.Headers[0].Value = "x"
	for _, tt := range []struct {
		name string
		obj  *v1beta1.DynamicIngressState
		want string
	}{
		{"both", both, "spec.probe.headers[0]: Invalid value: exactly one of value and valueFrom must be set"},
		{"an empty literal", state().Header("X-Empty", "").Obj(), ""},
		{"a Secret name that cannot exist", state().HeaderFromSecret("Authorization", "team/token", "k").Obj(),
			`spec.probe.headers[0].valueFrom.secretKeyRef.name: Invalid value: "team/token": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{"a key that cannot exist", state().HeaderFromSecret("Authorization", "token", "a key").Obj(),
			`spec.probe.headers[0].valueFrom.secretKeyRef.key: Invalid value: "a key": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			DefaultDynamicIngressState(tt.obj)
			got := ""
			if err := ValidateDynamicIngressState(tt.obj, probe.Guard{}).ToAggregate(); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("errors = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSensitiveHeader(t *testing.T) {
	for _, tt := range []struct {
		name string
		want bool
	}{
		{"Authorization", true},
		{"proxy-authorization", true},
		{"COOKIE", true},
		{"X-Api-Key", true},
		{"x-auth-token", true},
		{"X-Client-Secret", true},
		{"Accept", false},
		{"Host", false},
		{"X-Tenant", false},
		{"Set-Cookie-Policy", false}, // only the name Cookie itself
	} {
		if got := sensitiveHeader(tt.name); got != tt.want {
			t.Errorf("sensitiveHeader(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

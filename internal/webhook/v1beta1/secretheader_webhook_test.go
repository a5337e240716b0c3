package v1beta1_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestProbeHeaderValues: a header has exactly one of value and valueFrom,
// and a literal value in a header that looks like a credential is accepted
// with a warning that suggests a Secret, as kubectl prints them.
func TestProbeHeaderValues(t *testing.T) {
	c, recorder := warningClient(t)
	ns := newNamespace(t)
	const advice = "has a literal value that anyone who can read this DynamicIngressState can read; put it in a Secret and use valueFrom.secretKeyRef"
	state := func(name string) *builders.StateWrapper {
		return builders.ProbedState(ns, name, "https://flags.example.com/api")
	}
	tests := []struct {
		name    string
		obj     *v1beta1.DynamicIngressState
		want    []string
		wantErr string
	}{
		{"a literal Authorization", state("literal-auth").Header("Authorization", "Bearer s3cr3t").Obj(),
			[]string{`spec.probe.headers[0].value: header "Authorization" ` + advice}, ""},
		{"names holding token, key or secret, any case", state("literal-names").Header("Accept", "application/json").
			Header("X-Api-KEY", "k").Header("x-auth-token", "t").Header("Cookie", "c").Obj(),
			[]string{`spec.probe.headers[1].value: header "X-Api-KEY" ` + advice, `spec.probe.headers[2].value: header "x-auth-token" ` + advice,
				`spec.probe.headers[3].value: header "Cookie" ` + advice}, ""},
		{"a header from a Secret", state("from-secret").HeaderFromSecret("Authorization", "flags-token", "authorization").Obj(), nil, ""},
		{"both", func() *v1beta1.DynamicIngressState {
			s := state("both").HeaderFromSecret("Authorization", "flags-token", "authorization").Obj()
			s.Spec.Probe.Headers[0].Value = "Bearer s3cr3t"
			return s
		}(), nil, `DynamicIngressState.ingress.dynamicingress.io "both" is invalid: spec.probe.headers[0]: Invalid value: exactly one of value and valueFrom must be set`},
		{"neither", state("neither").Header("X-Empty", "").Obj(), nil,
			`DynamicIngressState.ingress.dynamicingress.io "neither" is invalid: spec.probe.headers[0]: Invalid value: exactly one of value and valueFrom must be set`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recorder.take()
			err := c.Create(context.Background(), tt.obj)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Errorf("create: %q, want %q", got, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, recorder.take()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

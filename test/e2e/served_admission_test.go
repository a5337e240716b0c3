package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestServedAdmission: kubectl apply of a switch whose spec.served the
// operator cannot check fails with one line naming the field path, whether
// the CRD's schema or the webhook refuses it, and creates nothing; a valid
// one with a literal credential in a header is accepted with a warning.
func TestServedAdmission(t *testing.T) {
	ns := newNamespace(t, "served-admission")
	served := func() *builders.ServedWrapper {
		return builders.Served("https://shop.example.com/", "503", "200")
	}

	tests := []struct {
		name, object, manifest, stderr string
	}{
		{"a period under 250ms", "di/fast", webIngress(ns, "fast", "flag").ExpectCode("503").Served(served().Period(100 * time.Millisecond)).YAML(),
			`The DynamicIngress "fast" is invalid: spec.served.period: Invalid value: "100ms": must be at least 250ms and at most 10s`},
		{"a timeout over 30m, on a DynamicHTTPRoute", "dhr/patient", webRoute(ns, "patient", "flag").ExpectCode("503").Served(served().Timeout(time.Hour)).YAML(),
			`The DynamicHTTPRoute "patient" is invalid: spec.served.timeout: Invalid value: "1h0m0s": must be at least 5s and at most 30m`},
		// The manager runs with --probe-deny-cidrs=169.254.0.0/16,...
		{"a URL the address guard refuses", "di/metadata", webIngress(ns, "metadata", "flag").ExpectCode("503").
			Served(builders.Served("http://169.254.169.254/latest/meta-data?token=x", "503", "200")).YAML(),
			`The DynamicIngress "metadata" is invalid: spec.served.url: Invalid value: "http://169.254.169.254/latest/meta-data": address 169.254.169.254 is inside denied range 169.254.0.0/16 (the manager's --probe-deny-cidrs)`},
		// The defaulting webhook writes an absent active back as {} and an
		// absent url as "" (the Go fields have no omitempty), which the
		// CRD's rules refuse before the validating webhook runs.
		{"no active", "di/noactive", fmt.Sprintf(`apiVersion: ingress.dynamicingress.io/v1beta1
kind: DynamicIngress
metadata: {namespace: %s, name: noactive}
spec:
  target: {name: noactive}
  state: flag
  expected: {statusCode: "503"}
  activeIngress:
    template:
      spec: {defaultBackend: {service: {name: sorry, port: {number: 80}}}}
  served:
    url: https://shop.example.com/
    passive: {statusCode: "200"}
`, ns), "The DynamicIngress \"noactive\" is invalid: \n* spec.served.active: Required value\n* <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"},
		{"no url", "di/nourl", fmt.Sprintf(`apiVersion: ingress.dynamicingress.io/v1beta1
kind: DynamicIngress
metadata: {namespace: %s, name: nourl}
spec:
  target: {name: nourl}
  state: flag
  expected: {statusCode: "503"}
  activeIngress:
    template:
      spec: {defaultBackend: {service: {name: sorry, port: {number: 80}}}}
  served:
    active: {statusCode: "503"}
    passive: {statusCode: "200"}
`, ns), "The DynamicIngress \"nourl\" is invalid: \n* spec.served.url: Required value\n* <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			applyRefused(t, ns, tt.object, tt.manifest, tt.stderr)
		})
	}

	// Accepted, with the warning kubectl prints for a literal credential.
	manifest := webIngress(ns, "site", "flag").ExpectCode("503").
		Served(served().Period(250*time.Millisecond).Timeout(30*time.Minute).Header("Authorization", "Bearer s3cr3t")).YAML()
	out, stderr, err := runKubectl(manifest, "apply", "-f", "-")
	if err != nil {
		t.Fatalf("kubectl apply of di/site: %v\n%s%s", err, out, stderr)
	}
	want := `Warning: spec.served.headers[0].value: header "Authorization" has a literal value that anyone who can read this DynamicIngress can read; put it in a Secret and use valueFrom.secretKeyRef`
	if got := strings.TrimSpace(stderr); got != want {
		t.Errorf("kubectl apply of di/site printed:\n%s\nwant:\n%s", got, want)
	}
	if got := kubectl(t, "", "get", "-n", ns, "di", "site", "-o", "jsonpath={.spec.served.url}"); got != "https://shop.example.com/" {
		t.Errorf("spec.served.url of di %s/site: %q", ns, got)
	}
}

package v1beta1

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestValidateServed: spec.served is refused at its own field path, on both
// kinds: its URL and headers as a probe's (the address guard and the allow
// list), its matchers as expected, period and timeout within their range.
func TestValidateServed(t *testing.T) {
	// The metadata address is allowed, to show that the deny list holds
	// even so.
	guard, err := probe.ParseGuard(probe.DefaultDenyCIDRs, "*.example.com,169.254.169.254")
	if err != nil {
		t.Fatal(err)
	}
	served := func() *builders.ServedWrapper {
		return builders.Served("https://shop.example.com/", "503", "200")
	}
	tests := []struct {
		name  string
		check *builders.ServedWrapper
		want  []string
	}{
		{"valid", served(), nil},
		{"valid at the bounds", served().Period(250 * time.Millisecond).Timeout(30 * time.Minute), nil},
		{"valid at the other bounds", served().Period(10 * time.Second).Timeout(5 * time.Second), nil},
		{"valid with a Host header the allow list admits and a header from a Secret",
			served().Header("Host", "shop.example.com").HeaderFromSecret("Authorization", "shop-token", "token"), nil},
		{"no url", func() *builders.ServedWrapper { s := served(); s.URL = ""; return s }(),
			[]string{"spec.served.url: Required value: the absolute http or https URL, reached through the data plane, that answers as the current mode's shape once it is served"}},
		{"a relative url", builders.Served("/healthz", "503", "200"),
			[]string{`spec.served.url: Invalid value: "/healthz": must be an absolute http or https URL with a host`}},
		{"an ftp url, shown without its query", builders.Served("ftp://shop.example.com/x?token=s3cr3t", "503", "200"),
			[]string{`spec.served.url: Invalid value: "ftp://shop.example.com/x": must be an absolute http or https URL with a host`}},
		{"a url the guard denies", builders.Served("http://169.254.169.254/latest/meta-data", "503", "200"),
			[]string{`spec.served.url: Invalid value: "http://169.254.169.254/latest/meta-data": address 169.254.169.254 is inside denied range 169.254.0.0/16 (the manager's --probe-deny-cidrs)`}},
		{"a url outside the allow list", builders.Served("https://shop.example.org/", "503", "200"),
			[]string{`spec.served.url: Invalid value: "https://shop.example.org/": host shop.example.org is not in the allowed hosts (the manager's --probe-allow-hosts)`}},
		{"a Host header outside the allow list", served().Header("Host", "internal.corp:8080"),
			[]string{`spec.served.headers[0].value: Invalid value: host internal.corp is not in the allowed hosts (the manager's --probe-allow-hosts)`}},
		{"a header name with a colon, a value ending in a newline",
			served().Header("Authorization: Bearer", "x").Header("X-Tenant", "shop\n"),
			[]string{"spec.served.headers[0].name: Invalid value: must be the header name alone, without a colon (what follows it goes in value); the name is not shown, it may hold a secret",
				"spec.served.headers[1].value: Invalid value: must not end with a newline (a YAML block scalar `|` adds one: use `|-` or a quoted string); the value is not shown, it may hold a secret"}},
		{"a header with both value and valueFrom", func() *builders.ServedWrapper {
			s := served().HeaderFromSecret("Authorization", "shop-token", "token")
			s.Headers[0].Value = "Bearer s3cr3t"
			return s
		}(), []string{"spec.served.headers[0]: Invalid value: exactly one of value and valueFrom must be set"}},
		{"no active", func() *builders.ServedWrapper { s := served(); s.Active = v1beta1.ExpectedResponse{}; return s }(),
			[]string{"spec.served.active: Required value: at least one of statusCode, body and expression must be set"}},
		{"no passive, and an active code 600 with an unknown bodyMatch", func() *builders.ServedWrapper {
			s := builders.Served("https://shop.example.com/", "600", "")
			s.Active.BodyMatch = "Fuzzy"
			return s
		}(), []string{
			`spec.served.active.statusCode: Invalid value: "600": must be an HTTP status code: three digits from 100 to 599`,
			`spec.served.active.bodyMatch: Unsupported value: "Fuzzy": supported values: "Exact", "Contains"`,
			"spec.served.passive: Required value: at least one of statusCode, body and expression must be set"}},
		{"a passive expression that does not compile", func() *builders.ServedWrapper {
			s := served()
			s.Passive = v1beta1.ExpectedResponse{Expression: `response.code == "200"`}
			return s
		}(), []string{"spec.served.passive.expression: Invalid value: \"response.code == \\\"200\\\"\": compilation failed: ERROR: <input>:1:15: found no matching overload for '_==_' applied to '(int, string)'\n | response.code == \"200\"\n | ..............^"}},
		{"a period under 250ms", served().Period(100 * time.Millisecond),
			[]string{`spec.served.period: Invalid value: "100ms": must be at least 250ms and at most 10s`}},
		{"a period over 10s", served().Period(time.Minute),
			[]string{`spec.served.period: Invalid value: "1m0s": must be at least 250ms and at most 10s`}},
		{"a period of 0s", served().Period(0),
			[]string{`spec.served.period: Invalid value: "0s": must be at least 250ms and at most 10s`}},
		{"a timeout under 5s", served().Timeout(time.Second),
			[]string{`spec.served.timeout: Invalid value: "1s": must be at least 5s and at most 30m`}},
		{"a timeout over 30m", served().Timeout(time.Hour),
			[]string{`spec.served.timeout: Invalid value: "1h0m0s": must be at least 5s and at most 30m`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			di := builders.DynamicIngress("shop", "storefront").State("killswitch").ExpectCode("503").
				Active(builders.IngressTo("shop.example.com", "sorry")).Served(tt.check).Obj()
			if diff := cmp.Diff(tt.want, errorTexts(ValidateDynamicIngress(nil, di, guard))); diff != "" {
				t.Errorf("DynamicIngress (-want +got):\n%s", diff)
			}
			dhr := builders.DynamicHTTPRoute("shop", "storefront").State("killswitch").ExpectCode("503").
				Active(builders.RouteTo("shop.example.com", "sorry")).Served(tt.check).Obj()
			if diff := cmp.Diff(tt.want, errorTexts(ValidateDynamicHTTPRoute(nil, dhr, guard))); diff != "" {
				t.Errorf("DynamicHTTPRoute (-want +got):\n%s", diff)
			}
		})
	}
}

// TestServedHeaderWarnings: a literal value in a header of spec.served that
// looks like a credential is accepted with a warning naming the switch's
// kind, as for a probe's headers.
func TestServedHeaderWarnings(t *testing.T) {
	check := builders.Served("https://shop.example.com/", "503", "200").
		Header("Accept", "text/html").Header("Authorization", "Bearer s3cr3t").HeaderFromSecret("X-Api-Key", "shop-token", "key")
	di := builders.DynamicIngress("shop", "storefront").State("killswitch").ExpectCode("503").
		Active(builders.IngressTo("shop.example.com", "sorry")).Served(check).Obj()
	want := []string{`spec.served.headers[1].value: header "Authorization" has a literal value that anyone who can read this DynamicIngress can read; put it in a Secret and use valueFrom.secretKeyRef`}
	if diff := cmp.Diff(want, []string(switchWarnings(target.Ingress{}, di))); diff != "" {
		t.Errorf("DynamicIngress warnings (-want +got):\n%s", diff)
	}
	dhr := builders.DynamicHTTPRoute("shop", "storefront").State("killswitch").ExpectCode("503").
		Active(builders.RouteTo("shop.example.com", "sorry")).Served(check).Obj()
	want = []string{`spec.served.headers[1].value: header "Authorization" has a literal value that anyone who can read this DynamicHTTPRoute can read; put it in a Secret and use valueFrom.secretKeyRef`}
	if diff := cmp.Diff(want, []string(switchWarnings(target.HTTPRoute{}, dhr))); diff != "" {
		t.Errorf("DynamicHTTPRoute warnings (-want +got):\n%s", diff)
	}
}

// errorTexts are the errors as kubectl prints each one after the object's
// name.
func errorTexts(errs []*field.Error) []string {
	var texts []string
	for _, e := range errs {
		texts = append(texts, e.Error())
	}
	return texts
}

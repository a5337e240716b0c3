package v1beta1

import (
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

func validDynamicIngress() *v1beta1.DynamicIngress {
	return &v1beta1.DynamicIngress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "storefront"},
		Spec: v1beta1.DynamicIngressSpec{
			Target:        v1beta1.TargetReference{Name: "storefront", Namespace: "shop"},
			ActiveIngress: &v1beta1.IngressVariant{Template: v1beta1.IngressTemplate{Spec: networkingv1.IngressSpec{}}},
			State:         "killswitch",
			Expected:      v1beta1.ExpectedResponse{StatusCode: "200"},
		},
	}
}

func TestValidateDynamicIngress(t *testing.T) {
	body := "ok"
	tests := []struct {
		name   string
		old    func(*v1beta1.DynamicIngress)
		mutate func(*v1beta1.DynamicIngress)
		want   field.ErrorList
	}{
		{name: "valid", mutate: func(*v1beta1.DynamicIngress) {}},
		{name: "valid with body only", mutate: func(di *v1beta1.DynamicIngress) { di.Spec.Expected = v1beta1.ExpectedResponse{Body: &body} }},
		{name: "valid with target namespace left empty", mutate: func(di *v1beta1.DynamicIngress) { di.Spec.Target.Namespace = "" }},
		{
			name:   "target namespace elsewhere",
			mutate: func(di *v1beta1.DynamicIngress) { di.Spec.Target.Namespace = "kube-system" },
			want: field.ErrorList{field.Forbidden(field.NewPath("spec", "target", "namespace"),
				`must be the DynamicIngress's own namespace "shop", not "kube-system": a DynamicIngress manages an Ingress of its own namespace only`)},
		},
		{
			name:   "target name missing",
			mutate: func(di *v1beta1.DynamicIngress) { di.Spec.Target.Name = "" },
			want:   field.ErrorList{field.Required(field.NewPath("spec", "target", "name"), "the name of the Ingress to create and own")},
		},
		{
			name:   "target name not a DNS name",
			mutate: func(di *v1beta1.DynamicIngress) { di.Spec.Target.Name = "Store_Front" },
			want: field.ErrorList{field.Invalid(field.NewPath("spec", "target", "name"), "Store_Front",
				"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")},
		},
		{
			name:   "target renamed",
			old:    func(di *v1beta1.DynamicIngress) { di.Spec.Target.Name = "old-name" },
			mutate: func(*v1beta1.DynamicIngress) {},
			want: field.ErrorList{field.Invalid(field.NewPath("spec", "target"), "shop/storefront",
				"field is immutable (it was shop/old-name): create a new DynamicIngress for another target")},
		},
		{
			name:   "target namespace defaulted on update is no change",
			old:    func(di *v1beta1.DynamicIngress) { di.Spec.Target.Namespace = "" },
			mutate: func(*v1beta1.DynamicIngress) {},
		},
		{
			name:   "both templates null",
			mutate: func(di *v1beta1.DynamicIngress) { di.Spec.ActiveIngress, di.Spec.PassiveIngress = nil, nil },
			want: field.ErrorList{field.Required(field.NewPath("spec"),
				"at least one of passiveIngress and activeIngress must be set (null means no Ingress in that mode)")},
		},
		{
			name:   "empty expected",
			mutate: func(di *v1beta1.DynamicIngress) { di.Spec.Expected = v1beta1.ExpectedResponse{} },
			want:   field.ErrorList{field.Required(field.NewPath("spec", "expected"), "at least one of statusCode, body and expression must be set")},
		},
		{
			name:   "status code 600",
			mutate: func(di *v1beta1.DynamicIngress) { di.Spec.Expected.StatusCode = "600" },
			want: field.ErrorList{field.Invalid(field.NewPath("spec", "expected", "statusCode"), "600",
				"must be an HTTP status code: three digits from 100 to 599")},
		},
		{
			name:   "status code 99",
			mutate: func(di *v1beta1.DynamicIngress) { di.Spec.Expected.StatusCode = "099" },
			want: field.ErrorList{field.Invalid(field.NewPath("spec", "expected", "statusCode"), "099",
				"must be an HTTP status code: three digits from 100 to 599")},
		},
		{
			name:   "neither state nor stateRef",
			mutate: func(di *v1beta1.DynamicIngress) { di.Spec.State = "" },
			want: field.ErrorList{field.Required(field.NewPath("spec"),
				"exactly one of state and stateRef must be set: state names a DynamicIngressState in the same namespace, stateRef a state of either kind")},
		},
		{
			name: "both state and stateRef",
			mutate: func(di *v1beta1.DynamicIngress) {
				di.Spec.StateRef = &v1beta1.StateReference{Kind: v1beta1.StateKindCluster, Name: "global"}
			},
			want: field.ErrorList{field.Forbidden(field.NewPath("spec", "stateRef"), "exactly one of state and stateRef must be set, and state is set")},
		},
		{
			name: "stateRef to a cluster state",
			mutate: func(di *v1beta1.DynamicIngress) {
				di.Spec.State, di.Spec.StateRef = "", &v1beta1.StateReference{Kind: v1beta1.StateKindCluster, Name: "global"}
			},
		},
		{
			name: "stateRef without a kind names a DynamicIngressState",
			mutate: func(di *v1beta1.DynamicIngress) {
				di.Spec.State, di.Spec.StateRef = "", &v1beta1.StateReference{Name: "flag"}
			},
		},
		{
			name: "stateRef of an unknown kind, and a name no object can have",
			mutate: func(di *v1beta1.DynamicIngress) {
				di.Spec.State, di.Spec.StateRef = "", &v1beta1.StateReference{Kind: "Flag", Name: "Global_Switch"}
			},
			want: field.ErrorList{
				field.NotSupported(field.NewPath("spec", "stateRef", "kind"), v1beta1.StateKind("Flag"), []v1beta1.StateKind{v1beta1.StateKindNamespaced, v1beta1.StateKindCluster}),
				field.Invalid(field.NewPath("spec", "stateRef", "name"), "Global_Switch", "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			di := validDynamicIngress()
			tt.mutate(di)
			var old *v1beta1.DynamicIngress
			if tt.old != nil {
				old = validDynamicIngress()
				tt.old(old)
			}
			if diff := cmp.Diff(tt.want, ValidateDynamicIngress(old, di, probe.Guard{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func validProbeState() *v1beta1.DynamicIngressState {
	state := &v1beta1.DynamicIngressState{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "flags"},
		Spec:       v1beta1.DynamicIngressStateSpec{Probe: &v1beta1.HTTPProbe{URL: "https://flags.example.com/api/v1/flags/killswitch"}},
	}
	DefaultDynamicIngressState(state)
	return state
}

func TestValidateDynamicIngressState(t *testing.T) {
	guard, err := probe.ParseGuard(probe.DefaultDenyCIDRs, "")
	if err != nil {
		t.Fatal(err)
	}
	dur := func(s string) *metav1.Duration { d, _ := time.ParseDuration(s); return &metav1.Duration{Duration: d} }
	probePath := field.NewPath("spec", "probe")
	tests := []struct {
		name   string
		mutate func(*v1beta1.DynamicIngressState)
		guard  *probe.Guard
		want   field.ErrorList
	}{
		{name: "valid probe", mutate: func(*v1beta1.DynamicIngressState) {}},
		{name: "valid fixed", mutate: func(s *v1beta1.DynamicIngressState) {
			s.Spec = v1beta1.DynamicIngressStateSpec{FixedResponse: &v1beta1.FixedResponse{Status: "503", Body: "down"}}
		}},
		{
			name: "both",
			mutate: func(s *v1beta1.DynamicIngressState) {
				s.Spec.FixedResponse = &v1beta1.FixedResponse{Status: "200"}
			},
			want: field.ErrorList{field.Forbidden(field.NewPath("spec"), "exactly one of fixedResponse, probe, schedule and service must be set, not fixedResponse and probe")},
		},
		{
			name: "all three",
			mutate: func(s *v1beta1.DynamicIngressState) {
				s.Spec.FixedResponse = &v1beta1.FixedResponse{Status: "200"}
				s.Spec.Schedule = &v1beta1.Schedule{Windows: []v1beta1.ScheduleWindow{{Cron: "0 2 * * 0", Duration: dur("2h")}}}
			},
			want: field.ErrorList{field.Forbidden(field.NewPath("spec"), "exactly one of fixedResponse, probe, schedule and service must be set, not fixedResponse and probe and schedule")},
		},
		{
			name: "valid schedule",
			mutate: func(s *v1beta1.DynamicIngressState) {
				s.Spec = v1beta1.DynamicIngressStateSpec{Schedule: &v1beta1.Schedule{TimeZone: "Asia/Tokyo", Windows: []v1beta1.ScheduleWindow{
					{Cron: "0 2 * * 0", Duration: dur("2h")}, {Start: "2026-12-24T00:00:00+09:00", End: "2026-12-26T00:00:00+09:00"}}}}
			},
		},
		{
			name: "schedule errors name their field",
			mutate: func(s *v1beta1.DynamicIngressState) {
				s.Spec = v1beta1.DynamicIngressStateSpec{Schedule: &v1beta1.Schedule{TimeZone: "Nowhere/City", Windows: []v1beta1.ScheduleWindow{
					{Cron: "@every 1h", Duration: dur("2h")}, {Cron: "0 2 * * 0"}}}}
			},
			want: field.ErrorList{
				field.Invalid(field.NewPath("spec", "schedule", "timeZone"), "Nowhere/City", "unknown time zone: must be an IANA time zone name such as Asia/Tokyo"),
				field.Invalid(field.NewPath("spec", "schedule", "windows").Index(0).Child("cron"), "@every 1h", "@every is not supported: it counts from when the operator started, not by the clock; use a 5-field cron expression"),
				field.Required(field.NewPath("spec", "schedule", "windows").Index(1).Child("duration"), "required for a recurring window"),
			},
		},
		{
			name: "one-off time that is not RFC 3339",
			mutate: func(s *v1beta1.DynamicIngressState) {
				s.Spec = v1beta1.DynamicIngressStateSpec{Schedule: &v1beta1.Schedule{Windows: []v1beta1.ScheduleWindow{{Start: "tomorrow", End: "2026-12-26T00:00:00+09:00"}}}}
			},
			want: field.ErrorList{field.Invalid(field.NewPath("spec", "schedule", "windows").Index(0).Child("start"), "tomorrow",
				"must be an RFC 3339 time with an offset, such as 2026-12-24T00:00:00+09:00")},
		},
		{
			name:   "neither",
			mutate: func(s *v1beta1.DynamicIngressState) { s.Spec.Probe = nil },
			want:   field.ErrorList{field.Required(field.NewPath("spec"), "exactly one of fixedResponse, probe, schedule and service must be set")},
		},
		{
			name: "fixed status out of range",
			mutate: func(s *v1beta1.DynamicIngressState) {
				s.Spec = v1beta1.DynamicIngressStateSpec{FixedResponse: &v1beta1.FixedResponse{Status: "2000"}}
			},
			want: field.ErrorList{field.Invalid(field.NewPath("spec", "fixedResponse", "status"), "2000", "must be an HTTP status code: three digits from 100 to 599")},
		},
		{
			name:   "ftp URL",
			mutate: func(s *v1beta1.DynamicIngressState) { s.Spec.Probe.URL = "ftp://flags.example.com/x" },
			want:   field.ErrorList{field.Invalid(probePath.Child("url"), "ftp://flags.example.com/x", "must be an absolute http or https URL with a host")},
		},
		{
			name:   "relative URL",
			mutate: func(s *v1beta1.DynamicIngressState) { s.Spec.Probe.URL = "/api/v1/flags" },
			want:   field.ErrorList{field.Invalid(probePath.Child("url"), "/api/v1/flags", "must be an absolute http or https URL with a host")},
		},
		{
			name:   "URL without host",
			mutate: func(s *v1beta1.DynamicIngressState) { s.Spec.Probe.URL = "http:///x" },
			want:   field.ErrorList{field.Invalid(probePath.Child("url"), "http:///x", "must be an absolute http or https URL with a host")},
		},
		{
			name:   "loopback literal denied",
			mutate: func(s *v1beta1.DynamicIngressState) { s.Spec.Probe.URL = "http://127.0.0.1:8080/flags" },
			want: field.ErrorList{field.Invalid(probePath.Child("url"), "http://127.0.0.1:8080/flags",
				"address 127.0.0.1 is inside denied range 127.0.0.0/8 (the manager's --probe-deny-cidrs)")},
		},
		{
			name:   "metadata address denied",
			mutate: func(s *v1beta1.DynamicIngressState) { s.Spec.Probe.URL = "http://169.254.169.254/latest/meta-data" },
			want: field.ErrorList{field.Invalid(probePath.Child("url"), "http://169.254.169.254/latest/meta-data",
				"address 169.254.169.254 is inside denied range 169.254.0.0/16 (the manager's --probe-deny-cidrs)")},
		},
		{
			name:   "mapped IPv6 loopback denied",
			mutate: func(s *v1beta1.DynamicIngressState) { s.Spec.Probe.URL = "http://[::ffff:127.0.0.1]/" },
			want: field.ErrorList{field.Invalid(probePath.Child("url"), "http://[::ffff:127.0.0.1]/",
				"address 127.0.0.1 is inside denied range 127.0.0.0/8 (the manager's --probe-deny-cidrs)")},
		},
		{
			name:   "loopback allowed by an empty guard",
			guard:  &probe.Guard{},
			mutate: func(s *v1beta1.DynamicIngressState) { s.Spec.Probe.URL = "http://127.0.0.1:8080/flags" },
		},
		{
			name: "interval under 1s",
			mutate: func(s *v1beta1.DynamicIngressState) {
				s.Spec.Probe.Interval, s.Spec.Probe.Timeout = dur("500ms"), dur("100ms")
			},
			want: field.ErrorList{field.Invalid(probePath.Child("interval"), "500ms", "must be at least 1s and at most 24h")},
		},
		{
			name:   "interval over 24h",
			mutate: func(s *v1beta1.DynamicIngressState) { s.Spec.Probe.Interval = dur("25h") },
			want:   field.ErrorList{field.Invalid(probePath.Child("interval"), "25h0m0s", "must be at least 1s and at most 24h")},
		},
		{
			name:   "zero timeout",
			mutate: func(s *v1beta1.DynamicIngressState) { s.Spec.Probe.Timeout = dur("0s") },
			want:   field.ErrorList{field.Invalid(probePath.Child("timeout"), "0s", "must be more than 0")},
		},
		{
			name: "timeout over interval",
			mutate: func(s *v1beta1.DynamicIngressState) {
				s.Spec.Probe.Interval, s.Spec.Probe.Timeout = dur("2s"), dur("3s")
			},
			want: field.ErrorList{field.Invalid(probePath.Child("timeout"), "3s", "must not be longer than the interval (2s)")},
		},
		{
			name: "timeout equal to interval",
			mutate: func(s *v1beta1.DynamicIngressState) {
				s.Spec.Probe.Interval, s.Spec.Probe.Timeout = dur("2s"), dur("2s")
			},
		},
		{
			name:   "failureThreshold 0",
			mutate: func(s *v1beta1.DynamicIngressState) { s.Spec.Probe.FailureThreshold = ptr.To[int32](0) },
			want:   field.ErrorList{field.Invalid(probePath.Child("failureThreshold"), int32(0), "must be at least 1")},
		},
		{
			name:   "method not supported",
			mutate: func(s *v1beta1.DynamicIngressState) { s.Spec.Probe.Method = "PUT" },
			want:   field.ErrorList{field.NotSupported(probePath.Child("method"), "PUT", []string{"GET", "HEAD", "POST"})},
		},
		{
			name: "bad header name",
			mutate: func(s *v1beta1.DynamicIngressState) {
				s.Spec.Probe.Headers = []v1beta1.HTTPHeader{{Name: "X Bad", Value: "v"}}
			},
			want: field.ErrorList{field.Invalid(probePath.Child("headers").Index(0).Child("name"), field.OmitValueType{},
				"must be an HTTP header name (letters, digits and !#$%&'*+-.^_`|~ only); the name is not shown, it may hold a secret")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := validProbeState()
			tt.mutate(state)
			g := guard
			if tt.guard != nil {
				g = *tt.guard
			}
			if diff := cmp.Diff(tt.want, ValidateDynamicIngressState(state, g)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestRejectionsHideSecrets checks what kubectl prints for a rejected
// state whose header or URL holds a secret: what is wrong, never the
// secret (header values and names not at all, URLs without userinfo,
// query and fragment).
func TestRejectionsHideSecrets(t *testing.T) {
	const secret = "s3cr3t"
	denyGuard, err := probe.ParseGuard(probe.DefaultDenyCIDRs, "")
	if err != nil {
		t.Fatal(err)
	}
	allowGuard, err := probe.ParseGuard("", "flags.example.com")
	if err != nil {
		t.Fatal(err)
	}
	const prefix = `DynamicIngressState.ingress.dynamicingress.io "flags" is invalid: `
	tests := []struct {
		name   string
		mutate func(*v1beta1.HTTPProbe)
		// guard is the manager's; nil means the default deny list.
		guard *probe.Guard
		want  string
	}{
		{
			name: "a token from a YAML block scalar: trailing newline",
			mutate: func(p *v1beta1.HTTPProbe) {
				p.Headers = []v1beta1.HTTPHeader{{Name: "Authorization", Value: "Bearer " + secret + "\n"}}
			},
			want: prefix + "spec.probe.headers[0].value: Invalid value: must not end with a newline (a YAML block scalar `|` adds one: use `|-` or a quoted string); the value is not shown, it may hold a secret",
		},
		{
			name: "a value with a line break inside",
			mutate: func(p *v1beta1.HTTPProbe) {
				p.Headers = []v1beta1.HTTPHeader{{Name: "Authorization", Value: "Bearer " + secret + "\r\nX-Other: 1"}}
			},
			want: prefix + "spec.probe.headers[0].value: Invalid value: must not contain control characters (line breaks, bytes below 0x20 other than tab, 0x7f); the value is not shown, it may hold a secret",
		},
		{
			name: "a whole header line as the name",
			mutate: func(p *v1beta1.HTTPProbe) {
				p.Headers = []v1beta1.HTTPHeader{{Name: "Authorization: Bearer " + secret, Value: "x"}}
			},
			want: prefix + "spec.probe.headers[0].name: Invalid value: must be the header name alone, without a colon (what follows it goes in value); the name is not shown, it may hold a secret",
		},
		{
			name: "a URL that is not http(s), with userinfo, query and fragment",
			mutate: func(p *v1beta1.HTTPProbe) {
				p.URL = "ftp://admin:" + secret + "@flags.example.com/x?token=" + secret + "#" + secret
			},
			want: prefix + `spec.probe.url: Invalid value: "ftp://flags.example.com/x": must be an absolute http or https URL with a host`,
		},
		{
			name:   "a URL without its scheme",
			mutate: func(p *v1beta1.HTTPProbe) { p.URL = "admin:" + secret + "@flags.example.com/x?token=" + secret },
			want:   prefix + `spec.probe.url: Invalid value: "flags.example.com/x": must be an absolute http or https URL with a host`,
		},
		{
			name: "a URL that does not parse",
			mutate: func(p *v1beta1.HTTPProbe) {
				p.URL = "https://admin:" + secret + "@flags.example.com:https/x?token=" + secret
			},
			want: prefix + `spec.probe.url: Invalid value: "https://flags.example.com:https/x": must be an absolute http or https URL with a host`,
		},
		{
			name: "a denied address, with userinfo and query",
			mutate: func(p *v1beta1.HTTPProbe) {
				p.URL = "http://admin:" + secret + "@169.254.169.254/latest?token=" + secret
			},
			want: prefix + `spec.probe.url: Invalid value: "http://169.254.169.254/latest": address 169.254.169.254 is inside denied range 169.254.0.0/16 (the manager's --probe-deny-cidrs)`,
		},
		{
			name:   "a host outside the allow list, with userinfo and query",
			guard:  &allowGuard,
			mutate: func(p *v1beta1.HTTPProbe) { p.URL = "https://admin:" + secret + "@other.example.com/x?token=" + secret },
			want:   prefix + `spec.probe.url: Invalid value: "https://other.example.com/x": host other.example.com is not in the allowed hosts (the manager's --probe-allow-hosts)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := validProbeState()
			tt.mutate(state.Spec.Probe)
			g := denyGuard
			if tt.guard != nil {
				g = *tt.guard
			}
			err := invalid(state.Name, "DynamicIngressState", ValidateDynamicIngressState(state, g))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("what kubectl prints (-want +got):\n%s", diff)
			}
			if strings.Contains(got, secret) {
				t.Errorf("the rejection shows the secret %q: %s", secret, got)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	dur := func(s string) *metav1.Duration { d, _ := time.ParseDuration(s); return &metav1.Duration{Duration: d} }
	tests := []struct {
		name string
		in   v1beta1.HTTPProbe
		want v1beta1.HTTPProbe
	}{
		{"all defaults", v1beta1.HTTPProbe{URL: "https://x"},
			v1beta1.HTTPProbe{Type: "HTTP", Method: "GET", URL: "https://x", Interval: dur("30s"), Timeout: dur("5s"), FailureThreshold: ptr.To[int32](3), SuccessThreshold: ptr.To[int32](1)}},
		{"short interval gives a short timeout", v1beta1.HTTPProbe{URL: "https://x", Interval: dur("2s")},
			v1beta1.HTTPProbe{Type: "HTTP", Method: "GET", URL: "https://x", Interval: dur("2s"), Timeout: dur("2s"), FailureThreshold: ptr.To[int32](3), SuccessThreshold: ptr.To[int32](1)}},
		{"set values kept", v1beta1.HTTPProbe{Type: "HTTP", Method: "HEAD", URL: "https://x", Interval: dur("1m"), Timeout: dur("10s"), FailureThreshold: ptr.To[int32](1), SuccessThreshold: ptr.To[int32](3)},
			v1beta1.HTTPProbe{Type: "HTTP", Method: "HEAD", URL: "https://x", Interval: dur("1m"), Timeout: dur("10s"), FailureThreshold: ptr.To[int32](1), SuccessThreshold: ptr.To[int32](3)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := &v1beta1.DynamicIngressState{Spec: v1beta1.DynamicIngressStateSpec{Probe: &tt.in}}
			DefaultDynamicIngressState(state)
			if diff := cmp.Diff(tt.want, *state.Spec.Probe); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	fixed := &v1beta1.DynamicIngressState{Spec: v1beta1.DynamicIngressStateSpec{FixedResponse: &v1beta1.FixedResponse{Status: "200"}}}
	before := fixed.DeepCopy()
	DefaultDynamicIngressState(fixed)
	if diff := cmp.Diff(before, fixed); diff != "" {
		t.Errorf("defaulting changed a fixed state (-before +after):\n%s", diff)
	}

	di := &v1beta1.DynamicIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "shop"}}
	DefaultDynamicIngress(di)
	if di.Spec.Target.Namespace != "shop" {
		t.Errorf("spec.target.namespace = %q, want shop", di.Spec.Target.Namespace)
	}
	di.Spec.Target.Namespace = "other"
	DefaultDynamicIngress(di)
	if di.Spec.Target.Namespace != "other" {
		t.Errorf("defaulting replaced a set spec.target.namespace with %q", di.Spec.Target.Namespace)
	}
}

func TestTemplateErrors(t *testing.T) {
	tpl := field.NewPath("spec", "activeIngress", "template")
	name := field.NewPath("spec", "target", "name")
	serverErr := apierrors.NewInvalid(schema.GroupKind{Group: "networking.k8s.io", Kind: "Ingress"}, "x", field.ErrorList{
		field.NotSupported(field.NewPath("spec", "rules").Index(0).Child("http", "paths").Index(0).Child("pathType"), "Sometimes", []string{"Exact", "Prefix"}),
		field.Invalid(field.NewPath("metadata", "annotations"), "x", "bad annotation"),
		field.Invalid(field.NewPath("metadata", "name"), "X", "bad name"),
		field.Required(field.NewPath("spec"), "either `defaultBackend` or `rules` must be specified"),
	})
	got := templateErrors(target.Ingress{}, tpl, name, serverErr).ToAggregate().Error()
	want := `[spec.activeIngress.template.spec.rules[0].http.paths[0].pathType: Unsupported value: "Sometimes": supported values: "Exact", "Prefix", ` +
		`spec.activeIngress.template.metadata.annotations: Invalid value: "x": bad annotation, ` +
		`spec.target.name: Invalid value: "X": bad name, ` +
		"spec.activeIngress.template.spec: Required value: either `defaultBackend` or `rules` must be specified]"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	other := apierrors.NewForbidden(schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses"}, "x", errorString("admission webhook \"validate.nginx.ingress.kubernetes.io\" denied the request: host clash"))
	got = templateErrors(target.Ingress{}, tpl, name, other).ToAggregate().Error()
	if !strings.HasPrefix(got, "spec.activeIngress.template: Invalid value: the API server rejects this template as an Ingress: ") || !strings.Contains(got, "host clash") {
		t.Errorf("a rejection without causes reads %q", got)
	}
	terminating := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
		Message: "namespace shop is being terminated",
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: "NamespaceTerminating", Message: "namespace shop is being terminated", Field: "metadata.namespace"}}}}}
	got = templateErrors(target.Ingress{}, tpl, name, terminating).ToAggregate().Error()
	if want := "spec.activeIngress.template: Invalid value: the API server rejects this template as an Ingress: namespace shop is being terminated"; got != want {
		t.Errorf("a Forbidden rejection with causes reads %q, want %q", got, want)
	}
	if errs := templateErrors(target.Ingress{}, tpl, name, nil); errs != nil {
		t.Errorf("no error gave %v", errs)
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

func TestTargetExists(t *testing.T) {
	got := targetExists(target.Ingress{}, "shop", "storefront").Error()
	want := `spec.target: Invalid value: "shop/storefront": Ingress shop/storefront already exists; a DynamicIngress creates its target and never takes over an existing Ingress: delete it first or choose another name`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDryRunRequest(t *testing.T) {
	di := validDynamicIngress()
	di.UID = "di-uid"
	controller := true
	rendered := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "storefront", Labels: map[string]string{"app": "new"},
			Annotations:     map[string]string{"mode": "sorry"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "DynamicIngress", Name: "storefront", UID: "di-uid", Controller: &controller}}},
		Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("nginx")},
	}
	ours := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "storefront", ResourceVersion: "7", Labels: map[string]string{"app": "old"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "DynamicIngress", Name: "storefront", UID: "di-uid", Controller: &controller}}},
	}
	theirs := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "storefront", ResourceVersion: "3"}}
	tests := []struct {
		name       string
		existing   *networkingv1.Ingress
		wantUpdate bool
		want       *networkingv1.Ingress
	}{
		{name: "no target: create under the target's name", want: &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "storefront", Labels: map[string]string{"app": "new"}, Annotations: map[string]string{"mode": "sorry"}},
			Spec:       networkingv1.IngressSpec{IngressClassName: ptr.To("nginx")}}},
		{name: "our target: update it in place", existing: ours, wantUpdate: true, want: &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "storefront", ResourceVersion: "7", Labels: map[string]string{"app": "new"},
				Annotations: map[string]string{"mode": "sorry"}, OwnerReferences: ours.OwnerReferences},
			Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("nginx")}}},
		{name: "someone else's Ingress: create under a generated name", existing: theirs, want: &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", GenerateName: "dynamic-validation-", Labels: map[string]string{"app": "new"}, Annotations: map[string]string{"mode": "sorry"}},
			Spec:       networkingv1.IngressSpec{IngressClassName: ptr.To("nginx")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var existing client.Object
			if tt.existing != nil {
				existing = tt.existing
			}
			gotU, update, err := dryRunRequest(di, toUnstructured(t, rendered), existing)
			if err != nil {
				t.Fatal(err)
			}
			got := &networkingv1.Ingress{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(gotU.Object, got); err != nil {
				t.Fatal(err)
			}
			got.TypeMeta = metav1.TypeMeta{}
			if update != tt.wantUpdate {
				t.Errorf("update = %v, want %v", update, tt.wantUpdate)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if len(rendered.OwnerReferences) != 1 {
		t.Error("dryRunRequest changed the rendered Ingress it was given")
	}
}

func TestOtherTargeting(t *testing.T) {
	di := func(name, target, targetNS string) v1beta1.DynamicIngress {
		return v1beta1.DynamicIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
			Spec: v1beta1.DynamicIngressSpec{Target: v1beta1.TargetReference{Name: target, Namespace: targetNS}}}
	}
	newDI := di("new", "storefront", "")
	tests := []struct {
		name string
		list []v1beta1.DynamicIngress
		want string
	}{
		{"none", nil, ""},
		{"only itself (an update, or the cache already has it)", []v1beta1.DynamicIngress{di("new", "storefront", "shop")}, ""},
		{"another target", []v1beta1.DynamicIngress{di("old", "checkout", "")}, ""},
		{"same target", []v1beta1.DynamicIngress{di("old", "storefront", "")}, "old"},
		{"same target, namespace defaulted on one side only", []v1beta1.DynamicIngress{di("old", "storefront", "shop")}, "old"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var list []target.Switch
			for i := range tt.list {
				list = append(list, &tt.list[i])
			}
			if got := otherTargeting(list, &newDI); got != tt.want {
				t.Errorf("otherTargeting = %q, want %q", got, tt.want)
			}
		})
	}
	got := targetTaken(target.Ingress{}, "shop", "storefront", "old").Error()
	want := `spec.target: Invalid value: "shop/storefront": DynamicIngress "old" already targets Ingress shop/storefront; each Ingress has at most one DynamicIngress`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// toUnstructured is obj as the unstructured content the webhook renders.
func toUnstructured(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(networkingv1.SchemeGroupVersion.WithKind("Ingress"))
	return u
}

// TestValidateProbeThresholdAndHostHeader checks what kubectl prints for a
// successThreshold out of 1-10 and for a Host header outside the manager's
// --probe-allow-hosts: the header's path and the host it names, never the
// value of another header.
func TestValidateProbeThresholdAndHostHeader(t *testing.T) {
	const secret = "Bearer hdr-s3cr3t"
	allowGuard, err := probe.ParseGuard(probe.DefaultDenyCIDRs, "flags.example.com,*.internal.example.com")
	if err != nil {
		t.Fatal(err)
	}
	const prefix = `DynamicIngressState.ingress.dynamicingress.io "flags" is invalid: `
	withHost := func(host string) func(*v1beta1.HTTPProbe) {
		return func(p *v1beta1.HTTPProbe) {
			p.Headers = []v1beta1.HTTPHeader{{Name: "Authorization", Value: secret}, {Name: "X-Tenant", Value: "tenant-7"}, {Name: "host", Value: host}}
		}
	}
	tests := []struct {
		name   string
		mutate func(*v1beta1.HTTPProbe)
		guard  probe.Guard
		want   string // "" when accepted
	}{
		{name: "successThreshold 0", guard: allowGuard, mutate: func(p *v1beta1.HTTPProbe) { p.SuccessThreshold = ptr.To[int32](0) },
			want: prefix + "spec.probe.successThreshold: Invalid value: 0: must be at least 1 and at most 10"},
		{name: "successThreshold 11", guard: allowGuard, mutate: func(p *v1beta1.HTTPProbe) { p.SuccessThreshold = ptr.To[int32](11) },
			want: prefix + "spec.probe.successThreshold: Invalid value: 11: must be at least 1 and at most 10"},
		{name: "successThreshold 1", guard: allowGuard, mutate: func(p *v1beta1.HTTPProbe) { p.SuccessThreshold = ptr.To[int32](1) }},
		{name: "successThreshold 10", guard: allowGuard, mutate: func(p *v1beta1.HTTPProbe) { p.SuccessThreshold = ptr.To[int32](10) }},
		{name: "Host header outside the allow list", guard: allowGuard, mutate: withHost("admin.example.com"),
			want: prefix + "spec.probe.headers[2].value: Invalid value: host admin.example.com is not in the allowed hosts (the manager's --probe-allow-hosts)"},
		{name: "Host header outside the allow list, any case, with a port", guard: allowGuard, mutate: withHost("Admin.Example.COM:8443"),
			want: prefix + "spec.probe.headers[2].value: Invalid value: host admin.example.com is not in the allowed hosts (the manager's --probe-allow-hosts)"},
		{name: "Host header that net/http would cut", guard: allowGuard, mutate: withHost("admin.example.com/x.internal.example.com"),
			want: prefix + "spec.probe.headers[2].value: Invalid value: must be a host name or IP address with an optional port (a Host header is held to the manager's --probe-allow-hosts)"},
		{name: "Host header allowed, any case, with a port", guard: allowGuard, mutate: withHost("FLAGS.example.com:443")},
		{name: "Host header under an allowed wildcard", guard: allowGuard, mutate: withHost("a.internal.example.com")},
		{name: "Host header without an allow list", mutate: withHost("admin.example.com")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := validProbeState()
			tt.mutate(state.Spec.Probe)
			err := invalid(state.Name, "DynamicIngressState", ValidateDynamicIngressState(state, tt.guard))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("what kubectl prints (-want +got):\n%s", diff)
			}
			for _, v := range []string{secret, "tenant-7"} {
				if strings.Contains(got, v) {
					t.Errorf("the rejection shows the value %q of another header: %s", v, got)
				}
			}
		})
	}
}

func TestValidateClusterDynamicIngressState(t *testing.T) {
	grant := field.NewPath("spec", "followers", "namespaces")
	tests := []struct {
		name   string
		mutate func(*v1beta1.ClusterDynamicIngressState)
		want   field.ErrorList
	}{
		{name: "every namespace", mutate: func(s *v1beta1.ClusterDynamicIngressState) {
			s.Spec.Followers.Namespaces = v1beta1.FollowerNamespaces{From: v1beta1.NamespacesFromAll}
		}},
		{name: "namespaces by label", mutate: func(s *v1beta1.ClusterDynamicIngressState) {
			s.Spec.Followers.Namespaces = v1beta1.FollowerNamespaces{From: v1beta1.NamespacesFromSelector,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "public"}}}
		}},
		{name: "no grant", mutate: func(*v1beta1.ClusterDynamicIngressState) {},
			want: field.ErrorList{field.Required(grant.Child("from"), "All or Selector: which namespaces' switches may follow this state")}},
		{name: "Selector without a selector", mutate: func(s *v1beta1.ClusterDynamicIngressState) {
			s.Spec.Followers.Namespaces = v1beta1.FollowerNamespaces{From: v1beta1.NamespacesFromSelector}
		}, want: field.ErrorList{field.Required(grant.Child("selector"), "selector is required when from is Selector")}},
		{name: "an unknown from", mutate: func(s *v1beta1.ClusterDynamicIngressState) {
			s.Spec.Followers.Namespaces = v1beta1.FollowerNamespaces{From: "Same"}
		}, want: field.ErrorList{field.NotSupported(grant.Child("from"), v1beta1.FromNamespaces("Same"),
			[]v1beta1.FromNamespaces{v1beta1.NamespacesFromAll, v1beta1.NamespacesFromSelector})}},
		{name: "the source is checked as a DynamicIngressState's", mutate: func(s *v1beta1.ClusterDynamicIngressState) {
			s.Spec.Followers.Namespaces = v1beta1.FollowerNamespaces{From: v1beta1.NamespacesFromAll}
			s.Spec.FixedResponse = nil
		}, want: field.ErrorList{field.Required(field.NewPath("spec"), "exactly one of fixedResponse, probe, schedule and service must be set")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := builders.FixedState("", "global", "200", "").Cluster().Obj()
			tt.mutate(state)
			got := ValidateClusterDynamicIngressState(state, probe.Guard{})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

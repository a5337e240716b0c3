package v1beta1

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

const (
	dns1035Message = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
	dns1123Message = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)

var servicePath = field.NewPath("spec", "service")

// TestValidateServiceState checks spec.service on a DynamicIngressState:
// the rules both kinds share, and that the Service is in the state's own
// namespace.
func TestValidateServiceState(t *testing.T) {
	tests := []struct {
		name  string
		state *v1beta1.DynamicIngressState
		want  field.ErrorList
	}{
		{name: "a Service by name", state: builders.ServiceState("shop", "web-up", "web").Obj()},
		{name: "the state's own namespace", state: builders.ServiceState("shop", "web-up", "web").ServiceNamespace("shop").Obj()},
		{name: "a namespace that starts with a digit, the state's own",
			state: builders.ServiceState("1shop", "web-up", "web").ServiceNamespace("1shop").Obj()},
		{name: "the bounds", state: builders.ServiceState("shop", "web-up", "web").
			MinReady(100000).UnavailableAfter(0).AvailableAfter(time.Hour).Obj()},
		{name: "the other bounds", state: builders.ServiceState("shop", "web-up", "web").
			MinReady(1).UnavailableAfter(time.Hour).AvailableAfter(0).Obj()},
		{
			name: "service and fixedResponse",
			state: func() *v1beta1.DynamicIngressState {
				s := builders.ServiceState("shop", "web-up", "web").Obj()
				s.Spec.FixedResponse = &v1beta1.FixedResponse{Status: "200"}
				return s
			}(),
			want: field.ErrorList{field.Forbidden(field.NewPath("spec"),
				"exactly one of fixedResponse, probe, schedule and service must be set, not fixedResponse and service")},
		},
		{
			name: "service, probe and schedule",
			state: func() *v1beta1.DynamicIngressState {
				s := builders.ServiceState("shop", "web-up", "web").Obj()
				s.Spec.Probe = &v1beta1.HTTPProbe{URL: "https://flags.example.com/x"}
				s.Spec.Probe.Default()
				s.Spec.Schedule = &v1beta1.Schedule{Windows: []v1beta1.ScheduleWindow{{Cron: "0 2 * * 0", Duration: &metav1.Duration{Duration: time.Hour}}}}
				return s
			}(),
			want: field.ErrorList{field.Forbidden(field.NewPath("spec"),
				"exactly one of fixedResponse, probe, schedule and service must be set, not probe and schedule and service")},
		},
		{
			name:  "no name",
			state: builders.ServiceState("shop", "web-up", "").Obj(),
			want:  field.ErrorList{field.Required(servicePath.Child("name"), "the name of the Service whose ready endpoints give the response")},
		},
		{
			name:  "a name that is not a DNS-1035 label",
			state: builders.ServiceState("shop", "web-up", "Web_Front").Obj(),
			want:  field.ErrorList{field.Invalid(servicePath.Child("name"), "Web_Front", dns1035Message)},
		},
		{
			// A namespace may start with a digit; a Service's name may not.
			name:  "a name that starts with a digit",
			state: builders.ServiceState("shop", "web-up", "1web").Obj(),
			want:  field.ErrorList{field.Invalid(servicePath.Child("name"), "1web", dns1035Message)},
		},
		{
			name:  "minReady 0",
			state: builders.ServiceState("shop", "web-up", "web").MinReady(0).Obj(),
			want:  field.ErrorList{field.Invalid(servicePath.Child("minReady"), int32(0), "must be at least 1 and at most 100000")},
		},
		{
			name:  "minReady 100001",
			state: builders.ServiceState("shop", "web-up", "web").MinReady(100001).Obj(),
			want:  field.ErrorList{field.Invalid(servicePath.Child("minReady"), int32(100001), "must be at least 1 and at most 100000")},
		},
		{
			name:  "a negative unavailableAfter",
			state: builders.ServiceState("shop", "web-up", "web").UnavailableAfter(-time.Second).Obj(),
			want:  field.ErrorList{field.Invalid(servicePath.Child("unavailableAfter"), "-1s", "must be at least 0s and at most 1h")},
		},
		{
			name:  "unavailableAfter over 1h",
			state: builders.ServiceState("shop", "web-up", "web").UnavailableAfter(time.Hour + time.Second).Obj(),
			want:  field.ErrorList{field.Invalid(servicePath.Child("unavailableAfter"), "1h0m1s", "must be at least 0s and at most 1h")},
		},
		{
			name:  "a negative availableAfter",
			state: builders.ServiceState("shop", "web-up", "web").AvailableAfter(-time.Second).Obj(),
			want:  field.ErrorList{field.Invalid(servicePath.Child("availableAfter"), "-1s", "must be at least 0s and at most 1h")},
		},
		{
			name:  "availableAfter over 1h",
			state: builders.ServiceState("shop", "web-up", "web").AvailableAfter(2 * time.Hour).Obj(),
			want:  field.ErrorList{field.Invalid(servicePath.Child("availableAfter"), "2h0m0s", "must be at least 0s and at most 1h")},
		},
		{
			name:  "another namespace",
			state: builders.ServiceState("shop", "web-up", "web").ServiceNamespace("payments").Obj(),
			want: field.ErrorList{field.Forbidden(servicePath.Child("namespace"),
				`must be the DynamicIngressState's own namespace "shop", not "payments": a DynamicIngressState may only follow a Service in its own namespace; use a ClusterDynamicIngressState to follow a Service in another namespace`)},
		},
		{
			// Invalid says more than Forbidden: no namespace has that name.
			name:  "a namespace that is not a DNS label",
			state: builders.ServiceState("shop", "web-up", "web").ServiceNamespace("Shop_NS").Obj(),
			want:  field.ErrorList{field.Invalid(servicePath.Child("namespace"), "Shop_NS", dns1123Message)},
		},
		{
			name: "every field wrong at once",
			state: builders.ServiceState("shop", "web-up", "Web").ServiceNamespace("payments").
				MinReady(-1).UnavailableAfter(-time.Minute).AvailableAfter(90 * time.Minute).Obj(),
			want: field.ErrorList{
				field.Invalid(servicePath.Child("name"), "Web", dns1035Message),
				field.Invalid(servicePath.Child("minReady"), int32(-1), "must be at least 1 and at most 100000"),
				field.Invalid(servicePath.Child("unavailableAfter"), "-1m0s", "must be at least 0s and at most 1h"),
				field.Invalid(servicePath.Child("availableAfter"), "1h30m0s", "must be at least 0s and at most 1h"),
				field.Forbidden(servicePath.Child("namespace"),
					`must be the DynamicIngressState's own namespace "shop", not "payments": a DynamicIngressState may only follow a Service in its own namespace; use a ClusterDynamicIngressState to follow a Service in another namespace`),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			DefaultDynamicIngressState(tt.state)
			if diff := cmp.Diff(tt.want, ValidateDynamicIngressState(tt.state, probe.Guard{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateClusterServiceState checks spec.service on a
// ClusterDynamicIngressState: a namespace is required, any namespace will
// do, and the shared rules hold at the same paths.
func TestValidateClusterServiceState(t *testing.T) {
	tests := []struct {
		name  string
		state *v1beta1.ClusterDynamicIngressState
		want  field.ErrorList
	}{
		{name: "a Service in a namespace", state: builders.ServiceState("", "payments-up", "api").ServiceNamespace("payments").Cluster().FollowersAll().Obj()},
		{
			name:  "no namespace",
			state: builders.ServiceState("", "payments-up", "api").Cluster().FollowersAll().Obj(),
			want:  field.ErrorList{field.Required(servicePath.Child("namespace"), "a ClusterDynamicIngressState's service needs a namespace")},
		},
		{
			name:  "a namespace that is not a DNS label",
			state: builders.ServiceState("", "payments-up", "api").ServiceNamespace("payments.eu").Cluster().FollowersAll().Obj(),
			want:  field.ErrorList{field.Invalid(servicePath.Child("namespace"), "payments.eu", "must not contain dots")},
		},
		{
			name:  "no name",
			state: builders.ServiceState("", "payments-up", "").ServiceNamespace("payments").Cluster().FollowersAll().Obj(),
			want:  field.ErrorList{field.Required(servicePath.Child("name"), "the name of the Service whose ready endpoints give the response")},
		},
		{
			name:  "a name that is not a DNS-1035 label",
			state: builders.ServiceState("", "payments-up", "api.v2").ServiceNamespace("payments").Cluster().FollowersAll().Obj(),
			want:  field.ErrorList{field.Invalid(servicePath.Child("name"), "api.v2", dns1035Message)},
		},
		{
			name:  "minReady 0",
			state: builders.ServiceState("", "payments-up", "api").ServiceNamespace("payments").MinReady(0).Cluster().FollowersAll().Obj(),
			want:  field.ErrorList{field.Invalid(servicePath.Child("minReady"), int32(0), "must be at least 1 and at most 100000")},
		},
		{
			name: "durations out of range",
			state: builders.ServiceState("", "payments-up", "api").ServiceNamespace("payments").
				UnavailableAfter(-time.Second).AvailableAfter(61 * time.Minute).Cluster().FollowersAll().Obj(),
			want: field.ErrorList{
				field.Invalid(servicePath.Child("unavailableAfter"), "-1s", "must be at least 0s and at most 1h"),
				field.Invalid(servicePath.Child("availableAfter"), "1h1m0s", "must be at least 0s and at most 1h"),
			},
		},
		{
			name: "service and probe",
			state: func() *v1beta1.ClusterDynamicIngressState {
				s := builders.ServiceState("", "payments-up", "api").ServiceNamespace("payments").Cluster().FollowersAll().Obj()
				s.Spec.Probe = &v1beta1.HTTPProbe{URL: "https://flags.example.com/x"}
				s.Spec.Probe.Default()
				return s
			}(),
			want: field.ErrorList{field.Forbidden(field.NewPath("spec"),
				"exactly one of fixedResponse, probe, schedule and service must be set, not probe and service")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := (ClusterDynamicIngressStateDefaulter{}).Default(context.Background(), tt.state); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, ValidateClusterDynamicIngressState(tt.state, probe.Guard{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestDefaultServiceSource checks the defaults of spec.service on both
// kinds: minReady 1, unavailableAfter 10s, availableAfter 30s, and values
// that are set kept.
func TestDefaultServiceSource(t *testing.T) {
	d := func(v time.Duration) *metav1.Duration { return &metav1.Duration{Duration: v} }
	tests := []struct {
		name string
		in   *builders.StateWrapper
		want v1beta1.ServiceSource
	}{
		{"all defaults", builders.ServiceState("shop", "web-up", "web"),
			v1beta1.ServiceSource{Name: "web", MinReady: ptr.To[int32](1), UnavailableAfter: d(10 * time.Second), AvailableAfter: d(30 * time.Second)}},
		{"set values kept", builders.ServiceState("shop", "web-up", "web").ServiceNamespace("shop").MinReady(3).UnavailableAfter(0).AvailableAfter(time.Minute),
			v1beta1.ServiceSource{Name: "web", Namespace: "shop", MinReady: ptr.To[int32](3), UnavailableAfter: d(0), AvailableAfter: d(time.Minute)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster := tt.in.Cluster().Obj()
			state := tt.in.Obj()
			if err := (DynamicIngressStateDefaulter{}).Default(context.Background(), state); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, *state.Spec.Service); diff != "" {
				t.Errorf("DynamicIngressState (-want +got):\n%s", diff)
			}
			if err := (ClusterDynamicIngressStateDefaulter{}).Default(context.Background(), cluster); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, *cluster.Spec.Service); diff != "" {
				t.Errorf("ClusterDynamicIngressState (-want +got):\n%s", diff)
			}
		})
	}
}

package v1beta1_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// TestServiceStateAdmission sends states of both kinds that follow a
// Service through the API server and compares the whole error a client
// gets (what kubectl prints after "Error from server"). The schema's and
// the CRD's CEL rules answer first where they have a rule; the webhook
// answers the rest.
func TestServiceStateAdmission(t *testing.T) {
	ns := newNamespace(t)
	name := suite.NameOf(t)
	const byDIS = `admission webhook "vdynamicingressstate.ingress.dynamicingress.io" denied the request: `
	const byCDIS = `admission webhook "vclusterdynamicingressstate.ingress.dynamicingress.io" denied the request: `
	dis := func(n string) string { return `DynamicIngressState.ingress.dynamicingress.io "` + n + `" is invalid: ` }
	cdis := func(n string) string {
		return `ClusterDynamicIngressState.ingress.dynamicingress.io "` + name + n + `" is invalid: `
	}
	cluster := func(suffix string) *builders.StateWrapper {
		return builders.ServiceState("", name+suffix, "api").ServiceNamespace("payments")
	}
	withFixed := builders.ServiceState(ns, "with-fixed", "web").Obj()
	withFixed.Spec.FixedResponse = &v1beta1.FixedResponse{Status: "200"}
	clusterWithProbe := cluster("-with-probe").Cluster().FollowersAll().Obj()
	clusterWithProbe.Spec.Probe = &v1beta1.HTTPProbe{URL: "https://flags.example.com/x"}
	tests := []struct {
		name string
		obj  client.Object
		want string
	}{
		{"service and fixedResponse", withFixed,
			dis("with-fixed") + `spec: Invalid value: exactly one of fixedResponse, probe, schedule and service must be set`},
		{"no name, as kubectl sends it", withoutServiceName(t, builders.ServiceState(ns, "no-name", "web").Obj()),
			dis("no-name") + `[spec.service.name: Required value, <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`},
		{"a name that is not a DNS-1035 label", builders.ServiceState(ns, "bad-name", "Web_Front").Obj(),
			byDIS + dis("bad-name") + `spec.service.name: Invalid value: "Web_Front": ` + dns1035Message},
		{"minReady 0", builders.ServiceState(ns, "none-ready", "web").MinReady(0).Obj(),
			dis("none-ready") + `spec.service.minReady: Invalid value: 0: spec.service.minReady in body should be greater than or equal to 1`},
		{"minReady 100001", builders.ServiceState(ns, "too-many", "web").MinReady(100001).Obj(),
			dis("too-many") + `spec.service.minReady: Invalid value: 100001: spec.service.minReady in body should be less than or equal to 100000`},
		{"a negative unavailableAfter", builders.ServiceState(ns, "negative", "web").UnavailableAfter(-time.Second).Obj(),
			dis("negative") + `spec.service.unavailableAfter: Invalid value: "-1s": must be at least 0s and at most 1h`},
		{"availableAfter over 1h", builders.ServiceState(ns, "slow", "web").AvailableAfter(61 * time.Minute).Obj(),
			dis("slow") + `spec.service.availableAfter: Invalid value: "1h1m0s": must be at least 0s and at most 1h`},
		{"a Service in another namespace", builders.ServiceState(ns, "elsewhere", "web").ServiceNamespace("default").Obj(),
			byDIS + dis("elsewhere") + `spec.service.namespace: Forbidden: must be the DynamicIngressState's own namespace "` + ns +
				`", not "default": a DynamicIngressState may only follow a Service in its own namespace; use a ClusterDynamicIngressState to follow a Service in another namespace`},
		{"a namespace that is not a DNS label", builders.ServiceState(ns, "bad-namespace", "web").ServiceNamespace("Payments").Obj(),
			byDIS + dis("bad-namespace") + `spec.service.namespace: Invalid value: "Payments": ` + dns1123Message},
		{"a cluster state's Service without a namespace", builders.ServiceState("", name+"-no-namespace", "api").Cluster().FollowersAll().Obj(),
			cdis("-no-namespace") + `spec.service.namespace: Invalid value: a ClusterDynamicIngressState's service needs a namespace`},
		{"a cluster state's service and probe", clusterWithProbe,
			cdis("-with-probe") + `spec: Invalid value: exactly one of fixedResponse, probe, schedule and service must be set`},
		{"a cluster state's Service name that is not a DNS-1035 label", builders.ServiceState("", name+"-bad-name", "api.v2").ServiceNamespace("payments").Cluster().FollowersAll().Obj(),
			byCDIS + cdis("-bad-name") + `spec.service.name: Invalid value: "api.v2": ` + dns1035Message},
		{"a cluster state's minReady 0", cluster("-none-ready").MinReady(0).Cluster().FollowersAll().Obj(),
			cdis("-none-ready") + `spec.service.minReady: Invalid value: 0: spec.service.minReady in body should be greater than or equal to 1`},
		{"a cluster state's unavailableAfter over 1h", cluster("-slow").UnavailableAfter(2 * time.Hour).Cluster().FollowersAll().Obj(),
			cdis("-slow") + `spec.service.unavailableAfter: Invalid value: "2h0m0s": must be at least 0s and at most 1h`},
		{"a cluster state's negative availableAfter", cluster("-negative").AvailableAfter(-time.Second).Cluster().FollowersAll().Obj(),
			cdis("-negative") + `spec.service.availableAfter: Invalid value: "-1s": must be at least 0s and at most 1h`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := k8s.Create(ctx, tt.obj)
			if err == nil {
				_ = k8s.Delete(ctx, tt.obj)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("Create: want an Invalid status, got %v", err)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("the error (-want +got):\n%s", diff)
			}
		})
	}
}

// TestServiceStateDefaults creates states that follow a Service with
// nothing but its name (and a cluster state's namespace) and reads back
// what was stored: minReady 1, unavailableAfter 10s, availableAfter 30s.
func TestServiceStateDefaults(t *testing.T) {
	ns := newNamespace(t)
	name := suite.NameOf(t)
	defaulted := func(namespace string) v1beta1.ServiceSource {
		return v1beta1.ServiceSource{Name: "web", Namespace: namespace, MinReady: ptr.To[int32](1),
			UnavailableAfter: &metav1.Duration{Duration: 10 * time.Second}, AvailableAfter: &metav1.Duration{Duration: 30 * time.Second}}
	}
	for _, tt := range []struct {
		name string
		obj  client.Object
		want v1beta1.ServiceSource
	}{
		{"a DynamicIngressState", builders.ServiceState(ns, "web-up", "web").Obj(), defaulted("")},
		{"a DynamicIngressState naming its own namespace", builders.ServiceState(ns, "web-up-here", "web").ServiceNamespace(ns).Obj(), defaulted(ns)},
		{"a ClusterDynamicIngressState", builders.ServiceState("", name, "web").ServiceNamespace(ns).Cluster().FollowersAll().Obj(), defaulted(ns)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := k8s.Create(ctx, tt.obj); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = k8s.Delete(ctx, tt.obj) })
			var got *v1beta1.ServiceSource
			switch o := tt.obj.(type) {
			case *v1beta1.DynamicIngressState:
				stored := &v1beta1.DynamicIngressState{}
				if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), stored); err != nil {
					t.Fatal(err)
				}
				got = stored.Spec.Service
			case *v1beta1.ClusterDynamicIngressState:
				stored := &v1beta1.ClusterDynamicIngressState{}
				if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), stored); err != nil {
					t.Fatal(err)
				}
				got = stored.Spec.Service
			}
			if diff := cmp.Diff(&tt.want, got); diff != "" {
				t.Errorf("stored spec.service (-want +got):\n%s", diff)
			}
		})
	}
}

// withoutServiceName is state as kubectl sends a manifest without
// spec.service.name: the key absent, where the typed client would send "".
func withoutServiceName(t *testing.T, state *v1beta1.DynamicIngressState) *unstructured.Unstructured {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(state)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetAPIVersion(v1beta1.GroupVersion.String())
	u.SetKind("DynamicIngressState")
	unstructured.RemoveNestedField(u.Object, "spec", "service", "name")
	return u
}

// The messages of k8s.io/apimachinery's name checks, as the webhook
// passes them on.
const (
	dns1035Message = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
	dns1123Message = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)

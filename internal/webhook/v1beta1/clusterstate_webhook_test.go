package v1beta1_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// TestClusterStateAdmission sends switches that follow cluster states, and
// cluster states, through the API server and compares the whole error a
// client gets (what kubectl prints after "Error from server").
func TestClusterStateAdmission(t *testing.T) {
	ns := newNamespace(t)
	name := suite.NameOf(t)
	public := builders.FixedState("", name+"-public", "200", "").Cluster().
		FollowersMatching(map[string]string{"tier": "public"}).Obj()
	everyone := builders.FixedState("", name+"-all", "200", "").Cluster().FollowersAll().Obj()
	for _, s := range []client.Object{public, everyone} {
		if err := k8s.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(ctx, s) })
	}
	di := func(name string) *builders.DynamicIngressWrapper {
		return builders.DynamicIngress(ns, name).ExpectCode("200").
			Passive(builders.IngressTo(name+".example.com", "web")).Active(builders.IngressTo(name+".example.com", "sorry"))
	}
	const byDI = `admission webhook "vdynamicingress.ingress.dynamicingress.io" denied the request: `
	const byDHR = `admission webhook "vdynamichttproute.ingress.dynamicingress.io" denied the request: `
	const byCDIS = `admission webhook "vclusterdynamicingressstate.ingress.dynamicingress.io" denied the request: `
	notAdmitted := `spec.stateRef: Forbidden: ClusterDynamicIngressState "` + public.Name + `" does not admit namespace "` + ns +
		`": its spec.followers.namespaces admits the namespaces whose labels match "tier=public"`
	both := di("both").ClusterState(everyone.Name).Obj()
	both.Spec.State = "flag"
	noSelector := builders.FixedState("", name+"-noselector", "200", "").Cluster().Obj()
	noSelector.Spec.Followers.Namespaces.From = v1beta1.NamespacesFromSelector
	badSelector := builders.FixedState("", name+"-badselector", "200", "").Cluster().
		FollowersMatching(map[string]string{"tier": "pub lic"}).Obj()
	tests := []struct {
		name string
		obj  client.Object
		want string
	}{
		{"a DynamicIngress in a namespace the grant does not admit", di("outside").ClusterState(public.Name).Obj(),
			byDI + `DynamicIngress.ingress.dynamicingress.io "outside" is invalid: ` + notAdmitted},
		{"a DynamicHTTPRoute in a namespace the grant does not admit",
			builders.DynamicHTTPRoute(ns, "outside").ClusterState(public.Name).ExpectCode("200").
				Passive(builders.RouteTo("outside.example.com", "web")).Obj(),
			byDHR + `DynamicHTTPRoute.ingress.dynamicingress.io "outside" is invalid: ` + notAdmitted},
		{"both state and stateRef", both,
			`DynamicIngress.ingress.dynamicingress.io "both" is invalid: spec: Invalid value: exactly one of state and stateRef must be set`},
		{"neither state nor stateRef", di("neither").Obj(),
			`DynamicIngress.ingress.dynamicingress.io "neither" is invalid: spec: Invalid value: exactly one of state and stateRef must be set`},
		{"a grant without from", builders.FixedState("", name+"-nofrom", "200", "").Cluster().Obj(),
			`ClusterDynamicIngressState.ingress.dynamicingress.io "` + name + `-nofrom" is invalid: [spec.followers.namespaces.from: Required value, <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`},
		{"Selector without a selector", noSelector,
			`ClusterDynamicIngressState.ingress.dynamicingress.io "` + name + `-noselector" is invalid: spec.followers.namespaces.selector: Invalid value: selector is required when from is Selector`},
		{"a selector that is not one", badSelector,
			byCDIS + `ClusterDynamicIngressState.ingress.dynamicingress.io "` + name + `-badselector" is invalid: spec.followers.namespaces.selector.matchLabels: Invalid value: "pub lic": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := k8s.Create(ctx, tt.obj)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("Create: want an Invalid status, got %v", err)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("the error (-want +got):\n%s", diff)
			}
		})
	}

	// Accepted: a state that does not exist yet (the status says so), a
	// grant that admits the namespace, and, once the namespace is
	// labelled, the selector's state.
	for _, obj := range []client.Object{
		di("later").ClusterState(name + "-later").Obj(),
		di("everyone").ClusterState(everyone.Name).Obj(),
	} {
		if err := k8s.Create(ctx, obj); err != nil {
			t.Errorf("creating %s: %v", obj.GetName(), err)
		}
	}
	namespace := &corev1.Namespace{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: ns}, namespace); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(namespace.DeepCopy())
	namespace.Labels["tier"] = "public"
	if err := k8s.Patch(ctx, namespace, patch); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, di("inside").ClusterState(public.Name).Obj()); err != nil {
		t.Errorf("creating a follower in an admitted namespace: %v", err)
	}
	// An edit that leaves the reference alone is not checked again: the
	// grant is the platform's, and may change under the switch.
	delete(namespace.Labels, "tier")
	patch = client.MergeFrom(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"tier": "public"}}})
	if err := k8s.Patch(ctx, namespace, patch); err != nil {
		t.Fatal(err)
	}
	inside := &v1beta1.DynamicIngress{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "inside"}, inside); err != nil {
		t.Fatal(err)
	}
	edited := inside.DeepCopy()
	edited.Spec.FailurePolicy = v1beta1.FailurePolicyActive
	if err := k8s.Patch(ctx, edited, client.MergeFrom(inside)); err != nil {
		t.Errorf("editing the failurePolicy of a follower whose namespace left the grant: %v", err)
	}
}

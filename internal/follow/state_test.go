package follow_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/follow"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// followed is what a switch reads of the state it follows: which one, and
// the response its status records.
type followed struct {
	Namespace, Name  string
	Mode             v1beta1.StateMode
	StatusCode, Body string
}

// outcome is what State returned, as the decisions read it.
type outcome struct {
	State      *followed
	Unfollowed *decision.Unfollowed
}

// TestState: a switch follows a DynamicIngressState of its own namespace,
// or a ClusterDynamicIngressState whose grant admits its namespace's
// labels when the manager watches cluster states; otherwise it follows
// none, and the reason and message say why (the switch's conditions show
// them).
func TestState(t *testing.T) {
	shop := newLabelledNamespace(t, map[string]string{"team": "shop"})
	payments := newLabelledNamespace(t, map[string]string{"team": "payments"})
	unknown := suite.NameOf(t) + "-never-created"

	maintenance := builders.FixedState(shop, "maintenance", "503", "down for maintenance").Obj()
	createWithStatus(t, maintenance)

	cluster := suite.NameOf(t) + "-platform"
	platform := builders.FixedState("", cluster, "503", "platform maintenance").Cluster().
		FollowersMatching(map[string]string{"team": "shop"}).Obj()
	createWithStatus(t, platform)
	t.Cleanup(func() { _ = k8s.Delete(ctx, platform) })

	named := func(name string) v1beta1.StateReference { return v1beta1.StateReference{Name: name} }
	clusterRef := func(name string) v1beta1.StateReference {
		return v1beta1.StateReference{Kind: v1beta1.StateKindCluster, Name: name}
	}
	for _, tt := range []struct {
		name          string
		clusterStates bool
		namespace     string
		ref           v1beta1.StateReference
		want          outcome
	}{
		{
			name: "a state of the switch's namespace", namespace: shop, ref: named("maintenance"),
			want: outcome{State: &followed{Namespace: shop, Name: "maintenance",
				Mode: v1beta1.StateModeFixed, StatusCode: "503", Body: "down for maintenance"}},
		},
		{
			name: "a state of the switch's namespace, its kind written", namespace: shop, clusterStates: true,
			ref: v1beta1.StateReference{Kind: v1beta1.StateKindNamespaced, Name: "maintenance"},
			want: outcome{State: &followed{Namespace: shop, Name: "maintenance",
				Mode: v1beta1.StateModeFixed, StatusCode: "503", Body: "down for maintenance"}},
		},
		{
			name: "a state missing from the namespace", namespace: shop, ref: named("gone"),
			want: outcome{Unfollowed: &decision.Unfollowed{Reason: v1beta1.ReasonStateNotFound,
				Message: `DynamicIngressState "gone" not found`}},
		},
		{
			name: "a state of another namespace is not followed", namespace: payments, ref: named("maintenance"),
			want: outcome{Unfollowed: &decision.Unfollowed{Reason: v1beta1.ReasonStateNotFound,
				Message: `DynamicIngressState "maintenance" not found`}},
		},
		{
			name: "a cluster state, cluster states not watched", namespace: shop, ref: clusterRef(cluster),
			want: outcome{Unfollowed: &decision.Unfollowed{Reason: v1beta1.ReasonClusterStatesNotWatched,
				Message: `ClusterDynamicIngressState "` + cluster + `" is not followed: this manager does not watch ClusterDynamicIngressStates` +
					` (it runs in namespaced mode without the chart's clusterStates.followInNamespacedMode, docs/install.md)`}},
		},
		{
			name: "a cluster state whose grant admits the namespace's labels", clusterStates: true, namespace: shop, ref: clusterRef(cluster),
			want: outcome{State: &followed{Name: cluster,
				Mode: v1beta1.StateModeFixed, StatusCode: "503", Body: "platform maintenance"}},
		},
		{
			name: "a cluster state whose grant does not admit the namespace's labels", clusterStates: true, namespace: payments, ref: clusterRef(cluster),
			want: outcome{Unfollowed: &decision.Unfollowed{Reason: v1beta1.ReasonStateNotAdmitted,
				Message: `ClusterDynamicIngressState "` + cluster + `" does not admit namespace "` + payments +
					`": its spec.followers.namespaces admits the namespaces whose labels match "team=shop"`}},
		},
		{
			name: "a cluster state in a namespace not known", clusterStates: true, namespace: unknown, ref: clusterRef(cluster),
			want: outcome{Unfollowed: &decision.Unfollowed{Reason: v1beta1.ReasonStateNotAdmitted,
				Message: `ClusterDynamicIngressState "` + cluster + `" does not admit namespace "` + unknown +
					`" yet: the manager does not know the namespace's labels yet`}},
		},
		{
			name: "a cluster state that does not exist", clusterStates: true, namespace: shop, ref: clusterRef(cluster + "-gone"),
			want: outcome{Unfollowed: &decision.Unfollowed{Reason: v1beta1.ReasonStateNotFound,
				Message: `ClusterDynamicIngressState "` + cluster + `-gone" not found`}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			state, unfollowed, err := follow.State(ctx, k8s, tt.clusterStates, tt.namespace, tt.ref)
			if err != nil {
				t.Fatalf("State: %v", err)
			}
			got := outcome{Unfollowed: unfollowed}
			if state != nil {
				got.State = &followed{Namespace: state.Namespace, Name: state.Name,
					Mode: state.Status.Mode, StatusCode: state.Status.StatusCode, Body: state.Status.Body}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("State(%q, %s) (-want +got):\n%s", tt.namespace, tt.ref, diff)
			}
		})
	}
}

// newLabelledNamespace creates a namespace of the test's own with these
// labels.
func newLabelledNamespace(t *testing.T, labels map[string]string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: suite.NameOf(t) + "-", Labels: labels}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return ns.Name
}

// stateObject is a DynamicIngressState or a ClusterDynamicIngressState.
type stateObject interface {
	client.Object
	StateView() *v1beta1.DynamicIngressState
	StateStatus() *v1beta1.DynamicIngressStateStatus
}

// createWithStatus creates a fixed state and records its response in its
// status, as the state reconciler would.
func createWithStatus(t *testing.T, obj stateObject) {
	t.Helper()
	if err := k8s.Create(ctx, obj); err != nil {
		t.Fatalf("creating %s: %v", obj.GetName(), err)
	}
	fixed := obj.StateView().Spec.FixedResponse
	*obj.StateStatus() = v1beta1.DynamicIngressStateStatus{Mode: v1beta1.StateModeFixed, StatusCode: fixed.Status, Body: fixed.Body}
	if err := k8s.Status().Update(ctx, obj); err != nil {
		t.Fatalf("writing the status of %s: %v", obj.GetName(), err)
	}
}

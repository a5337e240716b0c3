package controller_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controller"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// unknownNamespace is the namespace of TestNamespaceUnknownIsNotAdmitted,
// watched by a manager of its own; the suite's manager leaves it alone.
const unknownNamespace = "namespace-unknown"

// TestNamespaceUnknownIsNotAdmitted: a switch whose namespace the manager's
// cache does not hold (here the manager caches only the Namespaces
// labelled visible, as a cache that has not seen a new Namespace yet)
// follows no cluster state, even one whose grant (NotIn) would admit a
// namespace with no labels: it is StateNotAdmitted and its target stays in
// the failure policy's shape. It is decided again, by the grant, as soon
// as the Namespace shows up in the cache.
func TestNamespaceUnknownIsNotAdmitted(t *testing.T) {
	opts := controller.CacheOptions(true, true)
	opts.ByObject[&corev1.Namespace{}] = cache.ByObject{Label: labels.SelectorFromSet(labels.Set{"visible": "yes"})}
	startOwnManager(t, unknownNamespace, testConfig, opts, controller.Options{MaxConcurrentReconciles: 2, StateMaxConcurrentReconciles: 2, ClusterStates: true})
	labelNamespace(t, unknownNamespace, "visible", "") // left by an earlier run (go test -count=N)
	labelNamespace(t, unknownNamespace, "team", "blocked")

	name := suite.NameOf(t)
	state := builders.FixedState("", name, "503", "").Cluster().Obj()
	state.Spec.Followers.Namespaces = v1beta1.FollowerNamespaces{From: v1beta1.NamespacesFromSelector,
		Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "team", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"blocked"}}}}}
	create(t, state)
	deleteAfter(t, state)
	eventually(t, conditionOf(state, v1beta1.ConditionReady)).Should(Equal("True/Fixed"))

	di := builders.DynamicIngress(unknownNamespace, "web").ClusterState(name).ExpectCode("503").
		Passive(builders.IngressTo("www.example.com", "web")).Active(builders.IngressTo("www.example.com", "sorry")).Obj()
	create(t, di)

	eventually(t, conditionOf(di, v1beta1.ConditionReady)).Should(Equal("False/StateNotAdmitted"))
	NewWithT(t).Expect(conditionMessage(di, v1beta1.ConditionActive)()).To(Equal(`ClusterDynamicIngressState "` + name +
		`" does not admit namespace "` + unknownNamespace + `" yet: the manager does not know the namespace's labels yet; spec.failurePolicy Passive selects passive mode`))
	NewWithT(t).Consistently(backendOf(t, unknownNamespace, "web"), 2*time.Second, 100*time.Millisecond).
		ShouldNot(Equal("sorry"), "the target took the active shape while the namespace's labels were not known")

	// The Namespace shows up in the cache: the grant decides.
	labelNamespace(t, unknownNamespace, "visible", "yes")
	wantMessage := `ClusterDynamicIngressState "` + name + `" does not admit namespace "` + unknownNamespace +
		`": its spec.followers.namespaces admits the namespaces whose labels match "team notin (blocked)"; spec.failurePolicy Passive selects passive mode`
	eventually(t, conditionMessage(di, v1beta1.ConditionActive)).Should(Equal(wantMessage))
	NewWithT(t).Expect(backendOf(t, unknownNamespace, "web")()).To(Equal("web"))
}

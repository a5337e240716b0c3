package controller_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controller"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// Namespaces that managers of their own watch in namespaced mode: the
// suite's manager leaves them alone (cacheOptionsExcept).
const (
	clusterStatesOffNamespace = "cluster-states-off"
	clusterStatesOnNamespace  = "cluster-states-on"
)

// labelNamespace sets (value != "") or removes a label of a namespace.
func labelNamespace(t *testing.T, name, key, value string) {
	t.Helper()
	edit(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, func(ns *corev1.Namespace) {
		if value == "" {
			delete(ns.Labels, key)
			return
		}
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[key] = value
	})
}

// conditionMessage is the message of a condition, read from the API server.
func conditionMessage(obj client.Object, condType string) func() string {
	return func() string {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return "get: " + err.Error()
		}
		var conds []metav1.Condition
		switch o := obj.(type) {
		case interface{ SwitchStatus() *v1beta1.SwitchStatus }:
			conds = o.SwitchStatus().Conditions
		case interface {
			StateStatus() *v1beta1.DynamicIngressStateStatus
		}:
			conds = o.StateStatus().Conditions
		}
		if c := meta.FindStatusCondition(conds, condType); c != nil {
			return c.Message
		}
		return ""
	}
}

// deleteAfter deletes a cluster-scoped object when the test ends.
func deleteAfter(t *testing.T, obj client.Object) {
	t.Cleanup(func() { _ = k8s.Delete(ctx, obj) })
}

// TestClusterStateFlipsFollowersInAdmittedNamespaces: one cluster state
// drives switches of both kinds in two namespaces its grant admits; a
// namespace un-labelled mid-way stops following (StateNotAdmitted, its
// failurePolicy deciding) while the other still follows, and follows again
// once labelled back; editing the grant does the same.
func TestClusterStateFlipsFollowersInAdmittedNamespaces(t *testing.T) {
	shop, blog := newNamespace(t), newNamespace(t)
	name := suite.NameOf(t)
	tier := "public-" + name[len(name)-8:]
	labelNamespace(t, shop, "tier", tier)
	labelNamespace(t, blog, "tier", tier)
	state := builders.FixedState("", name, "200", "").Cluster().FollowersMatching(map[string]string{"tier": tier}).Obj()
	create(t, state)
	deleteAfter(t, state)

	var switches []client.Object
	for _, ns := range []string{shop, blog} {
		di := builders.DynamicIngress(ns, "web").ClusterState(name).ExpectCode("503").
			Passive(builders.IngressTo("www.example.com", "web")).Active(builders.IngressTo("www.example.com", "sorry")).Obj()
		dhr := builders.DynamicHTTPRoute(ns, "route").ClusterState(name).ExpectCode("503").
			Passive(builders.RouteTo("www.example.com", "web")).Active(builders.RedirectTo("www.example.com", "status.example.com")).Obj()
		create(t, di, dhr)
		switches = append(switches, di, dhr)
	}
	eventually(t, conditionOf(state, v1beta1.ConditionReady)).Should(Equal("True/Fixed"))
	for _, sw := range switches {
		eventually(t, conditionOf(sw, v1beta1.ConditionActive)).Should(Equal("False/NotMatched"))
		eventually(t, conditionOf(sw, v1beta1.ConditionReady)).Should(Equal("True/Synced"))
	}

	edit(t, state, func(s *v1beta1.ClusterDynamicIngressState) { s.Spec.FixedResponse.Status = "503" })
	for _, sw := range switches {
		eventually(t, conditionOf(sw, v1beta1.ConditionActive)).Should(Equal("True/Matched"))
	}
	eventually(t, backendOf(t, shop, "web")).Should(Equal("sorry"))
	eventually(t, backendOf(t, blog, "web")).Should(Equal("sorry"))
	eventually(t, eventReasons(shop, "web")).Should(ContainElement("Switched"))

	// blog leaves the grant: its switches follow their failurePolicy
	// (Passive), shop's still follow the state.
	labelNamespace(t, blog, "tier", "")
	blogDI := switches[2]
	eventually(t, conditionOf(blogDI, v1beta1.ConditionReady)).Should(Equal("False/StateNotAdmitted"))
	eventually(t, conditionOf(blogDI, v1beta1.ConditionActive)).Should(Equal("False/StateNotAdmitted"))
	eventually(t, conditionOf(switches[3], v1beta1.ConditionActive)).Should(Equal("False/StateNotAdmitted"))
	eventually(t, backendOf(t, blog, "web")).Should(Equal("web"))
	wantMessage := `ClusterDynamicIngressState "` + name + `" does not admit namespace "` + blog +
		`": its spec.followers.namespaces admits the namespaces whose labels match "tier=` + tier + `"; spec.failurePolicy Passive selects passive mode`
	NewWithT(t).Expect(conditionMessage(blogDI, v1beta1.ConditionActive)()).To(Equal(wantMessage))
	NewWithT(t).Consistently(conditionOf(switches[0], v1beta1.ConditionActive), time.Second).Should(Equal("True/Matched"))

	labelNamespace(t, blog, "tier", tier)
	eventually(t, conditionOf(blogDI, v1beta1.ConditionActive)).Should(Equal("True/Matched"))
	eventually(t, conditionOf(blogDI, v1beta1.ConditionReady)).Should(Equal("True/Synced"))
	eventually(t, backendOf(t, blog, "web")).Should(Equal("sorry"))

	// The platform narrows the grant to shop alone.
	edit(t, state, func(s *v1beta1.ClusterDynamicIngressState) {
		s.Spec.Followers.Namespaces.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": shop}}
	})
	eventually(t, conditionOf(blogDI, v1beta1.ConditionReady)).Should(Equal("False/StateNotAdmitted"))
	eventually(t, backendOf(t, blog, "web")).Should(Equal("web"))
	NewWithT(t).Expect(conditionOf(switches[0], v1beta1.ConditionReady)()).To(Equal("True/Synced"))
}

// TestClusterStateStatusAndEvents: a cluster state's status is written
// like a namespaced one's, and its events are recorded in the default
// namespace; a follower of a cluster state that does not exist is
// StateNotFound, and follows it once it is created.
func TestClusterStateStatusAndEvents(t *testing.T) {
	ns := newNamespace(t)
	name := suite.NameOf(t)
	di := builders.DynamicIngress(ns, "web").ClusterState(name).ExpectCode("200").
		Passive(builders.IngressTo("www.example.com", "web")).Active(builders.IngressTo("www.example.com", "sorry")).Obj()
	create(t, di)
	eventually(t, conditionOf(di, v1beta1.ConditionReady)).Should(Equal("False/StateNotFound"))
	NewWithT(t).Expect(conditionMessage(di, v1beta1.ConditionReady)()).To(Equal(`ClusterDynamicIngressState "` + name + `" not found; the target follows the passive template`))

	// A probe to nothing: ProbeFailed, and its Warning in default.
	state := builders.ProbedState("", name, "http://127.0.0.1:1/").Interval(time.Second).FailureThreshold(1).Cluster().FollowersAll().Obj()
	create(t, state)
	deleteAfter(t, state)
	eventually(t, conditionOf(state, v1beta1.ConditionReady)).Should(Equal("False/ProbeFailed"))
	eventually(t, func() []string {
		list := &eventsv1.EventList{}
		if err := k8s.List(ctx, list, client.InNamespace(metav1.NamespaceDefault)); err != nil {
			return []string{err.Error()}
		}
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "ClusterDynamicIngressState" && e.Regarding.Name == name {
				out = append(out, e.Reason)
			}
		}
		return out
	}).Should(ContainElement("ProbeFailed"))
	eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("False/NoResponse"))
	NewWithT(t).Expect(conditionOf(di, v1beta1.ConditionReady)()).To(Equal("True/Synced"))
	// Its metrics carry namespace="".
	if got := failuresByReason(t, "", name, "connect"); got == 0 {
		t.Errorf(`dynamicingressstate_probe_failures_total{namespace="",name=%q,reason="connect"} = 0, want the failed probes counted`, name)
	}
}

// TestClusterStateIsProbedOnce: 40 followers in 4 namespaces, and the
// endpoint sees one probe per interval, not one per follower or per
// namespace.
func TestClusterStateIsProbedOnce(t *testing.T) {
	var probes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		probes.Add(1)
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	name := suite.NameOf(t)
	state := builders.ProbedState("", name, srv.URL).Interval(time.Second).Cluster().FollowersAll().Obj()
	var followers []client.Object
	for range 4 {
		ns := newNamespace(t)
		for i := range 10 {
			followers = append(followers, builders.DynamicIngress(ns, "web-"+string(rune('a'+i))).ClusterState(name).ExpectCode("200").
				Active(builders.IngressTo("www.example.com", "web")).Obj())
		}
	}
	create(t, followers...)
	create(t, state)
	deleteAfter(t, state)
	for _, sw := range followers {
		eventually(t, conditionOf(sw, v1beta1.ConditionActive)).Should(Equal("True/Matched"))
	}
	before := probes.Load()
	const window = 4 * time.Second
	time.Sleep(window)
	got := probes.Load() - before
	t.Logf("%d probes in %s with 40 followers in 4 namespaces", got, window)
	// One probe a second, give or take one at each end of the window.
	if got < 2 || got > 6 {
		t.Errorf("%d probes in %s with 40 followers in 4 namespaces, want about 4 (one per interval)", got, window)
	}
}

// TestNamespacedModeFollowsClusterStatesOnlyWhenGranted: a manager that
// watches one namespace follows a cluster state when it is started with
// cluster states (the install's opt-in), and says so on the switch's
// status when it is not.
func TestNamespacedModeFollowsClusterStatesOnlyWhenGranted(t *testing.T) {
	name := suite.NameOf(t)
	state := builders.FixedState("", name, "200", "").Cluster().FollowersAll().Obj()
	create(t, state)
	deleteAfter(t, state)

	for _, tc := range []struct {
		namespace     string
		clusterStates bool
		active, ready string
	}{
		{clusterStatesOffNamespace, false, "False/ClusterStatesNotWatched", "False/ClusterStatesNotWatched"},
		{clusterStatesOnNamespace, true, "True/Matched", "True/Synced"},
	} {
		t.Run(tc.namespace, func(t *testing.T) {
			startOwnManager(t, tc.namespace, testConfig, controller.CacheOptions(true, tc.clusterStates),
				controller.Options{MaxConcurrentReconciles: 2, StateMaxConcurrentReconciles: 2, ClusterStates: tc.clusterStates})
			di := builders.DynamicIngress(tc.namespace, "web").ClusterState(name).ExpectCode("200").
				Passive(builders.IngressTo("www.example.com", "web")).Active(builders.IngressTo("www.example.com", "sorry")).Obj()
			create(t, di)
			eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal(tc.active))
			eventually(t, conditionOf(di, v1beta1.ConditionReady)).Should(Equal(tc.ready))
			if !tc.clusterStates {
				NewWithT(t).Expect(conditionMessage(di, v1beta1.ConditionReady)()).To(Equal(`ClusterDynamicIngressState "` + name +
					`" is not followed: this manager does not watch ClusterDynamicIngressStates (it runs in namespaced mode without the chart's clusterStates.followInNamespacedMode, docs/install.md); the target follows the passive template`))
			}
		})
	}
}

package controller_test

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// entriesOf is a switch's status.states and status.state, read from the
// API server, as "state: name=matched/reason ...".
func entriesOf(obj client.Object) func() string {
	return func() string {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return "get: " + err.Error()
		}
		status := obj.(interface{ SwitchStatus() *v1beta1.SwitchStatus }).SwitchStatus()
		out := status.State + ":"
		for _, e := range status.States {
			out += " " + e.Name + "=" + string(e.Matched) + "/" + e.Reason
		}
		return out
	}
}

// TestAnyOfFlipsOnEitherState: a DynamicIngress and a DynamicHTTPRoute with
// anyOf over the app's own DynamicIngressState and the platform's
// ClusterDynamicIngressState flip on either, and back only when neither
// matches; the message names the entries that decided.
func TestAnyOfFlipsOnEitherState(t *testing.T) {
	ns := newNamespace(t)
	name := suite.NameOf(t)
	platform := builders.FixedState("", name, "200", "").Cluster().FollowersAll().Obj()
	create(t, platform)
	deleteAfter(t, platform)
	window := builders.FixedState(ns, "window", "200", "").Obj()
	di := builders.DynamicIngress(ns, "web").
		AnyOf(builders.ClusterEntry("platform", name, "503"), builders.Entry("window", "window", "503")).
		Passive(builders.IngressTo("www.example.com", "web")).Active(builders.IngressTo("www.example.com", "sorry")).Obj()
	dhr := builders.DynamicHTTPRoute(ns, "route").
		AnyOf(builders.ClusterEntry("platform", name, "503"), builders.Entry("window", "window", "503")).
		Passive(builders.RouteTo("www.example.com", "web")).Active(builders.RedirectTo("www.example.com", "status.example.com")).Obj()
	create(t, window, di, dhr)
	for _, sw := range []client.Object{di, dhr} {
		eventually(t, conditionOf(sw, v1beta1.ConditionActive)).Should(Equal("False/NotMatched"))
		eventually(t, entriesOf(sw)).Should(Equal("anyOf(2): platform=False/NotMatched window=False/NotMatched"))
	}

	// The app's own window alone.
	setFixedStatus(t, window, "503")
	eventually(t, backendOf(t, ns, "web")).Should(Equal("sorry"))
	for _, sw := range []client.Object{di, dhr} {
		eventually(t, conditionOf(sw, v1beta1.ConditionActive)).Should(Equal("True/Matched"))
		eventually(t, entriesOf(sw)).Should(Equal("anyOf(2): platform=False/NotMatched window=True/Matched"))
	}
	NewWithT(t).Expect(conditionMessage(di, v1beta1.ConditionActive)()).To(Equal(`window matched (window: state "window" responded 503 as expected)`))
	setFixedStatus(t, window, "200")
	eventually(t, backendOf(t, ns, "web")).Should(Equal("web"))

	// The platform's kill switch alone.
	edit(t, platform, func(s *v1beta1.ClusterDynamicIngressState) { s.Spec.FixedResponse.Status = "503" })
	eventually(t, backendOf(t, ns, "web")).Should(Equal("sorry"))
	eventually(t, conditionOf(dhr, v1beta1.ConditionActive)).Should(Equal("True/Matched"))
	eventually(t, conditionMessage(di, v1beta1.ConditionActive)).Should(Equal(`platform matched (platform: state "` + name + `" responded 503 as expected)`))

	// Both, then the platform's back: still the window's.
	setFixedStatus(t, window, "503")
	eventually(t, entriesOf(di)).Should(Equal("anyOf(2): platform=True/Matched window=True/Matched"))
	edit(t, platform, func(s *v1beta1.ClusterDynamicIngressState) { s.Spec.FixedResponse.Status = "200" })
	eventually(t, entriesOf(di)).Should(Equal("anyOf(2): platform=False/NotMatched window=True/Matched"))
	NewWithT(t).Expect(backendOf(t, ns, "web")()).To(Equal("sorry"))
	eventually(t, eventReasons(ns, "web")).Should(ContainElement("Switched"))
}

// TestAllOfFlipsOnlyOnBoth: allOf turns active only when both states
// match, and back as soon as one does not.
func TestAllOfFlipsOnlyOnBoth(t *testing.T) {
	ns := newNamespace(t)
	flag := builders.FixedState(ns, "flag", "200", "").Obj()
	window := builders.FixedState(ns, "window", "200", "").Obj()
	di := builders.DynamicIngress(ns, "web").
		AllOf(builders.Entry("flag", "flag", "503"), builders.Entry("window", "window", "503")).
		Passive(builders.IngressTo("www.example.com", "web")).Active(builders.IngressTo("www.example.com", "sorry")).Obj()
	create(t, flag, window, di)
	eventually(t, entriesOf(di)).Should(Equal("allOf(2): flag=False/NotMatched window=False/NotMatched"))

	setFixedStatus(t, flag, "503")
	eventually(t, entriesOf(di)).Should(Equal("allOf(2): flag=True/Matched window=False/NotMatched"))
	NewWithT(t).Expect(conditionOf(di, v1beta1.ConditionActive)()).To(Equal("False/NotMatched"))
	NewWithT(t).Expect(backendOf(t, ns, "web")()).To(Equal("web"))

	setFixedStatus(t, window, "503")
	eventually(t, backendOf(t, ns, "web")).Should(Equal("sorry"))
	eventually(t, conditionMessage(di, v1beta1.ConditionActive)).Should(Equal(
		`flag and window matched (flag: state "flag" responded 503 as expected; window: state "window" responded 503 as expected)`))

	setFixedStatus(t, flag, "200")
	eventually(t, backendOf(t, ns, "web")).Should(Equal("web"))
	eventually(t, conditionMessage(di, v1beta1.ConditionActive)).Should(Equal(
		`flag did not match (flag: state "flag" responded 200: statusCode is "200", expected "503")`))
}

// TestListEntryNotAdmittedIsUnknown: an entry following a cluster state
// whose grant does not admit the namespace is Unknown; the other entry
// decides when it can (anyOf: a match), and failurePolicy when it cannot.
// The switch's Ready stays True: one entry not followed is not a failure of
// the switch.
func TestListEntryNotAdmittedIsUnknown(t *testing.T) {
	ns := newNamespace(t)
	name := suite.NameOf(t)
	platform := builders.FixedState("", name, "503", "").Cluster().
		FollowersMatching(map[string]string{"kubernetes.io/metadata.name": "elsewhere"}).Obj()
	create(t, platform)
	deleteAfter(t, platform)
	window := builders.FixedState(ns, "window", "200", "").Obj()
	di := builders.DynamicIngress(ns, "web").
		AnyOf(builders.ClusterEntry("platform", name, "503"), builders.Entry("window", "window", "503")).
		FailurePolicy(v1beta1.FailurePolicyActive).
		Passive(builders.IngressTo("www.example.com", "web")).Active(builders.IngressTo("www.example.com", "sorry")).Obj()
	create(t, window, di)
	eventually(t, entriesOf(di)).Should(Equal("anyOf(2): platform=Unknown/StateNotAdmitted window=False/NotMatched"))
	eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("True/StateNotAdmitted"))
	NewWithT(t).Expect(conditionMessage(di, v1beta1.ConditionActive)()).To(HavePrefix(`platform: StateNotAdmitted (platform: ClusterDynamicIngressState "` + name + `" does not admit namespace "` + ns + `"`))
	NewWithT(t).Expect(conditionMessage(di, v1beta1.ConditionActive)()).To(HaveSuffix(`; spec.failurePolicy Active selects active mode`))
	eventually(t, backendOf(t, ns, "web")).Should(Equal("sorry"))
	eventually(t, conditionOf(di, v1beta1.ConditionReady)).Should(Equal("True/Synced"))

	// The window's own state matches: decided by it, whatever the policy.
	setFixedStatus(t, window, "503")
	eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("True/Matched"))

	// The grant admits the namespace: the platform's entry is known.
	setFixedStatus(t, window, "200")
	edit(t, platform, func(s *v1beta1.ClusterDynamicIngressState) {
		s.Spec.Followers.Namespaces.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}
	})
	eventually(t, entriesOf(di)).Should(Equal("anyOf(2): platform=True/Matched window=False/NotMatched"))
	eventually(t, func() string {
		_ = k8s.Get(ctx, client.ObjectKeyFromObject(di), di)
		if c := meta.FindStatusCondition(di.Status.Conditions, v1beta1.ConditionActive); c != nil {
			return c.Message
		}
		return ""
	}).Should(Equal(`platform matched (platform: state "` + name + `" responded 503 as expected)`))
}

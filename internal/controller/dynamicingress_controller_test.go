package controller_test

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

func TestFixedStateSwitchesBothWays(t *testing.T) {
	ns := newNamespace(t)
	state := builders.FixedState(ns, "killswitch", "200", `{"status":"ok"}`).Obj()
	// storefront: no Ingress while passive. sorry: a passive and an active shape.
	storefront := builders.DynamicIngress(ns, "storefront").State("killswitch").ExpectCode("200").
		Active(builders.IngressTo("shop.example.com", "storefront").Label("app", "storefront").Annotation("team", "shop")).Obj()
	sorry := builders.DynamicIngress(ns, "sorry").State("killswitch").ExpectCode("200").
		Passive(builders.IngressTo("www.example.com", "web").Label("app", "web").Annotation("mode", "normal")).
		Active(builders.IngressTo("www.example.com", "sorry-page").Label("app", "sorry-page").Annotation("mode", "sorry")).Obj()
	create(t, state, storefront, sorry)

	eventually(t, conditionOf(state, v1beta1.ConditionReady)).Should(Equal("True/Fixed"))
	eventually(t, conditionOf(storefront, v1beta1.ConditionActive)).Should(Equal("True/Matched"))
	eventually(t, conditionOf(storefront, v1beta1.ConditionReady)).Should(Equal("True/Synced"))
	eventually(t, backendOf(t, ns, "sorry")).Should(Equal("sorry-page"))

	ing := ingressOf(t, ns, "storefront")()
	if ing == nil {
		t.Fatal("active template set, but Ingress storefront does not exist")
	}
	want := map[string]string{"app": "storefront", v1beta1.LabelManagedBy: v1beta1.ManagedByValue}
	if diff := cmp.Diff(want, ing.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"team": "shop"}, ing.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if !metav1.IsControlledBy(ing, storefront) {
		t.Errorf("Ingress ownerReferences %+v: no controller reference to the DynamicIngress", ing.OwnerReferences)
	}
	if storefront.Status.ObservedGeneration != storefront.Generation {
		t.Errorf("observedGeneration %d, want %d", storefront.Status.ObservedGeneration, storefront.Generation)
	}

	setFixedStatus(t, state, "503")
	eventually(t, conditionOf(storefront, v1beta1.ConditionActive)).Should(Equal("False/NotMatched"))
	eventually(t, ingressOf(t, ns, "storefront")).Should(BeNil())
	eventually(t, conditionOf(storefront, v1beta1.ConditionReady)).Should(Equal("True/Synced"))
	eventually(t, backendOf(t, ns, "sorry")).Should(Equal("web"))
	if got := ingressOf(t, ns, "sorry")().Annotations; !cmp.Equal(got, map[string]string{"mode": "normal"}) {
		t.Errorf("passive Ingress annotations = %v, want only mode=normal", got)
	}

	setFixedStatus(t, state, "200")
	eventually(t, backendOf(t, ns, "storefront")).Should(Equal("storefront"))
	eventually(t, backendOf(t, ns, "sorry")).Should(Equal("sorry-page"))

	eventually(t, eventReasons(ns, "storefront")).Should(ContainElement("Switched"))
}

// TestEditsAfterAFlipAreRestored edits an Ingress by hand after the
// operator applied it (a flip), when the manager knows what its last apply
// made of the Ingress (docs/architecture.md, "Knowing a target is up to
// date"): the edit is a newer version than that apply and is undone, be it
// in the spec or in an annotation the template sets (the spec then still
// holds the template's, so only the fields our field owner owns can tell).
func TestEditsAfterAFlipAreRestored(t *testing.T) {
	ns := newNamespace(t)
	state := builders.FixedState(ns, "flag", "200", "").Obj()
	di := builders.DynamicIngress(ns, "web").State("flag").ExpectCode("200").
		Passive(builders.IngressTo("a.example.com", "web").Annotation("mode", "normal")).
		Active(builders.IngressTo("a.example.com", "sorry").Annotation("mode", "sorry")).Obj()
	create(t, state, di)
	eventually(t, backendOf(t, ns, "web")).Should(Equal("sorry"))

	annotationOf := func() string { return ingressOf(t, ns, "web")().Annotations["mode"] }
	for _, flip := range []struct{ code, active, backend, mode string }{
		{"503", "False/NotMatched", "web", "normal"},
		{"200", "True/Matched", "sorry", "sorry"},
	} {
		setFixedStatus(t, state, flip.code)
		eventually(t, backendOf(t, ns, "web")).Should(Equal(flip.backend))
		// The status comes from the reconcile after the apply, the one
		// that finds the target as that apply left it.
		eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal(flip.active))

		editIngress(t, ns, "web", func(ing *networkingv1.Ingress) {
			ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name = "hand-edited"
		})
		eventually(t, backendOf(t, ns, "web")).Should(Equal(flip.backend))

		editIngress(t, ns, "web", func(ing *networkingv1.Ingress) { ing.Annotations["mode"] = "hand-edited" })
		eventually(t, annotationOf).Should(Equal(flip.mode))
	}
}

// TestTemplateEditsAfterAFlipAreApplied edits the template of the mode a
// DynamicIngress is in, after a flip applied it: the Ingress is still as
// that apply left it, and takes the edited template (the manager's record
// of its own last apply must not pass for the new template).
func TestTemplateEditsAfterAFlipAreApplied(t *testing.T) {
	ns := newNamespace(t)
	state := builders.FixedState(ns, "flag", "200", "").Obj()
	di := builders.DynamicIngress(ns, "web").State("flag").ExpectCode("200").
		Passive(builders.IngressTo("a.example.com", "web")).
		Active(builders.IngressTo("a.example.com", "sorry")).Obj()
	create(t, state, di)
	eventually(t, backendOf(t, ns, "web")).Should(Equal("sorry"))
	setFixedStatus(t, state, "503")
	eventually(t, backendOf(t, ns, "web")).Should(Equal("web"))
	eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("False/NotMatched"))

	for _, backend := range []string{"web-v2", "web-v3"} {
		edit(t, di, func(di *v1beta1.DynamicIngress) {
			di.Spec.PassiveIngress.Template.Spec = builders.IngressTo("a.example.com", backend).Template.Spec
		})
		eventually(t, backendOf(t, ns, "web")).Should(Equal(backend))
	}
}

// A flip back to a mode applies the body kept from that mode's last apply
// only while the templates are the ones it was rendered from: both
// templates edited while passive, the flip to active applies the edited
// active template, not the body kept from before the edit.
func TestFlipBackAfterAnEditAppliesTheEditedTemplate(t *testing.T) {
	ns := newNamespace(t)
	state := builders.FixedState(ns, "flag", "200", "").Obj()
	di := builders.DynamicIngress(ns, "web").State("flag").ExpectCode("200").
		Passive(builders.IngressTo("a.example.com", "web")).
		Active(builders.IngressTo("a.example.com", "sorry")).Obj()
	create(t, state, di)
	eventually(t, backendOf(t, ns, "web")).Should(Equal("sorry"))
	// Each mode applied once, and passive again from its kept body.
	for _, step := range []struct{ code, backend, active string }{
		{"503", "web", "False/NotMatched"}, {"200", "sorry", "True/Matched"}, {"503", "web", "False/NotMatched"},
	} {
		setFixedStatus(t, state, step.code)
		eventually(t, backendOf(t, ns, "web")).Should(Equal(step.backend))
		eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal(step.active))
	}

	edit(t, di, func(di *v1beta1.DynamicIngress) {
		di.Spec.PassiveIngress.Template.Spec = builders.IngressTo("a.example.com", "web-v2").Template.Spec
		di.Spec.ActiveIngress.Template.Spec = builders.IngressTo("a.example.com", "sorry-v2").Template.Spec
	})
	eventually(t, backendOf(t, ns, "web")).Should(Equal("web-v2"))
	setFixedStatus(t, state, "200")
	eventually(t, backendOf(t, ns, "web")).Should(Equal("sorry-v2"))
	eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("True/Matched"))
}

func TestSwitchingKeepsWhatOthersSet(t *testing.T) {
	ns := newNamespace(t)
	state := builders.FixedState(ns, "flag", "200", "").Obj()
	active := builders.IngressTo("a.example.com", "sorry").Label("app", "sorry").
		Annotation("sorry.example.com/banner", "on").Annotation("shared", "active").ClassName("nginx")
	passive := builders.IngressTo("a.example.com", "web").Label("app", "web").Annotation("shared", "passive")
	di := builders.DynamicIngress(ns, "web").State("flag").ExpectCode("200").Passive(passive).Active(active).Obj()
	create(t, state, di)
	eventually(t, backendOf(t, ns, "web")).Should(Equal("sorry"))

	// Another actor adds its own annotation and writes the Ingress status.
	ing := ingressOf(t, ns, "web")()
	patch := client.MergeFrom(ing.DeepCopy())
	ing.Annotations["other-controller.example.com/seen"] = "yes"
	if err := k8s.Patch(ctx, ing, patch, client.FieldOwner("other-controller")); err != nil {
		t.Fatal(err)
	}
	patch = client.MergeFrom(ing.DeepCopy())
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "203.0.113.7"}}
	if err := k8s.Status().Patch(ctx, ing, patch, client.FieldOwner("ingress-controller")); err != nil {
		t.Fatal(err)
	}

	setFixedStatus(t, state, "500")
	eventually(t, backendOf(t, ns, "web")).Should(Equal("web"))
	ing = ingressOf(t, ns, "web")()
	want := map[string]string{"shared": "passive", "other-controller.example.com/seen": "yes"}
	if diff := cmp.Diff(want, ing.Annotations); diff != "" {
		t.Errorf("annotations after switching to passive (-want +got):\n%s", diff)
	}
	if ing.Spec.IngressClassName != nil {
		t.Errorf("ingressClassName %q of the active template survived the switch", *ing.Spec.IngressClassName)
	}
	if got := ing.Status.LoadBalancer.Ingress; len(got) != 1 || got[0].IP != "203.0.113.7" {
		t.Errorf("Ingress status set by another controller was lost: %+v", got)
	}
}

func TestStateMissingThenCreated(t *testing.T) {
	ns := newNamespace(t)
	di := builders.DynamicIngress(ns, "site").State("later").ExpectCode("200").
		Passive(builders.IngressTo("s.example.com", "web").Label("app", "web")).
		Active(builders.IngressTo("s.example.com", "sorry").Label("app", "sorry")).Obj()
	create(t, di)
	eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("False/StateNotFound"))
	eventually(t, conditionOf(di, v1beta1.ConditionReady)).Should(Equal("False/StateNotFound"))
	// A missing state never matches: the target follows the passive template.
	eventually(t, backendOf(t, ns, "site")).Should(Equal("web"))
	eventually(t, eventReasons(ns, "site")).Should(ContainElement("StateNotFound"))

	create(t, builders.FixedState(ns, "later", "200", "").Obj())
	eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("True/Matched"))
	eventually(t, conditionOf(di, v1beta1.ConditionReady)).Should(Equal("True/Synced"))
	eventually(t, backendOf(t, ns, "site")).Should(Equal("sorry"))
}

func TestUnownedIngressIsLeftUntouched(t *testing.T) {
	ns := newNamespace(t)
	theirs := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken", Annotations: map[string]string{"owner": "someone-else"}},
		Spec:       builders.IngressTo("t.example.com", "theirs").Label("app", "theirs").Template.Spec,
	}
	create(t, theirs)
	before := ingressOf(t, ns, "taken")()

	state := builders.FixedState(ns, "flag", "200", "").Obj()
	// Active with a template, then passive with none: neither may change or
	// delete the Ingress that is not ours.
	di := builders.DynamicIngress(ns, "taken").State("flag").ExpectCode("200").
		Active(builders.IngressTo("t.example.com", "ours").Label("app", "ours")).Obj()
	create(t, state, di)
	eventually(t, conditionOf(di, v1beta1.ConditionReady)).Should(Equal("False/TargetConflict"))
	eventually(t, eventReasons(ns, "taken")).Should(ContainElement("TargetConflict"))

	setFixedStatus(t, state, "503")
	eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("False/NotMatched"))
	NewWithT(t).Consistently(conditionOf(di, v1beta1.ConditionReady), 2*time.Second, 100*time.Millisecond).Should(Equal("False/TargetConflict"))

	after := ingressOf(t, ns, "taken")()
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("the unowned Ingress changed (-before +after):\n%s", diff)
	}
}

func TestTargetInAnotherNamespaceIsRefused(t *testing.T) {
	// No webhook runs in this suite: the controller itself must not write
	// outside the DynamicIngress's namespace.
	ns := newNamespace(t)
	other := newNamespace(t)
	di := builders.DynamicIngress(ns, "escape").State("s").ExpectCode("200").
		Passive(builders.IngressTo("e.example.com", "web").Label("app", "web")).Obj()
	di.Spec.Target.Namespace = other
	create(t, builders.FixedState(ns, "s", "503", "").Obj(), di)
	eventually(t, conditionOf(di, v1beta1.ConditionReady)).Should(Equal("False/ApplyFailed"))
	NewWithT(t).Consistently(ingressOf(t, other, "escape"), time.Second, 100*time.Millisecond).Should(BeNil())
}

func TestOneStateDrivesFifty(t *testing.T) {
	ns := newNamespace(t)
	state := builders.FixedState(ns, "maintenance", "200", `{"maintenance": false}`).Obj()
	create(t, state)
	const n = 50
	for i := range n {
		name := fmt.Sprintf("site-%02d", i)
		di := builders.DynamicIngress(ns, name).State("maintenance").
			Passive(builders.IngressTo(name+".example.com", "web").Label("app", "web")).
			Active(builders.IngressTo(name+".example.com", "maintenance-page").Label("app", "maintenance-page")).Obj()
		body := `{"maintenance":true}`
		di.Spec.Expected = v1beta1.ExpectedResponse{Body: &body}
		create(t, di)
	}
	eventually(t, backendsIn(t, ns)).Should(HaveLen(n))
	eventually(t, backendsIn(t, ns)).Should(HaveEach("web"))

	setFixedBody(t, state, `{ "maintenance" : true }`)
	eventually(t, backendsIn(t, ns)).Should(HaveEach("maintenance-page"))
	setFixedBody(t, state, `{"maintenance": false}`)
	eventually(t, backendsIn(t, ns)).Should(And(HaveLen(n), HaveEach("web")))
}

func TestDeletingDynamicIngressLeavesOwnerReferenceForGC(t *testing.T) {
	// envtest runs no garbage collector; what the operator can be held to
	// is that the Ingress carries a controller reference with
	// blockOwnerDeletion, so the collector deletes it in a cluster.
	ns := newNamespace(t)
	di := builders.DynamicIngress(ns, "gc").State("s").ExpectCode("200").
		Passive(builders.IngressTo("gc.example.com", "web").Label("app", "web")).Obj()
	create(t, builders.FixedState(ns, "s", "503", "").Obj(), di)
	eventually(t, backendOf(t, ns, "gc")).Should(Equal("web"))
	refs := ingressOf(t, ns, "gc")().OwnerReferences
	want := []metav1.OwnerReference{{APIVersion: "ingress.dynamicingress.io/v1beta1", Kind: "DynamicIngress", Name: "gc",
		UID: di.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	if diff := cmp.Diff(want, refs); diff != "" {
		t.Errorf("ownerReferences (-want +got):\n%s", diff)
	}
}

func backendsIn(t *testing.T, ns string) func() []string {
	return func() []string {
		list := &networkingv1.IngressList{}
		if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, ing := range list.Items {
			out = append(out, ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name)
		}
		return out
	}
}

// eventReasons lists the reasons of the events about the named object.
func eventReasons(ns, name string) func() []string {
	return func() []string {
		list := &eventsv1.EventList{}
		if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
			return []string{"list: " + err.Error()}
		}
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Name == name {
				out = append(out, e.Reason)
			}
		}
		return out
	}
}

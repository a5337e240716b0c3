package controller_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	. "github.com/onsi/gomega"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestFlipBackAfterAMetadataEditAppliesAFreshRender flips a DynamicIngress
// both ways, so that a body is kept for each mode, then edits only the
// switch's metadata (labels, annotations: the generation stays) and flips
// it back and forth again: each time the Ingress is what a fresh render of
// the switch as it is now gives, labels, annotations, owner and spec, and
// carries nothing of the switch's own labels and annotations. What a kept
// body is matched against is tested field by field in
// TestKeptBodiesFollowEveryRenderInput.
func TestFlipBackAfterAMetadataEditAppliesAFreshRender(t *testing.T) {
	ns := newNamespace(t)
	state := builders.FixedState(ns, "flag", "200", "").Obj()
	di := builders.DynamicIngress(ns, "web").State("flag").ExpectCode("200").
		Passive(builders.IngressTo("a.example.com", "web").Label("tier", "frontend").Annotation("example.com/mode", "passive")).
		Active(builders.IngressTo("a.example.com", "sorry").Annotation("example.com/mode", "active")).Obj()
	create(t, state, di)
	eventually(t, backendOf(t, ns, "web")).Should(Equal("sorry"))
	for _, step := range []struct{ code, backend string }{{"503", "web"}, {"200", "sorry"}, {"503", "web"}} {
		setFixedStatus(t, state, step.code)
		eventually(t, backendOf(t, ns, "web")).Should(Equal(step.backend))
	}
	eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("False/NotMatched"))
	generation := di.Generation

	edit(t, di, func(di *v1beta1.DynamicIngress) {
		di.Labels = map[string]string{"team": "payments", "tier": "backend"}
		di.Annotations = map[string]string{"example.com/mode": "edited on the switch", "note": "edited by hand"}
	})
	if di.Generation != generation {
		t.Fatalf("the metadata edit moved the generation from %d to %d: the test needs one that does not", generation, di.Generation)
	}
	for _, step := range []struct {
		code, backend string
		active        bool
	}{{"200", "sorry", true}, {"503", "web", false}} {
		setFixedStatus(t, state, step.code)
		eventually(t, backendOf(t, ns, "web")).Should(Equal(step.backend))
		eventually(t, differenceFromARender(t, di, step.active)).Should(BeEmpty())
	}
}

// differenceFromARender is how the switch's Ingress differs from a fresh
// render of the switch as the API server has it now, in the given mode:
// the labels, annotations, owner references and spec, as cmp.Diff
// "(-render +live)"; "" when it is the same.
func differenceFromARender(t *testing.T, di *v1beta1.DynamicIngress, active bool) func() string {
	return func() string {
		fresh := &v1beta1.DynamicIngress{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(di), fresh); err != nil {
			t.Fatal(err)
		}
		rendered, err := target.Render(target.Ingress{}, fresh, active)
		if err != nil {
			t.Fatal(err)
		}
		want := &networkingv1.Ingress{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(rendered.Object, want); err != nil {
			t.Fatal(err)
		}
		live := ingressOf(t, di.Namespace, di.Spec.Target.Name)()
		if live == nil {
			return "no Ingress"
		}
		shape := func(ing *networkingv1.Ingress) *networkingv1.Ingress {
			out := &networkingv1.Ingress{Spec: ing.Spec}
			out.Labels, out.Annotations, out.OwnerReferences = ing.Labels, ing.Annotations, ing.OwnerReferences
			return out
		}
		return cmp.Diff(shape(want), shape(live), cmpopts.EquateEmpty())
	}
}

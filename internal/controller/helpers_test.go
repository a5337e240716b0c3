package controller_test

import (
	"context"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

var ctx = context.Background()

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
}

// conditionOf returns "Status/Reason" of a condition of a DynamicIngress or
// DynamicIngressState, read from the API server, or "" when it is missing.
func conditionOf(obj client.Object, condType string) func() string {
	return func() string {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return "get: " + err.Error()
		}
		var conds []metav1.Condition
		var gen int64
		switch o := obj.(type) {
		case interface{ SwitchStatus() *v1beta1.SwitchStatus }:
			conds, gen = o.SwitchStatus().Conditions, obj.GetGeneration()
		case interface {
			StateStatus() *v1beta1.DynamicIngressStateStatus
		}:
			conds, gen = o.StateStatus().Conditions, obj.GetGeneration()
		}
		c := meta.FindStatusCondition(conds, condType)
		if c == nil {
			return ""
		}
		if c.ObservedGeneration != gen {
			return "stale"
		}
		return string(c.Status) + "/" + c.Reason
	}
}

// ingressOf reads an Ingress from the API server; nil when it does not exist.
func ingressOf(t *testing.T, ns, name string) func() *networkingv1.Ingress {
	return func() *networkingv1.Ingress {
		ing := &networkingv1.Ingress{}
		err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ing)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			t.Fatalf("reading Ingress %s/%s: %v", ns, name, err)
		}
		return ing
	}
}

// backendOf names the service of the Ingress's first rule, "" when absent.
func backendOf(t *testing.T, ns, name string) func() string {
	return func() string {
		ing := ingressOf(t, ns, name)()
		if ing == nil {
			return "<none>"
		}
		if len(ing.Spec.Rules) == 0 || ing.Spec.Rules[0].HTTP == nil {
			return "<no rules>"
		}
		return ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name
	}
}

// setFixedStatus changes a fixed state's status code.
func setFixedStatus(t *testing.T, state *v1beta1.DynamicIngressState, code string) {
	t.Helper()
	patchFixed(t, state, func(f *v1beta1.FixedResponse) { f.Status = code })
}

// setFixedBody changes a fixed state's body.
func setFixedBody(t *testing.T, state *v1beta1.DynamicIngressState, body string) {
	t.Helper()
	patchFixed(t, state, func(f *v1beta1.FixedResponse) { f.Body = body })
}

func patchFixed(t *testing.T, state *v1beta1.DynamicIngressState, change func(*v1beta1.FixedResponse)) {
	t.Helper()
	edit(t, state, func(state *v1beta1.DynamicIngressState) { change(state.Spec.FixedResponse) })
}

// edit reads obj afresh, changes it and sends the change as a merge patch.
// A patch carries no resourceVersion: a status write of the manager's in
// between cannot make it fail with a conflict, as an update of the version
// read here could.
func edit[T client.Object](t *testing.T, obj T, change func(T), opts ...client.PatchOption) {
	t.Helper()
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	change(obj)
	if err := k8s.Patch(ctx, obj, patch, opts...); err != nil {
		t.Fatalf("changing %T %s/%s: %v", obj, obj.GetNamespace(), obj.GetName(), err)
	}
}

// editIngress changes an Ingress by hand, as field manager "someone".
func editIngress(t *testing.T, ns, name string, change func(*networkingv1.Ingress)) {
	t.Helper()
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	edit(t, ing, change, client.FieldOwner("someone"))
}

// failuresByReason reads dynamicingressstate_probe_failures_total for a
// state and a reason.
func failuresByReason(t *testing.T, ns, name, reason string) int {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "dynamicingressstate_probe_failures_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "namespace") == ns && label(m, "name") == name && label(m, "reason") == reason {
				return int(m.GetCounter().GetValue())
			}
		}
	}
	return 0
}

package bench

import (
	"encoding/json"
	"fmt"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"sigs.k8s.io/yaml"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

func objName(i int) string { return fmt.Sprintf("site-%05d", i) }

func fixedState(ns, name, code string) *v1beta1.DynamicIngressState {
	return &v1beta1.DynamicIngressState{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1beta1.DynamicIngressStateSpec{FixedResponse: &v1beta1.FixedResponse{Status: code}},
	}
}

// probedState is a state probing url every probeInterval; the caller may
// set more of its probe (BodyExpression) before Obj.
func probedState(ns, name, url string) *builders.StateWrapper {
	return builders.ProbedState(ns, name, url).Interval(probeInterval)
}

// ingressSpec is the spec of either shape (see hasShape).
func ingressSpec(name string, active bool) networkingv1.IngressSpec {
	backend := passiveBackend
	if active {
		backend = activeBackend
	}
	prefix := networkingv1.PathTypePrefix
	return networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
		Host: name + ".example.com",
		IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
			Path: "/", PathType: &prefix,
			Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
				Name: backend, Port: networkingv1.ServiceBackendPort{Number: 80}}},
		}}}},
	}}}
}

func shapeAnnotations(active bool) map[string]string {
	if active {
		return map[string]string{modeAnnotation: activeBackend}
	}
	return nil
}

// dynamicIngress is a DynamicIngress whose target takes the two shapes,
// active while its state answers 200.
func dynamicIngress(ns, name, state string) *v1beta1.DynamicIngress {
	return &v1beta1.DynamicIngress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1beta1.DynamicIngressSpec{
			Target:   v1beta1.TargetReference{Name: name},
			State:    state,
			Expected: v1beta1.ExpectedResponse{StatusCode: "200"},
			PassiveIngress: &v1beta1.IngressVariant{Template: v1beta1.IngressTemplate{
				Spec: ingressSpec(name, false)}},
			ActiveIngress: &v1beta1.IngressVariant{Template: v1beta1.IngressTemplate{
				Metadata: v1beta1.TemplateMetadata{Annotations: shapeAnnotations(true)},
				Spec:     ingressSpec(name, true)}},
		},
	}
}

// baselineLabel marks the Ingresses the baselines write; the manager caches
// only its own label, so it never sees them.
const baselineLabel = "bench"

// baselineIngress is the Ingress a baseline writes: the shape the operator
// renders, without the operator's label and ownerReference.
func baselineIngress(ns, name string, active bool) *networkingv1.Ingress {
	return &networkingv1.Ingress{
		TypeMeta: metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "Ingress"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels:      map[string]string{v1beta1.LabelManagedBy: baselineLabel},
			Annotations: shapeAnnotations(active)},
		Spec: ingressSpec(name, active),
	}
}

// manifest is baselineIngress as a manifest: no status, no empty
// creationTimestamp.
func manifest(ns, name string, active bool) map[string]any {
	raw, err := json.Marshal(baselineIngress(ns, name, active))
	if err != nil {
		panic(err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(raw, &m); err != nil {
		panic(err)
	}
	delete(m, "status")
	delete(m["metadata"].(map[string]any), "creationTimestamp")
	return m
}

// baselineApply is baselineIngress as a server-side apply configuration.
func baselineApply(ns, name string, active bool) *networkingv1ac.IngressApplyConfiguration {
	raw, err := json.Marshal(manifest(ns, name, active))
	if err != nil {
		panic(err)
	}
	ac := &networkingv1ac.IngressApplyConfiguration{}
	if err := json.Unmarshal(raw, ac); err != nil {
		panic(err)
	}
	return ac
}

// manifestYAML is baselineIngress as a file for kubectl.
func manifestYAML(ns, name string, active bool) []byte {
	raw, err := yaml.Marshal(manifest(ns, name, active))
	if err != nil {
		panic(err)
	}
	return raw
}

// lastApplied is what client-side kubectl apply keeps in the
// kubectl.kubernetes.io/last-applied-configuration annotation.
func lastApplied(ns, name string, active bool) string {
	raw, err := json.Marshal(manifest(ns, name, active))
	if err != nil {
		panic(err)
	}
	return string(raw) + "\n"
}

// ownedApply is baselineApply with what the operator's applies carry
// besides the template: a controller ownerReference and, when uid is set,
// the Ingress's UID as a precondition.
func ownedApply(ns, name string, active bool, owner *metav1.OwnerReference, uid types.UID) *networkingv1ac.IngressApplyConfiguration {
	ac := baselineApply(ns, name, active)
	ac.WithOwnerReferences(metav1ac.OwnerReference().WithAPIVersion(owner.APIVersion).WithKind(owner.Kind).
		WithName(owner.Name).WithUID(owner.UID).WithController(true).WithBlockOwnerDeletion(true))
	if uid != "" {
		ac.WithUID(uid)
	}
	return ac
}

package ingress

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

func TestSelectTemplate(t *testing.T) {
	passive := &v1beta1.IngressVariant{Template: v1beta1.IngressTemplate{Metadata: v1beta1.TemplateMetadata{Labels: map[string]string{"mode": "passive"}}}}
	active := &v1beta1.IngressVariant{Template: v1beta1.IngressTemplate{Metadata: v1beta1.TemplateMetadata{Labels: map[string]string{"mode": "active"}}}}
	tests := []struct {
		name            string
		passive, active *v1beta1.IngressVariant
		isActive        bool
		want            string // the mode label of the selected template, "" for none
	}{
		{"active selects active", passive, active, true, "active"},
		{"passive selects passive", passive, active, false, "passive"},
		{"active null", passive, nil, true, ""},
		{"passive null", nil, active, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SelectTemplate(v1beta1.DynamicIngressSpec{PassiveIngress: tt.passive, ActiveIngress: tt.active}, tt.isActive)
			label := ""
			if got != nil {
				label = got.Metadata.Labels["mode"]
			}
			if label != tt.want {
				t.Errorf("selected %q, want %q", label, tt.want)
			}
		})
	}
}

func TestRender(t *testing.T) {
	pathType := networkingv1.PathTypeExact
	di := &v1beta1.DynamicIngress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "storefront", UID: "uid-1"},
		Spec:       v1beta1.DynamicIngressSpec{Target: v1beta1.TargetReference{Name: "storefront-ing"}},
	}
	tests := []struct {
		name string
		tpl  v1beta1.IngressTemplate
		want string
	}{
		{
			name: "empty template: only the managed-by label and the owner",
			want: `{"kind":"Ingress","apiVersion":"networking.k8s.io/v1","metadata":{"name":"storefront-ing","namespace":"shop",` +
				`"labels":{"app.kubernetes.io/managed-by":"dynamic-ingress-operator"},` +
				`"ownerReferences":[{"apiVersion":"ingress.dynamicingress.io/v1beta1","kind":"DynamicIngress","name":"storefront","uid":"uid-1","controller":true,"blockOwnerDeletion":true}]}}`,
		},
		{
			name: "labels, annotations and spec; managed-by cannot be overridden",
			tpl: v1beta1.IngressTemplate{
				Metadata: v1beta1.TemplateMetadata{
					Labels:      map[string]string{"app": "shop", v1beta1.LabelManagedBy: "someone"},
					Annotations: map[string]string{"a": "b"},
				},
				Spec: networkingv1.IngressSpec{
					IngressClassName: ptr("alb"),
					Rules: []networkingv1.IngressRule{{Host: "shop.example.com", IngressRuleValue: networkingv1.IngressRuleValue{
						HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
							Path: "/", PathType: &pathType,
							Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Name: "http"}}},
						}}},
					}}},
				},
			},
			want: `{"kind":"Ingress","apiVersion":"networking.k8s.io/v1","metadata":{"name":"storefront-ing","namespace":"shop",` +
				`"labels":{"app":"shop","app.kubernetes.io/managed-by":"dynamic-ingress-operator"},"annotations":{"a":"b"},` +
				`"ownerReferences":[{"apiVersion":"ingress.dynamicingress.io/v1beta1","kind":"DynamicIngress","name":"storefront","uid":"uid-1","controller":true,"blockOwnerDeletion":true}]},` +
				`"spec":{"ingressClassName":"alb","rules":[{"host":"shop.example.com","http":{"paths":[{"path":"/","pathType":"Exact","backend":{"service":{"name":"web","port":{"name":"http"}}}}]}}]}}`,
		},
		{
			name: "empty annotations are not claimed",
			tpl:  v1beta1.IngressTemplate{Metadata: v1beta1.TemplateMetadata{Annotations: map[string]string{}}},
			want: `{"kind":"Ingress","apiVersion":"networking.k8s.io/v1","metadata":{"name":"storefront-ing","namespace":"shop",` +
				`"labels":{"app.kubernetes.io/managed-by":"dynamic-ingress-operator"},` +
				`"ownerReferences":[{"apiVersion":"ingress.dynamicingress.io/v1beta1","kind":"DynamicIngress","name":"storefront","uid":"uid-1","controller":true,"blockOwnerDeletion":true}]}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Render(di, &tt.tpl)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(got)
			if diff := cmp.Diff(tt.want, string(raw)); diff != "" {
				t.Errorf("Render (-want +got):\n%s", diff)
			}
		})
	}

	tpl := v1beta1.IngressTemplate{Metadata: v1beta1.TemplateMetadata{Labels: map[string]string{"x": "y"}}}
	if _, err := Render(di, &tpl); err != nil || len(tpl.Metadata.Labels) != 1 {
		t.Errorf("Render changed the template's labels: %v", tpl.Metadata.Labels)
	}
}

func TestTargetNamespace(t *testing.T) {
	di := &v1beta1.DynamicIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "own"}}
	if got := TargetNamespace(di); got != "own" {
		t.Errorf("empty target namespace gives %q, want own", got)
	}
	di.Spec.Target.Namespace = "set"
	if got := TargetNamespace(di); got != "set" {
		t.Errorf("target namespace gives %q, want set", got)
	}
}

func TestNormalized(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{`{"a":{},"b":[],"c":null,"d":"x"}`, `{"d":"x"}`},
		{`{"a":{"b":{"c":{}}}}`, `{}`},
		{`{"a":""}`, `{"a":""}`},
		{`{"a":[{"b":{}}]}`, `{"a":[{}]}`},
	}
	for _, tt := range tests {
		var in any
		_ = json.Unmarshal([]byte(tt.in), &in)
		got, err := normalized(in)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(got)
		if string(raw) != tt.want {
			t.Errorf("normalized(%s) = %s, want %s", tt.in, raw, tt.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

package target

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// asJSON decodes JSON text, to compare objects whatever their key order.
func asJSON(t *testing.T, text string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("bad JSON in the test: %v\n%s", err, text)
	}
	return v
}

func TestTemplateSelection(t *testing.T) {
	tpl := func(mode string) v1beta1.TemplateMetadata {
		return v1beta1.TemplateMetadata{Labels: map[string]string{"mode": mode}}
	}
	di := func(passive, active bool) Switch {
		d := &v1beta1.DynamicIngress{}
		if passive {
			d.Spec.PassiveIngress = &v1beta1.IngressVariant{Template: v1beta1.IngressTemplate{Metadata: tpl("passive")}}
		}
		if active {
			d.Spec.ActiveIngress = &v1beta1.IngressVariant{Template: v1beta1.IngressTemplate{Metadata: tpl("active")}}
		}
		return d
	}
	dhr := func(passive, active bool) Switch {
		d := &v1beta1.DynamicHTTPRoute{}
		if passive {
			d.Spec.PassiveRoute = &v1beta1.HTTPRouteVariant{Template: v1beta1.HTTPRouteTemplate{Metadata: tpl("passive")}}
		}
		if active {
			d.Spec.ActiveRoute = &v1beta1.HTTPRouteVariant{Template: v1beta1.HTTPRouteTemplate{Metadata: tpl("active")}}
		}
		return d
	}
	for _, k := range []struct {
		kind Kind
		make func(passive, active bool) Switch
	}{{Ingress{}, di}, {HTTPRoute{}, dhr}} {
		tests := []struct {
			name            string
			passive, active bool
			isActive        bool
			want            string // the mode label of the selected template, "" for none
		}{
			{"active selects active", true, true, true, "active"},
			{"passive selects passive", true, true, false, "passive"},
			{"active null", true, false, true, ""},
			{"passive null", false, true, false, ""},
		}
		for _, tt := range tests {
			t.Run(k.kind.SwitchKind()+"/"+tt.name, func(t *testing.T) {
				got, ok := k.kind.Template(k.make(tt.passive, tt.active), tt.isActive)
				label := ""
				if ok {
					label = got.Metadata.Labels["mode"]
				}
				if label != tt.want {
					t.Errorf("selected %q, want %q", label, tt.want)
				}
			})
		}
	}
}

func TestRenderIngress(t *testing.T) {
	pathType := networkingv1.PathTypeExact
	di := func(tpl v1beta1.IngressTemplate) *v1beta1.DynamicIngress {
		return &v1beta1.DynamicIngress{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "storefront", UID: "uid-1"},
			Spec: v1beta1.DynamicIngressSpec{Target: v1beta1.TargetReference{Name: "storefront-ing"},
				ActiveIngress: &v1beta1.IngressVariant{Template: tpl}},
		}
	}
	owner := `"ownerReferences":[{"apiVersion":"ingress.dynamicingress.io/v1beta1","kind":"DynamicIngress","name":"storefront","uid":"uid-1","controller":true,"blockOwnerDeletion":true}]`
	tests := []struct {
		name string
		tpl  v1beta1.IngressTemplate
		want string
	}{
		{
			name: "empty template: only the managed-by label and the owner",
			want: `{"kind":"Ingress","apiVersion":"networking.k8s.io/v1","metadata":{"name":"storefront-ing","namespace":"shop",` +
				`"labels":{"app.kubernetes.io/managed-by":"dynamic-ingress-operator"},` + owner + `}}`,
		},
		{
			name: "labels, annotations and spec; managed-by cannot be overridden",
			tpl: v1beta1.IngressTemplate{
				Metadata: v1beta1.TemplateMetadata{
					Labels:      map[string]string{"app": "shop", v1beta1.LabelManagedBy: "someone"},
					Annotations: map[string]string{"a": "b"},
				},
				Spec: networkingv1.IngressSpec{
					IngressClassName: ptr.To("alb"),
					Rules: []networkingv1.IngressRule{{Host: "shop.example.com", IngressRuleValue: networkingv1.IngressRuleValue{
						HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
							Path: "/", PathType: &pathType,
							Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Name: "http"}}},
						}}},
					}}},
				},
			},
			want: `{"kind":"Ingress","apiVersion":"networking.k8s.io/v1","metadata":{"name":"storefront-ing","namespace":"shop",` +
				`"labels":{"app":"shop","app.kubernetes.io/managed-by":"dynamic-ingress-operator"},"annotations":{"a":"b"},` + owner + `},` +
				`"spec":{"ingressClassName":"alb","rules":[{"host":"shop.example.com","http":{"paths":[{"path":"/","pathType":"Exact","backend":{"service":{"name":"web","port":{"name":"http"}}}}]}}]}}`,
		},
		{
			name: "empty annotations are not claimed",
			tpl:  v1beta1.IngressTemplate{Metadata: v1beta1.TemplateMetadata{Annotations: map[string]string{}}},
			want: `{"kind":"Ingress","apiVersion":"networking.k8s.io/v1","metadata":{"name":"storefront-ing","namespace":"shop",` +
				`"labels":{"app.kubernetes.io/managed-by":"dynamic-ingress-operator"},` + owner + `}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sw := di(tt.tpl)
			got, err := Render(Ingress{}, sw, true)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(got)
			if diff := cmp.Diff(asJSON(t, tt.want), asJSON(t, string(raw))); diff != "" {
				t.Errorf("Render (-want +got):\n%s", diff)
			}
			if len(tt.tpl.Metadata.Labels) > 0 && sw.Spec.ActiveIngress.Template.Metadata.Labels[v1beta1.LabelManagedBy] != "someone" {
				t.Error("Render changed the template's labels")
			}
		})
	}
	if got, err := Render(Ingress{}, di(v1beta1.IngressTemplate{}), false); got != nil || err != nil {
		t.Errorf("a null template rendered %v, %v; want nothing", got, err)
	}
}

func TestRenderHTTPRoute(t *testing.T) {
	dhr := &v1beta1.DynamicHTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "storefront", UID: "uid-2"},
		Spec: v1beta1.DynamicHTTPRouteSpec{Target: v1beta1.TargetReference{Name: "storefront"},
			ActiveRoute: &v1beta1.HTTPRouteVariant{Template: v1beta1.HTTPRouteTemplate{Spec: gatewayv1.HTTPRouteSpec{
				CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "public"}}},
				Rules: []gatewayv1.HTTPRouteRule{{Filters: []gatewayv1.HTTPRouteFilter{{
					Type:            gatewayv1.HTTPRouteFilterRequestRedirect,
					RequestRedirect: &gatewayv1.HTTPRequestRedirectFilter{Hostname: ptr.To(gatewayv1.PreciseHostname("status.example.com")), StatusCode: ptr.To(302)},
				}}}},
			}}}},
	}
	got, err := Render(HTTPRoute{}, dhr, true)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"HTTPRoute","apiVersion":"gateway.networking.k8s.io/v1","metadata":{"name":"storefront","namespace":"shop",` +
		`"labels":{"app.kubernetes.io/managed-by":"dynamic-ingress-operator"},` +
		`"ownerReferences":[{"apiVersion":"ingress.dynamicingress.io/v1beta1","kind":"DynamicHTTPRoute","name":"storefront","uid":"uid-2","controller":true,"blockOwnerDeletion":true}]},` +
		`"spec":{"parentRefs":[{"name":"public"}],"rules":[{"filters":[{"type":"RequestRedirect","requestRedirect":{"hostname":"status.example.com","statusCode":302}}]}]}}`
	raw, _ := json.Marshal(got)
	if diff := cmp.Diff(asJSON(t, want), asJSON(t, string(raw))); diff != "" {
		t.Errorf("Render (-want +got):\n%s", diff)
	}
}

func TestNamespace(t *testing.T) {
	di := &v1beta1.DynamicIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "own"}}
	if got := Namespace(di); got != "own" {
		t.Errorf("empty target namespace gives %q, want own", got)
	}
	di.Spec.Target.Namespace = "set"
	if got := Namespace(di); got != "set" {
		t.Errorf("target namespace gives %q, want set", got)
	}
}

func TestContent(t *testing.T) {
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
		got, err := content(in)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(got)
		if string(raw) != tt.want {
			t.Errorf("content(%s) = %s, want %s", tt.in, raw, tt.want)
		}
	}
}

func TestContains(t *testing.T) {
	tests := []struct {
		have, want string
		contained  bool
	}{
		{`{"a":1,"b":2}`, `{"a":1}`, true},
		{`{"a":1}`, `{"a":1,"b":2}`, false},
		{`{"a":{"x":1,"y":2}}`, `{"a":{"x":1}}`, true},
		{`{"a":{"x":1}}`, `{"a":{"x":2}}`, false},
		{`{"l":[{"x":1,"d":5},{"x":2}]}`, `{"l":[{"x":1},{"x":2}]}`, true},
		{`{"l":[{"x":1},{"x":2},{"x":3}]}`, `{"l":[{"x":1},{"x":2}]}`, false},
		{`{"l":[{"x":1}]}`, `{"l":[{"x":2}]}`, false},
		{`{"a":"s"}`, `{"a":{"x":1}}`, false},
		{`{}`, `null`, true},
	}
	for _, tt := range tests {
		if got := contains(asJSON(t, tt.have), asJSON(t, tt.want)); got != tt.contained {
			t.Errorf("contains(%s, %s) = %v, want %v", tt.have, tt.want, got, tt.contained)
		}
	}
}

func TestModeOf(t *testing.T) {
	backend := func(service string) networkingv1.IngressSpec {
		return networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{
			Service: &networkingv1.IngressServiceBackend{Name: service, Port: networkingv1.ServiceBackendPort{Number: 80}}}}
	}
	variant := func(spec *networkingv1.IngressSpec) *v1beta1.IngressVariant {
		if spec == nil {
			return nil
		}
		return &v1beta1.IngressVariant{Template: v1beta1.IngressTemplate{Spec: *spec}}
	}
	di := func(passive, active *networkingv1.IngressSpec) *v1beta1.DynamicIngress {
		return &v1beta1.DynamicIngress{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "storefront", UID: "uid-1"},
			Spec: v1beta1.DynamicIngressSpec{Target: v1beta1.TargetReference{Name: "storefront"},
				PassiveIngress: variant(passive), ActiveIngress: variant(active)},
		}
	}
	live := func(spec networkingv1.IngressSpec) *networkingv1.Ingress {
		return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "storefront"}, Spec: spec}
	}
	app, sorry, other := backend("app"), backend("sorry"), backend("hand-edited")
	tests := []struct {
		name          string
		sw            *v1beta1.DynamicIngress
		live          *networkingv1.Ingress
		active, known bool
	}{
		{"passive null, no target: passive", di(nil, &sorry), nil, false, true},
		{"passive null, target there: active", di(nil, &sorry), live(sorry), true, true},
		{"active null, no target: active", di(&app, nil), nil, true, true},
		{"active null, target there: passive", di(&app, nil), live(app), false, true},
		{"follows the passive template", di(&app, &sorry), live(app), false, true},
		{"follows the active template", di(&app, &sorry), live(sorry), true, true},
		{"no target where both modes have one: unknown", di(&app, &sorry), nil, false, false},
		{"hand-edited target: unknown", di(&app, &sorry), live(other), false, false},
		{"the same spec in both modes, nothing owned: unknown", di(&app, &app), live(app), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var obj client.Object
			if tt.live != nil {
				obj = tt.live
			}
			active, known, err := ModeOf(Ingress{}, tt.sw, obj)
			if err != nil {
				t.Fatal(err)
			}
			if active != tt.active || known != tt.known {
				t.Errorf("ModeOf = (active %v, known %v), want (%v, %v)", active, known, tt.active, tt.known)
			}
		})
	}
}

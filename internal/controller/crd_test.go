package controller_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestCRDSchemaRejects sends invalid objects to the API server with no
// webhook in place: the CRD's own schema and CEL rules must refuse them.
func TestCRDSchemaRejects(t *testing.T) {
	ns := newNamespace(t)
	okVariant := builders.IngressTo("x.example.com", "web").Label("app", "web")
	d := func(s string) *metav1.Duration { v, _ := time.ParseDuration(s); return &metav1.Duration{Duration: v} }
	probe := func(mut func(*v1beta1.HTTPProbe)) *v1beta1.DynamicIngressState {
		p := &v1beta1.HTTPProbe{URL: "https://flags.example.com/x"}
		mut(p)
		return &v1beta1.DynamicIngressState{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "s-"}, Spec: v1beta1.DynamicIngressStateSpec{Probe: p}}
	}
	tests := []struct {
		name string
		obj  client.Object
		want string
	}{
		{"no template", builders.DynamicIngress(ns, "a").State("s").ExpectCode("200").Obj(), "spec: Invalid value: at least one of passiveIngress and activeIngress must be set"},
		// An empty expected is not sent (omitzero): a single state then
		// lacks it.
		{"empty expected", func() client.Object {
			di := builders.DynamicIngress(ns, "b").State("s").Passive(okVariant).Obj()
			return di
		}(), "spec: Invalid value: expected is required with state or stateRef"},
		{"anyOf with state", builders.DynamicIngress(ns, "b2").AnyOf(builders.Entry("a", "s", "503")).State("s").Passive(okVariant).Obj(),
			"spec: Invalid value: anyOf and allOf replace state, stateRef and expected: set a list or a single state, not both"},
		{"anyOf and allOf", func() client.Object {
			di := builders.DynamicIngress(ns, "b3").AnyOf(builders.Entry("a", "s", "503")).Passive(okVariant).Obj()
			di.Spec.AllOf = []v1beta1.StateEntry{builders.Entry("a", "s", "503")}
			return di
		}(), "spec: Invalid value: at most one of anyOf and allOf may be set"},
		{"entry with both state and stateRef", func() client.Object {
			e := builders.Entry("a", "s", "503")
			e.StateRef = &v1beta1.StateReference{Name: "t"}
			return builders.DynamicIngress(ns, "b4").AnyOf(e).Passive(okVariant).Obj()
		}(), "spec.anyOf[0]: Invalid value: exactly one of state and stateRef must be set"},
		{"entry name not a DNS label", builders.DynamicIngress(ns, "b5").AllOf(builders.Entry("Platform", "s", "503")).Passive(okVariant).Obj(),
			`spec.allOf[0].name: Invalid value: "Platform": spec.allOf[0].name in body should match`},
		{"status code out of range", builders.DynamicIngress(ns, "c").State("s").ExpectCode("600").Passive(okVariant).Obj(), `spec.expected.statusCode: Invalid value: "600": must be an HTTP status code: three digits from 100 to 599`},
		{"state and probe both", &v1beta1.DynamicIngressState{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "both"}, Spec: v1beta1.DynamicIngressStateSpec{
			FixedResponse: &v1beta1.FixedResponse{Status: "200"}, Probe: &v1beta1.HTTPProbe{URL: "https://x.example.com"}}},
			"exactly one of fixedResponse, probe, schedule and service must be set"},
		{"state with neither", &v1beta1.DynamicIngressState{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "neither"}},
			"exactly one of fixedResponse, probe, schedule and service must be set"},
		// The rule sits on the probe, so that the message does not repeat
		// the URL and a token in it.
		{"ftp URL", probe(func(p *v1beta1.HTTPProbe) { p.URL = "ftp://admin:s3cr3t@flags.example.com/x?token=s3cr3t" }), `spec.probe.url: Invalid value: must be an absolute http or https URL with a host`},
		{"relative URL", probe(func(p *v1beta1.HTTPProbe) { p.URL = "/flags" }), "must be an absolute http or https URL with a host"},
		{"interval too short", probe(func(p *v1beta1.HTTPProbe) { p.Interval = d("500ms") }), `spec.probe.interval: Invalid value: "500ms": must be at least 1s and at most 24h`},
		{"interval too long", probe(func(p *v1beta1.HTTPProbe) { p.Interval = d("25h") }), "must be at least 1s and at most 24h"},
		{"timeout over interval", probe(func(p *v1beta1.HTTPProbe) { p.Interval = d("2s"); p.Timeout = d("3s") }), "spec.probe.timeout: Invalid value: must not be longer than the interval"},
		{"zero timeout", probe(func(p *v1beta1.HTTPProbe) { p.Timeout = d("0s") }), `spec.probe.timeout: Invalid value: "0s": must be more than 0`},
		{"zero threshold is defaulted, negative refused", probe(func(p *v1beta1.HTTPProbe) { p.FailureThreshold = ptr.To[int32](-1) }), "spec.probe.failureThreshold: Invalid value: -1: spec.probe.failureThreshold in body should be greater than or equal to 1"},
		{"bad method", probe(func(p *v1beta1.HTTPProbe) { p.Method = "DELETE" }), `spec.probe.method: Unsupported value: "DELETE": supported values: "GET", "HEAD", "POST"`},
		{"successThreshold 0", probe(func(p *v1beta1.HTTPProbe) { p.SuccessThreshold = ptr.To[int32](0) }), "spec.probe.successThreshold: Invalid value: 0: spec.probe.successThreshold in body should be greater than or equal to 1"},
		{"successThreshold 11", probe(func(p *v1beta1.HTTPProbe) { p.SuccessThreshold = ptr.To[int32](11) }), "spec.probe.successThreshold: Invalid value: 11: spec.probe.successThreshold in body should be less than or equal to 10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := k8s.Create(ctx, tt.obj)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Create error = %v\nwant it to contain %s", err, tt.want)
			}
		})
	}
}

func TestCRDSchemaDefaultsAndImmutableTarget(t *testing.T) {
	ns := newNamespace(t)
	state := &v1beta1.DynamicIngressState{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"},
		Spec: v1beta1.DynamicIngressStateSpec{Probe: &v1beta1.HTTPProbe{URL: "https://flags.example.com/x"}}}
	create(t, state)
	want := v1beta1.HTTPProbe{Type: "HTTP", Method: "GET", URL: "https://flags.example.com/x", Interval: &metav1.Duration{Duration: 30 * time.Second}, FailureThreshold: ptr.To[int32](3), SuccessThreshold: ptr.To[int32](1)}
	if diff := cmp.Diff(want, *state.Spec.Probe); diff != "" {
		t.Errorf("schema defaults (-want +got):\n%s", diff)
	}

	di := builders.DynamicIngress(ns, "d").State("p").ExpectCode("200").
		Passive(builders.IngressTo("d.example.com", "web").Label("app", "web")).Obj()
	create(t, di)
	// A patch carries no resourceVersion: the controller's status writes
	// cannot make it fail with a conflict instead of the rule under test.
	patch := client.MergeFrom(di.DeepCopy())
	di.Spec.Target.Name = "other"
	err := k8s.Patch(ctx, di, patch)
	if want := "spec.target: Invalid value: field is immutable"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("changing spec.target: error = %v, want it to contain %q", err, want)
	}
}

// TestCRDFieldsAreDescribed holds every field of the CRDs to a description,
// which is what kubectl explain prints.
func TestCRDFieldsAreDescribed(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(controlplane.CRDDir(), "*.yaml"))
	if len(files) != 5 {
		t.Fatalf("found %d CRD files, want 5", len(files))
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(raw, crd); err != nil {
			t.Fatal(err)
		}
		if got := crd.Spec.Names.Categories; !cmp.Equal(got, []string{"dynamic"}) {
			t.Errorf("%s categories = %v, want [dynamic]", crd.Name, got)
		}
		var missing []string
		walkSchema("", crd.Spec.Versions[0].Schema.OpenAPIV3Schema, func(path string, s *apiextensionsv1.JSONSchemaProps) {
			if s.Description == "" && path != "" && path != ".metadata" && path != ".apiVersion" && path != ".kind" {
				missing = append(missing, path)
			}
		})
		if len(missing) > 0 {
			t.Errorf("%s: fields without a description: %v", crd.Name, missing)
		}
	}
}

func walkSchema(path string, s *apiextensionsv1.JSONSchemaProps, visit func(string, *apiextensionsv1.JSONSchemaProps)) {
	visit(path, s)
	for name, prop := range s.Properties {
		walkSchema(path+"."+name, &prop, visit)
	}
	if s.Items != nil && s.Items.Schema != nil {
		for name, prop := range s.Items.Schema.Properties {
			walkSchema(path+"[]."+name, &prop, visit)
		}
	}
}

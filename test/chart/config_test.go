package chart_test

import (
	"sort"
	"strings"
	"testing"

	certmanagerv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dynamicingress/dynamic-ingress-operator/test/bundle"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// These tests render the chart as release bundleRelease in bundleNamespace,
// where its objects have the names config/default gives them, and compare
// it with config/default object by object.

// objectKey names an object: kind, namespace and name.
func objectKey(o *unstructured.Unstructured) string {
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

func objectKeys(objs []*unstructured.Unstructured) []string {
	var keys []string
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			continue // Helm installs into a namespace; the chart creates none.
		}
		keys = append(keys, objectKey(o))
	}
	sort.Strings(keys)
	return keys
}

// TestChartHasTheObjectsOfConfig checks that the chart with its default
// values renders the objects config/default does, by kind, namespace and
// name (config/default's Namespace aside): an object added to config/
// fails here until the chart has it.
func TestChartHasTheObjectsOfConfig(t *testing.T) {
	if diff := cmp.Diff(objectKeys(bundle.Kustomize(t, bundle.DefaultDir())), objectKeys(renderDefault(t))); diff != "" {
		t.Errorf("objects (-config/default +chart):\n%s", diff)
	}
}

// pairs returns, for each object of a kind in config/default, the chart's
// object of the same kind and name, both decoded into T.
func pairs[T any](t *testing.T, config, chart []*unstructured.Unstructured, kind string) map[string][2]*T {
	t.Helper()
	out := map[string][2]*T{}
	for _, c := range suite.Find(config, kind) {
		for _, h := range suite.Find(chart, kind) {
			if h.GetName() == c.GetName() && h.GetNamespace() == c.GetNamespace() {
				out[c.GetName()] = [2]*T{suite.Decode[T](t, c), suite.Decode[T](t, h)}
			}
		}
	}
	if len(out) == 0 {
		t.Errorf("no %s in both config/default and the chart", kind)
	}
	return out
}

// TestCRDsMatchConfig checks that the chart's CRDs have config/'s specs,
// field for field.
func TestCRDsMatchConfig(t *testing.T) {
	config, chart := bundle.Kustomize(t, bundle.DefaultDir()), renderDefault(t)
	for name, p := range pairs[apiextensionsv1.CustomResourceDefinition](t, config, chart, "CustomResourceDefinition") {
		if diff := cmp.Diff(p[0].Spec, p[1].Spec); diff != "" {
			t.Errorf("CRD %s spec (-config +chart):\n%s", name, diff)
		}
	}
}

// TestRBACMatchesConfig checks every Role and ClusterRole (rules, and the
// labels that aggregate them into the built-in roles) and every binding.
func TestRBACMatchesConfig(t *testing.T) {
	config, chart := bundle.Kustomize(t, bundle.DefaultDir()), renderDefault(t)
	aggregation := func(l map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range l {
			if strings.HasPrefix(k, aggregationLabel) {
				out[k] = v
			}
		}
		return out
	}
	for _, kind := range []string{"ClusterRole", "Role"} {
		for name, p := range pairs[rbacv1.ClusterRole](t, config, chart, kind) {
			if diff := cmp.Diff(p[0].Rules, p[1].Rules); diff != "" {
				t.Errorf("%s %s rules (-config +chart):\n%s", kind, name, diff)
			}
			if diff := cmp.Diff(aggregation(p[0].Labels), aggregation(p[1].Labels)); diff != "" {
				t.Errorf("%s %s aggregation labels (-config +chart):\n%s", kind, name, diff)
			}
		}
	}
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for name, p := range pairs[rbacv1.RoleBinding](t, config, chart, kind) {
			if diff := cmp.Diff(p[0].RoleRef, p[1].RoleRef); diff != "" {
				t.Errorf("%s %s roleRef (-config +chart):\n%s", kind, name, diff)
			}
			if diff := cmp.Diff(p[0].Subjects, p[1].Subjects); diff != "" {
				t.Errorf("%s %s subjects (-config +chart):\n%s", kind, name, diff)
			}
		}
	}
}

// TestWebhookConfigurationsMatchConfig checks the webhooks: names, rules,
// matchConditions, paths and Service, failurePolicy, sideEffects,
// timeouts; and cert-manager's CA injection.
func TestWebhookConfigurationsMatchConfig(t *testing.T) {
	config, chart := bundle.Kustomize(t, bundle.DefaultDir()), renderDefault(t)
	for name, p := range pairs[admissionregistrationv1.MutatingWebhookConfiguration](t, config, chart, "MutatingWebhookConfiguration") {
		if diff := cmp.Diff(p[0].Webhooks, p[1].Webhooks); diff != "" {
			t.Errorf("MutatingWebhookConfiguration %s webhooks (-config +chart):\n%s", name, diff)
		}
		if diff := cmp.Diff(p[0].Annotations, p[1].Annotations); diff != "" {
			t.Errorf("MutatingWebhookConfiguration %s annotations (-config +chart):\n%s", name, diff)
		}
	}
	for name, p := range pairs[admissionregistrationv1.ValidatingWebhookConfiguration](t, config, chart, "ValidatingWebhookConfiguration") {
		if diff := cmp.Diff(p[0].Webhooks, p[1].Webhooks); diff != "" {
			t.Errorf("ValidatingWebhookConfiguration %s webhooks (-config +chart):\n%s", name, diff)
		}
		if diff := cmp.Diff(p[0].Annotations, p[1].Annotations); diff != "" {
			t.Errorf("ValidatingWebhookConfiguration %s annotations (-config +chart):\n%s", name, diff)
		}
	}
}

// TestManagerMatchesConfig checks the Deployment (replicas, rollout,
// shutdown, security, resources, probes, ports, the certificate mount),
// the Services' ports, the PodDisruptionBudget, and the cert-manager
// objects. Labels and selectors differ on purpose (the chart adds
// app.kubernetes.io/instance); TestDefaultValues checks that they select
// the pods.
func TestManagerMatchesConfig(t *testing.T) {
	config, chart := bundle.Kustomize(t, bundle.DefaultDir()), renderDefault(t)
	for name, p := range pairs[appsv1.Deployment](t, config, chart, "Deployment") {
		c, h := p[0], p[1]
		if diff := cmp.Diff(c.Spec.Replicas, h.Spec.Replicas); diff != "" {
			t.Errorf("Deployment %s replicas (-config +chart):\n%s", name, diff)
		}
		if diff := cmp.Diff(c.Spec.Strategy, h.Spec.Strategy); diff != "" {
			t.Errorf("Deployment %s strategy (-config +chart):\n%s", name, diff)
		}
		cp, hp := c.Spec.Template.Spec, h.Spec.Template.Spec
		ignoreSelectors := cmpopts.IgnoreFields(corev1.PodAffinityTerm{}, "LabelSelector")
		for _, d := range []struct {
			what        string
			config, got any
			opts        []cmp.Option
		}{
			{"pod securityContext", cp.SecurityContext, hp.SecurityContext, nil},
			{"terminationGracePeriodSeconds", cp.TerminationGracePeriodSeconds, hp.TerminationGracePeriodSeconds, nil},
			{"serviceAccountName", cp.ServiceAccountName, hp.ServiceAccountName, nil},
			{"affinity (label selectors aside)", cp.Affinity, hp.Affinity, []cmp.Option{ignoreSelectors}},
		} {
			if diff := cmp.Diff(d.config, d.got, d.opts...); diff != "" {
				t.Errorf("Deployment %s %s (-config +chart):\n%s", name, d.what, diff)
			}
		}
		cm, hm := managerContainer(t, c), managerContainer(t, h)
		for _, d := range []struct {
			what        string
			config, got any
		}{
			{"securityContext", cm.SecurityContext, hm.SecurityContext},
			{"resources", cm.Resources, hm.Resources},
			{"livenessProbe", cm.LivenessProbe, hm.LivenessProbe},
			{"readinessProbe", cm.ReadinessProbe, hm.ReadinessProbe},
			{"ports", cm.Ports, hm.Ports},
		} {
			if diff := cmp.Diff(d.config, d.got); diff != "" {
				t.Errorf("manager container %s (-config +chart):\n%s", d.what, diff)
			}
		}
		// The same Secret kind of thing at the same place: the
		// Certificate's Secret at --webhook-cert-path.
		path := effectiveFlags(t, cm.Args)["webhook-cert-path"]
		certSecret := func(objs []*unstructured.Unstructured) string {
			return suite.Named[certmanagerv1.Certificate](t, objs, "Certificate", bundleRelease+"-serving-cert").Spec.SecretName
		}
		if got := secretMountedAt(t, c, path); got != certSecret(config) {
			t.Fatalf("config/default mounts %q at %s, not its Certificate's Secret: the test no longer understands config/", got, path)
		}
		if got := secretMountedAt(t, h, path); got != certSecret(chart) {
			t.Errorf("the chart mounts Secret %q at --webhook-cert-path %s, want its Certificate's Secret %q", got, path, certSecret(chart))
		}
	}
	for name, p := range pairs[corev1.Service](t, config, chart, "Service") {
		if diff := cmp.Diff(p[0].Spec.Ports, p[1].Spec.Ports); diff != "" {
			t.Errorf("Service %s ports (-config +chart):\n%s", name, diff)
		}
	}
	for name, p := range pairs[policyv1.PodDisruptionBudget](t, config, chart, "PodDisruptionBudget") {
		if diff := cmp.Diff(p[0].Spec.MinAvailable, p[1].Spec.MinAvailable); diff != "" {
			t.Errorf("PodDisruptionBudget %s minAvailable (-config +chart):\n%s", name, diff)
		}
	}
	for name, p := range pairs[certmanagerv1.Issuer](t, config, chart, "Issuer") {
		// The CA Issuer's Secret has the release prefix in the chart, like
		// the Certificate's that writes it (suite.CheckCAChain checks both).
		if diff := cmp.Diff(p[0].Spec, p[1].Spec, cmpopts.IgnoreFields(certmanagerv1.CAIssuer{}, "SecretName")); diff != "" {
			t.Errorf("Issuer %s spec (-config +chart):\n%s", name, diff)
		}
	}
	for name, p := range pairs[certmanagerv1.Certificate](t, config, chart, "Certificate") {
		// The chart's Secret name has the release prefix, like every name.
		if diff := cmp.Diff(p[0].Spec, p[1].Spec, cmpopts.IgnoreFields(certmanagerv1.CertificateSpec{}, "SecretName")); diff != "" {
			t.Errorf("Certificate %s spec (-config +chart):\n%s", name, diff)
		}
	}
}

// TestServiceMonitorMatchesConfig turns the ServiceMonitor on in both (in
// config/default by uncommenting its line, as its comment says) and
// compares what they scrape and how.
func TestServiceMonitorMatchesConfig(t *testing.T) {
	config := bundle.Kustomize(t, bundle.DefaultDirWithMonitor(t))
	chart := renderChart(t, bundleRelease, bundleNamespace, map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}}})
	for _, objs := range [][]*unstructured.Unstructured{config, chart} {
		if n := len(suite.Find(objs, "ServiceMonitor")); n != 1 {
			t.Fatalf("%d ServiceMonitors, want 1", n)
		}
	}
	c, h := suite.Find(config, "ServiceMonitor")[0], suite.Find(chart, "ServiceMonitor")[0]
	if objectKey(c) != objectKey(h) {
		t.Errorf("ServiceMonitor %s in config/default, %s in the chart", objectKey(c), objectKey(h))
	}
	ce, _, _ := unstructured.NestedSlice(c.Object, "spec", "endpoints")
	he, _, _ := unstructured.NestedSlice(h.Object, "spec", "endpoints")
	if diff := cmp.Diff(ce, he); diff != "" {
		t.Errorf("ServiceMonitor endpoints (-config +chart):\n%s", diff)
	}
}

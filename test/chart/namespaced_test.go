package chart_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// TestNamespacedModeUsesRoles checks what watchNamespaces installs: the
// manager's rules of config/rbac/role.yaml in a Role bound in each watched
// namespace, nothing namespaced left in its ClusterRole (only the get of
// the HTTPRoute CRD), and webhooks that answer for the watched namespaces
// alone, their matchConditions kept.
func TestNamespacedModeUsesRoles(t *testing.T) {
	watched := []string{"shop", "team-a"}
	objs := renderChart(t, bundleRelease, bundleNamespace, map[string]any{"watchNamespaces": []any{"shop", "team-a"}})
	defaults := renderDefault(t)

	raw, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var config rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(raw, &config); err != nil {
		t.Fatal(err)
	}
	var clusterRules, namespacedRules []rbacv1.PolicyRule
	for _, r := range config.Rules {
		if len(r.Resources) == 1 && r.Resources[0] == "customresourcedefinitions" {
			clusterRules = append(clusterRules, r)
		} else {
			namespacedRules = append(namespacedRules, r)
		}
	}
	role := suite.Named[rbacv1.ClusterRole](t, objs, "ClusterRole", bundleRelease+"-manager-role")
	if diff := cmp.Diff(clusterRules, role.Rules); diff != "" {
		t.Errorf("the manager ClusterRole's rules in namespaced mode (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(config.Rules, suite.Named[rbacv1.ClusterRole](t, defaults, "ClusterRole", bundleRelease+"-manager-role").Rules); diff != "" {
		t.Errorf("the manager ClusterRole's rules by default (-config/rbac/role.yaml +chart):\n%s", diff)
	}

	var gotRoles, gotBindings []string
	for _, o := range suite.Find(objs, "Role") {
		r := suite.Decode[rbacv1.Role](t, o)
		if r.Name != bundleRelease+"-manager-role" {
			continue
		}
		gotRoles = append(gotRoles, r.Namespace)
		if diff := cmp.Diff(namespacedRules, r.Rules); diff != "" {
			t.Errorf("Role %s/%s rules (-want +got):\n%s", r.Namespace, r.Name, diff)
		}
	}
	for _, o := range suite.Find(objs, "RoleBinding") {
		b := suite.Decode[rbacv1.RoleBinding](t, o)
		if b.Name != bundleRelease+"-manager-rolebinding" {
			continue
		}
		gotBindings = append(gotBindings, b.Namespace)
		want := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: bundleRelease + "-manager-role"}
		if diff := cmp.Diff(want, b.RoleRef); diff != "" {
			t.Errorf("RoleBinding %s/%s roleRef (-want +got):\n%s", b.Namespace, b.Name, diff)
		}
		wantSubjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: bundleRelease + "-controller-manager", Namespace: bundleNamespace}}
		if diff := cmp.Diff(wantSubjects, b.Subjects); diff != "" {
			t.Errorf("RoleBinding %s/%s subjects (-want +got):\n%s", b.Namespace, b.Name, diff)
		}
	}
	if diff := cmp.Diff(watched, gotRoles); diff != "" {
		t.Errorf("namespaces of the manager Roles (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(watched, gotBindings); diff != "" {
		t.Errorf("namespaces of the manager RoleBindings (-want +got):\n%s", diff)
	}

	wantSelector := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: watched},
	}}
	mutating := suite.Only[admissionregistrationv1.MutatingWebhookConfiguration](t, objs, "MutatingWebhookConfiguration")
	validating := suite.Only[admissionregistrationv1.ValidatingWebhookConfiguration](t, objs, "ValidatingWebhookConfiguration")
	for _, w := range mutating.Webhooks {
		if diff := cmp.Diff(wantSelector, w.NamespaceSelector); diff != "" {
			t.Errorf("webhook %s namespaceSelector (-want +got):\n%s", w.Name, diff)
		}
		if len(w.MatchConditions) == 0 {
			t.Errorf("webhook %s lost its matchConditions", w.Name)
		}
	}
	for _, w := range validating.Webhooks {
		if diff := cmp.Diff(wantSelector, w.NamespaceSelector); diff != "" {
			t.Errorf("webhook %s namespaceSelector (-want +got):\n%s", w.Name, diff)
		}
		if len(w.MatchConditions) == 0 {
			t.Errorf("webhook %s lost its matchConditions", w.Name)
		}
	}
	for _, w := range suite.Only[admissionregistrationv1.ValidatingWebhookConfiguration](t, defaults, "ValidatingWebhookConfiguration").Webhooks {
		if w.NamespaceSelector != nil && len(w.NamespaceSelector.MatchExpressions) > 0 {
			t.Errorf("webhook %s by default selects namespaces: %v", w.Name, w.NamespaceSelector)
		}
	}
}

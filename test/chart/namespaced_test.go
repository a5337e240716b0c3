package chart_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// permissions flattens rules into what they allow, one "group/resource
// verb" (and " [names]" with resourceNames) each, sorted and without
// repeats: two rule lists that allow the same have the same permissions,
// however controller-gen or the chart groups them.
func permissions(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		names := ""
		if len(r.ResourceNames) > 0 {
			names = " " + fmt.Sprint(r.ResourceNames)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, g+"/"+res+" "+v+names)
				}
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// onResources keeps the permissions on the resources (group/resource), or,
// with keep false, the others.
func onResources(perms []string, resources []string, keep bool) []string {
	out := []string{}
	for _, p := range perms {
		resource, _, _ := strings.Cut(p, " ")
		if slices.Contains(resources, resource) == keep {
			out = append(out, p)
		}
	}
	return out
}

// The manager's resources that no Role can grant: the HTTPRoute CRD (for
// its defaults) and SubjectAccessReviews (the webhooks' question of who may
// make the manager send requests), and those that following ClusterDynamicIngressStates
// needs (reading them and their grants' Namespaces, writing their status).
var (
	crdResources          = []string{"apiextensions.k8s.io/customresourcedefinitions", "authorization.k8s.io/subjectaccessreviews"}
	clusterStateResources = []string{
		"/namespaces",
		"ingress.dynamicingress.io/clusterdynamicingressstates",
		"ingress.dynamicingress.io/clusterdynamicingressstates/status",
	}
)

// configPermissions are the permissions of config/rbac/role.yaml, what
// controller-gen makes of the manager's +kubebuilder:rbac markers.
func configPermissions(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(raw, &role); err != nil {
		t.Fatal(err)
	}
	perms := permissions(role.Rules)
	for _, r := range append(slices.Clone(crdResources), clusterStateResources...) {
		if len(onResources(perms, []string{r}, true)) == 0 {
			t.Fatalf("config/rbac/role.yaml grants nothing on %s: the test no longer understands the manager's rules", r)
		}
	}
	return perms
}

// managerGrants returns what the rendered RBAC lets the manager's
// ServiceAccount do, by namespace ("" for what a ClusterRoleBinding grants
// in every namespace and at cluster scope), as permissions. A binding that
// names a role the chart does not render fails the test.
func managerGrants(t *testing.T, objs []*unstructured.Unstructured) map[string][]string {
	t.Helper()
	deploy := suite.Only[appsv1.Deployment](t, objs, "Deployment")
	sa := rbacv1.Subject{Kind: "ServiceAccount", Name: deploy.Spec.Template.Spec.ServiceAccountName, Namespace: deploy.Namespace}
	clusterRoles, roles := map[string][]rbacv1.PolicyRule{}, map[string][]rbacv1.PolicyRule{}
	for _, o := range suite.Find(objs, "ClusterRole") {
		clusterRoles[o.GetName()] = suite.Decode[rbacv1.ClusterRole](t, o).Rules
	}
	for _, o := range suite.Find(objs, "Role") {
		roles[o.GetNamespace()+"/"+o.GetName()] = suite.Decode[rbacv1.Role](t, o).Rules
	}
	rules := map[string][]rbacv1.PolicyRule{}
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for _, o := range suite.Find(objs, kind) {
			b := suite.Decode[rbacv1.RoleBinding](t, o)
			if !slices.Contains(b.Subjects, sa) {
				continue
			}
			var r []rbacv1.PolicyRule
			var ok bool
			if b.RoleRef.Kind == "ClusterRole" {
				r, ok = clusterRoles[b.RoleRef.Name]
			} else {
				r, ok = roles[b.Namespace+"/"+b.RoleRef.Name]
			}
			if !ok {
				t.Errorf("%s %s/%s binds %s %s, which the chart does not render there", kind, b.Namespace, b.Name, b.RoleRef.Kind, b.RoleRef.Name)
			}
			rules[b.Namespace] = append(rules[b.Namespace], r...)
		}
	}
	out := map[string][]string{}
	for ns, r := range rules {
		out[ns] = permissions(r)
	}
	return out
}

// checkNoDuplicates fails when two rendered objects have the same kind,
// namespace and name (helm refuses to install such a release).
func checkNoDuplicates(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	seen := map[string]bool{}
	for _, o := range objs {
		if seen[objectKey(o)] {
			t.Errorf("%s is rendered twice", objectKey(o))
		}
		seen[objectKey(o)] = true
	}
}

// managerArgs returns the effective value of every manager flag.
func managerArgs(t *testing.T, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	return effectiveFlags(t, managerContainer(t, suite.Only[appsv1.Deployment](t, objs, "Deployment")).Args)
}

// TestNamespacedModeUsesRoles checks what watchNamespaces installs: the
// manager's rules of config/rbac/role.yaml in a Role bound in each watched
// namespace, nothing namespaced left in its ClusterRole (only the get of
// the HTTPRoute CRD), and webhooks that answer for the watched namespaces
// alone, their matchConditions kept.
func TestNamespacedModeUsesRoles(t *testing.T) {
	watched := []string{"shop", "team-a"}
	objs := renderChart(t, bundleRelease, bundleNamespace, map[string]any{"watchNamespaces": []any{"shop", "team-a"}})
	defaults := renderDefault(t)
	config := configPermissions(t)
	clusterScoped := append(slices.Clone(crdResources), clusterStateResources...)

	role := suite.Named[rbacv1.ClusterRole](t, objs, "ClusterRole", bundleRelease+"-manager-role")
	if diff := cmp.Diff(onResources(config, crdResources, true), permissions(role.Rules)); diff != "" {
		t.Errorf("the manager ClusterRole in namespaced mode (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(config, permissions(suite.Named[rbacv1.ClusterRole](t, defaults, "ClusterRole", bundleRelease+"-manager-role").Rules)); diff != "" {
		t.Errorf("the manager ClusterRole by default (-config/rbac/role.yaml +chart):\n%s", diff)
	}

	var gotRoles, gotBindings []string
	for _, o := range suite.Find(objs, "Role") {
		r := suite.Decode[rbacv1.Role](t, o)
		if r.Name != bundleRelease+"-manager-role" {
			continue
		}
		gotRoles = append(gotRoles, r.Namespace)
		if diff := cmp.Diff(onResources(config, clusterScoped, false), permissions(r.Rules)); diff != "" {
			t.Errorf("Role %s/%s (-want +got):\n%s", r.Namespace, r.Name, diff)
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

// TestNamespacedModeFollowsClusterStatesOnlyWhenGranted checks the one
// value that lets a namespaced install follow ClusterDynamicIngressStates:
// without clusterStates.followInNamespacedMode the manager runs with
// --cluster-states=false and nothing lets it read cluster states or
// Namespaces; with it, its ClusterRole reads them cluster-wide and patches
// the states' status, a Role lets it get the Secrets of the cluster
// resource namespace and one write Events in default, unless a watched
// namespace's Role already does. Cluster-wide the manager always follows
// cluster states, with the rules of config/rbac/role.yaml.
func TestNamespacedModeFollowsClusterStatesOnlyWhenGranted(t *testing.T) {
	config := configPermissions(t)
	namespaced := onResources(config, append(slices.Clone(crdResources), clusterStateResources...), false)
	secrets := onResources(config, []string{"/secrets"}, true)
	events := onResources(config, []string{"events.k8s.io/events"}, true)
	if len(secrets) == 0 || len(events) == 0 {
		t.Fatalf("config/rbac/role.yaml grants no Secrets (%v) or no events.k8s.io Events (%v): the test no longer understands the manager's rules", secrets, events)
	}
	optIn := map[string]any{"followInNamespacedMode": true}

	for _, tc := range []struct {
		name   string
		values map[string]any
		// wantClusterStates is the manager's --cluster-states.
		wantClusterStates string
		// wantResourceNamespace is its --cluster-resource-namespace
		// ("" leaves it to the pod's namespace, the release's).
		wantResourceNamespace string
		// wantCluster are the cluster-wide grants of the manager's
		// ClusterRole; wantNamespaces what it may do in each namespace
		// beyond them, besides the leader election Role of the release
		// namespace.
		wantCluster    []string
		wantNamespaces map[string][]string
		// wantRoles are the Roles rendered, as namespace/name after the
		// release prefix: one per namespace, every one bound.
		wantRoles []string
	}{{
		name:              "namespaced, without the opt-in",
		values:            map[string]any{"watchNamespaces": []any{"shop", "team-a"}},
		wantClusterStates: "false",
		wantCluster:       onResources(config, crdResources, true),
		wantNamespaces:    map[string][]string{"shop": namespaced, "team-a": namespaced},
		wantRoles:         []string{bundleNamespace + "/leader-election-role", "shop/manager-role", "team-a/manager-role"},
	}, {
		name:              "namespaced, without the opt-in, a resource namespace set",
		values:            map[string]any{"watchNamespaces": []any{"shop"}, "clusterStates": map[string]any{"resourceNamespace": "platform"}},
		wantClusterStates: "false", wantResourceNamespace: "platform",
		wantCluster:    onResources(config, crdResources, true),
		wantNamespaces: map[string][]string{"shop": namespaced},
		wantRoles:      []string{bundleNamespace + "/leader-election-role", "shop/manager-role"},
	}, {
		name:              "namespaced, with the opt-in",
		values:            map[string]any{"watchNamespaces": []any{"shop", "team-a"}, "clusterStates": optIn},
		wantClusterStates: "true",
		wantCluster:       onResources(config, append(slices.Clone(crdResources), clusterStateResources...), true),
		wantNamespaces:    map[string][]string{"shop": namespaced, "team-a": namespaced, bundleNamespace: secrets, "default": events},
		wantRoles: []string{"default/cluster-state-events-role", bundleNamespace + "/cluster-state-secrets-role", bundleNamespace + "/leader-election-role",
			"shop/manager-role", "team-a/manager-role"},
	}, {
		name: "namespaced, with the opt-in and a resource namespace",
		values: map[string]any{"watchNamespaces": []any{"shop"}, "clusterStates": map[string]any{
			"followInNamespacedMode": true, "resourceNamespace": "platform",
		}},
		wantClusterStates: "true", wantResourceNamespace: "platform",
		wantCluster:    onResources(config, append(slices.Clone(crdResources), clusterStateResources...), true),
		wantNamespaces: map[string][]string{"shop": namespaced, "platform": secrets, "default": events},
		wantRoles: []string{"default/cluster-state-events-role", bundleNamespace + "/leader-election-role", "platform/cluster-state-secrets-role",
			"shop/manager-role"},
	}, {
		// The manager's Roles there hold the Secrets and Events already.
		name: "namespaced, with the opt-in, watching default and the resource namespace",
		values: map[string]any{"watchNamespaces": []any{"shop", "default"}, "clusterStates": map[string]any{
			"followInNamespacedMode": true, "resourceNamespace": "shop",
		}},
		wantClusterStates: "true", wantResourceNamespace: "shop",
		wantCluster:    onResources(config, append(slices.Clone(crdResources), clusterStateResources...), true),
		wantNamespaces: map[string][]string{"shop": namespaced, "default": namespaced},
		wantRoles:      []string{"default/manager-role", bundleNamespace + "/leader-election-role", "shop/manager-role"},
	}, {
		name:              "cluster-wide",
		values:            nil,
		wantClusterStates: "true",
		wantCluster:       config,
		wantNamespaces:    map[string][]string{},
		wantRoles:         []string{bundleNamespace + "/leader-election-role"},
	}, {
		// The value is for namespaced mode: cluster-wide it changes nothing.
		name:              "cluster-wide, with the opt-in",
		values:            map[string]any{"clusterStates": optIn},
		wantClusterStates: "true",
		wantCluster:       config,
		wantNamespaces:    map[string][]string{},
		wantRoles:         []string{bundleNamespace + "/leader-election-role"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			objs := renderChart(t, bundleRelease, bundleNamespace, tc.values)
			checkNoDuplicates(t, objs)

			args := managerArgs(t, objs)
			if got := args["cluster-states"]; got != tc.wantClusterStates {
				t.Errorf("the manager's --cluster-states is %q, want %q", got, tc.wantClusterStates)
			}
			if got := args["cluster-resource-namespace"]; got != tc.wantResourceNamespace {
				t.Errorf("the manager's --cluster-resource-namespace is %q, want %q", got, tc.wantResourceNamespace)
			}

			var roles []string
			for _, o := range suite.Find(objs, "Role") {
				roles = append(roles, o.GetNamespace()+"/"+strings.TrimPrefix(o.GetName(), bundleRelease+"-"))
			}
			sort.Strings(roles)
			if diff := cmp.Diff(tc.wantRoles, roles); diff != "" {
				t.Errorf("the Roles (-want +got):\n%s", diff)
			}

			grants := managerGrants(t, objs)
			// What the metrics server's authentication (a ClusterRole of
			// its own) adds cluster-wide is not the manager role's; what
			// both grant (creating SubjectAccessReviews, which the
			// webhooks need too) is.
			metricsAuth := permissions(suite.Named[rbacv1.ClusterRole](t, objs, "ClusterRole", bundleRelease+"-metrics-auth-role").Rules)
			managerRole := permissions(suite.Named[rbacv1.ClusterRole](t, objs, "ClusterRole", bundleRelease+"-manager-role").Rules)
			cluster := slices.DeleteFunc(slices.Clone(grants[""]), func(p string) bool {
				return slices.Contains(metricsAuth, p) && !slices.Contains(managerRole, p)
			})
			if diff := cmp.Diff(tc.wantCluster, cluster); diff != "" {
				t.Errorf("what the manager may do cluster-wide (-want +got):\n%s", diff)
			}
			gotNamespaces := map[string][]string{}
			for ns, perms := range grants {
				if ns == "" {
					continue
				}
				if ns == bundleNamespace {
					// The leader election Role's.
					leader := permissions(suite.Named[rbacv1.Role](t, objs, "Role", bundleRelease+"-leader-election-role").Rules)
					perms = slices.DeleteFunc(slices.Clone(perms), func(p string) bool { return slices.Contains(leader, p) })
					if len(perms) == 0 {
						continue
					}
				}
				gotNamespaces[ns] = perms
			}
			if diff := cmp.Diff(tc.wantNamespaces, gotNamespaces); diff != "" {
				t.Errorf("what the manager may do in each namespace (-want +got):\n%s", diff)
			}

			if tc.wantClusterStates == "false" {
				// Nothing that follows cluster states, anywhere.
				for ns, perms := range grants {
					if got := onResources(perms, clusterStateResources, true); len(got) > 0 {
						t.Errorf("with --cluster-states=false the manager may still %v (namespace %q)", got, ns)
					}
				}
			}
		})
	}
}

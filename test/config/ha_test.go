package config_test

import (
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// managerSubject is the manager's ServiceAccount, as a binding names it.
func managerSubject(deploy *appsv1.Deployment) rbacv1.Subject {
	return rbacv1.Subject{Kind: "ServiceAccount", Name: deploy.Spec.Template.Spec.ServiceAccountName, Namespace: deploy.Namespace}
}

// grantsToManager returns the rules that the bundle's bindings give the
// manager's ServiceAccount through roles of the given kind.
func grantsToManager(t *testing.T, objs []*unstructured.Unstructured, deploy *appsv1.Deployment, roleKind string) []rbacv1.PolicyRule {
	t.Helper()
	roles := map[string][]rbacv1.PolicyRule{}
	var refs []rbacv1.RoleRef
	for _, o := range objs {
		switch o.GetKind() {
		case roleKind:
			if roleKind == "Role" && o.GetNamespace() != deploy.Namespace {
				continue
			}
			if roleKind == "Role" {
				roles[o.GetName()] = suite.Decode[rbacv1.Role](t, o).Rules
			} else {
				roles[o.GetName()] = suite.Decode[rbacv1.ClusterRole](t, o).Rules
			}
		case "RoleBinding", "ClusterRoleBinding":
			if roleKind == "Role" && (o.GetKind() != "RoleBinding" || o.GetNamespace() != deploy.Namespace) {
				continue
			}
			b := suite.Decode[rbacv1.RoleBinding](t, o)
			if b.RoleRef.Kind == roleKind && slices.Contains(b.Subjects, managerSubject(deploy)) {
				refs = append(refs, b.RoleRef)
			}
		}
	}
	var rules []rbacv1.PolicyRule
	for _, ref := range refs {
		rules = append(rules, roles[ref.Name]...)
	}
	return rules
}

// allows reports whether rules allow verb on group/resource.
func allows(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}

func TestDefaultBundleServesMetricsToAuthorizedScrapers(t *testing.T) {
	objs := render(t)
	deploy := suite.Only[appsv1.Deployment](t, objs, "Deployment")
	svc := suite.Named[corev1.Service](t, objs, "Service", metricsServiceName)
	manager := deploy.Spec.Template.Spec.Containers[0]

	// The manager serves metrics on :8443, over HTTPS (the flag's default:
	// nothing turns it off).
	if !slices.Contains(manager.Args, "--metrics-bind-address=:8443") {
		t.Errorf("manager args %v: want --metrics-bind-address=:8443", manager.Args)
	}
	for _, a := range manager.Args {
		if a == "--metrics-secure=false" || a == "--metrics-secure=0" {
			t.Errorf("manager args %v: metrics must be served over HTTPS with authorization", manager.Args)
		}
	}
	// The metrics Service selects the manager's pods and reaches that port.
	if !suite.SelectsPods(t, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, deploy) {
		t.Errorf("metrics Service selector %v does not select the manager's pods %v", svc.Spec.Selector, deploy.Spec.Template.Labels)
	}
	if len(svc.Spec.Ports) != 1 {
		t.Fatalf("metrics Service ports %+v, want one", svc.Spec.Ports)
	}
	target := svc.Spec.Ports[0].TargetPort
	var got int32
	for _, p := range manager.Ports {
		if (target.Type == intstr.String && p.Name == target.StrVal) || (target.Type == intstr.Int && p.ContainerPort == target.IntVal) {
			got = p.ContainerPort
		}
	}
	if got != 8443 {
		t.Errorf("metrics Service targetPort %q reaches container port %d, want 8443 (ports %+v)", target.String(), got, manager.Ports)
	}

	// The manager may check scrapers' tokens and permissions…
	rules := grantsToManager(t, objs, deploy, "ClusterRole")
	for _, want := range []struct{ group, resource string }{
		{"authentication.k8s.io", "tokenreviews"},
		{"authorization.k8s.io", "subjectaccessreviews"},
	} {
		if !allows(rules, want.group, want.resource, "create") {
			t.Errorf("no ClusterRoleBinding lets the manager's ServiceAccount %v create %s.%s", managerSubject(deploy), want.resource, want.group)
		}
	}
	// …and scrapers get a role to be bound to.
	reader := suite.Named[rbacv1.ClusterRole](t, objs, "ClusterRole", "dynamic-ingress-operator-metrics-reader")
	wantRules := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}
	if diff := cmp.Diff(wantRules, reader.Rules); diff != "" {
		t.Errorf("metrics-reader rules (-want +got):\n%s", diff)
	}
}

func TestDefaultBundleIsHighlyAvailable(t *testing.T) {
	objs := render(t)
	deploy := suite.Only[appsv1.Deployment](t, objs, "Deployment")
	pdb := suite.Only[policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget")
	pod := deploy.Spec.Template.Spec
	manager := pod.Containers[0]

	if r := ptr.Deref(deploy.Spec.Replicas, 1); r != 2 {
		t.Errorf("replicas %d, want 2", r)
	}
	if !slices.Contains(manager.Args, "--leader-elect") {
		t.Errorf("manager args %v: want --leader-elect, or two replicas would both reconcile", manager.Args)
	}
	// A rolling update starts a new pod before stopping an old one.
	if ru := deploy.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 {
		t.Errorf("rolling update %+v: want maxUnavailable 0, so that a webhook server is always up", deploy.Spec.Strategy.RollingUpdate)
	}
	// The manager stops within 20s (cmd/main.go's graceful shutdown) and
	// then releases the Lease; a kubelet kill before that would keep it.
	if g := ptr.Deref(pod.TerminationGracePeriodSeconds, corev1.DefaultTerminationGracePeriodSeconds); g <= 20 {
		t.Errorf("terminationGracePeriodSeconds %d: want more than the manager's 20s graceful shutdown", g)
	}

	// Replicas prefer different nodes.
	var spread bool
	if a := pod.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, term := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			if term.PodAffinityTerm.TopologyKey == corev1.LabelHostname && suite.SelectsPods(t, term.PodAffinityTerm.LabelSelector, deploy) {
				spread = true
			}
		}
	}
	if !spread {
		t.Errorf("no preferred pod anti-affinity on %s selecting the manager's pods: %+v", corev1.LabelHostname, pod.Affinity)
	}

	// A drain leaves one replica running.
	if pdb.Namespace != deploy.Namespace || !suite.SelectsPods(t, pdb.Spec.Selector, deploy) {
		t.Errorf("PodDisruptionBudget %s/%s selector %v does not select the manager's pods %v", pdb.Namespace, pdb.Name, pdb.Spec.Selector, deploy.Spec.Template.Labels)
	}
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 {
		t.Errorf("PodDisruptionBudget minAvailable %v, want 1", pdb.Spec.MinAvailable)
	}

	// Leader election: the Lease and the Events client-go's leader
	// election writes (core/v1, not events.k8s.io).
	rules := grantsToManager(t, objs, deploy, "Role")
	for _, want := range []struct{ group, resource, verb string }{
		{"coordination.k8s.io", "leases", "get"},
		{"coordination.k8s.io", "leases", "create"},
		{"coordination.k8s.io", "leases", "update"},
		{"", "events", "create"},
	} {
		if !allows(rules, want.group, want.resource, want.verb) {
			t.Errorf("no Role in %s lets the manager %s %s in group %q", deploy.Namespace, want.verb, want.resource, want.group)
		}
	}
}

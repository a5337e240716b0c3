package chart_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/bundle"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// TestNetworkPolicy checks the optional NetworkPolicy: it selects the
// manager's pods and admits, on ingress, the webhook port from
// networkPolicy.webhookFrom (any source when empty), the metrics port from
// Prometheus's namespace and pods, and the health port; with webhooks and
// metrics off, only the health port.
func TestNetworkPolicy(t *testing.T) {
	port := func(p int32) []networkingv1.NetworkPolicyPort {
		return []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(p))}}
	}
	anyPod := []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}, PodSelector: &metav1.LabelSelector{}}}
	controlPlane := []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/24"}}}
	tests := []struct {
		name   string
		values map[string]any
		want   []networkingv1.NetworkPolicyIngressRule
	}{
		{
			name:   "defaults",
			values: map[string]any{"networkPolicy": map[string]any{"enabled": true}},
			want: []networkingv1.NetworkPolicyIngressRule{
				{Ports: port(9443)},
				{Ports: port(8443), From: anyPod},
				{Ports: port(8081)},
			},
		},
		{
			name: "the control plane's addresses and another Prometheus",
			values: map[string]any{
				"networkPolicy": map[string]any{"enabled": true, "webhookFrom": []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/24"}}},
					"metrics": map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"team": "obs"}}, "podSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "prometheus"}}}},
				"webhook": map[string]any{"port": 10250},
				"metrics": map[string]any{"port": 9090},
			},
			want: []networkingv1.NetworkPolicyIngressRule{
				{Ports: port(10250), From: controlPlane},
				{Ports: port(9090), From: []networkingv1.NetworkPolicyPeer{{
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "obs"}},
					PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "prometheus"}},
				}}},
				{Ports: port(8081)},
			},
		},
		{
			name:   "no webhooks, no metrics",
			values: map[string]any{"networkPolicy": map[string]any{"enabled": true}, "webhook": map[string]any{"enabled": false}, "metrics": map[string]any{"enabled": false}},
			want:   []networkingv1.NetworkPolicyIngressRule{{Ports: port(8081)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := renderChart(t, bundleRelease, bundleNamespace, tt.values)
			checkWiring(t, objs, bundleNamespace)
			np := suite.Only[networkingv1.NetworkPolicy](t, objs, "NetworkPolicy")
			deploy := suite.Only[appsv1.Deployment](t, objs, "Deployment")
			if !suite.SelectsPods(t, &np.Spec.PodSelector, deploy) {
				t.Errorf("NetworkPolicy selects %v, not the manager's pods %v", np.Spec.PodSelector, deploy.Spec.Template.Labels)
			}
			if diff := cmp.Diff([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, np.Spec.PolicyTypes); diff != "" {
				t.Errorf("policyTypes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, np.Spec.Ingress); diff != "" {
				t.Errorf("ingress rules (-want +got):\n%s", diff)
			}
		})
	}
	if n := len(suite.Find(renderDefault(t), "NetworkPolicy")); n != 0 {
		t.Errorf("%d NetworkPolicies with the default values, want none", n)
	}
}

// docsPrometheusRule returns the PrometheusRule docs/operations.md shows
// under "Alerts worth setting".
func docsPrometheusRule(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	const start = "```yaml\napiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\n"
	_, block, ok := strings.Cut(string(raw), start)
	if !ok {
		t.Fatal("docs/operations.md shows no PrometheusRule")
	}
	block, _, _ = strings.Cut(block, "```")
	var rule map[string]any
	if err := yaml.Unmarshal([]byte(start[len("```yaml\n"):]+block), &rule); err != nil {
		t.Fatalf("docs/operations.md's PrometheusRule: %v", err)
	}
	return rule
}

// TestPrometheusRule checks the optional PrometheusRule: its rules are
// those docs/operations.md shows, with prometheusRule.labels; without the
// PrometheusRule API in the cluster the install stops and says so.
func TestPrometheusRule(t *testing.T) {
	vals := map[string]any{"prometheusRule": map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}}}
	objs := renderChart(t, bundleRelease, bundleNamespace, vals)
	rule := suite.Only[unstructured.Unstructured](t, objs, "PrometheusRule")
	if rule.GetAPIVersion() != "monitoring.coreos.com/v1" || rule.GetNamespace() != bundleNamespace || rule.GetLabels()["release"] != "prometheus" {
		t.Errorf("PrometheusRule %s %s/%s labels %v, want monitoring.coreos.com/v1 in %s with release=prometheus", rule.GetAPIVersion(), rule.GetNamespace(), rule.GetName(), rule.GetLabels(), bundleNamespace)
	}
	docs := docsPrometheusRule(t)
	if diff := cmp.Diff(docs["spec"], rule.Object["spec"]); diff != "" {
		t.Errorf("PrometheusRule spec (-docs/operations.md +chart):\n%s", diff)
	}
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	if len(groups) == 0 {
		t.Fatal("the PrometheusRule has no groups")
	}

	// prometheus-operator's CRDs missing: cert-manager's API only.
	_, err := bundle.TryRenderChartFor(t, []string{"cert-manager.io/v1"}, bundleRelease, bundleNamespace, vals)
	if err == nil || !strings.Contains(err.Error(), "prometheusRule.enabled needs prometheus-operator's PrometheusRule API") {
		t.Errorf("rendering without the PrometheusRule API: error %v, want one saying prometheusRule.enabled needs it", err)
	}
}

// TestGrafanaDashboard checks the optional dashboard ConfigMap: it holds
// config/grafana/dynamic-ingress-operator.json (the dashboard
// docs/operations.md describes; the chart's files/grafana-dashboard.json is
// a copy, kept the same here) under the Grafana sidecar's label.
func TestGrafanaDashboard(t *testing.T) {
	source, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "config", "grafana", "dynamic-ingress-operator.json"))
	if err != nil {
		t.Fatal(err)
	}
	copied, err := os.ReadFile(filepath.Join(chartDir(), "files", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(source, copied) {
		t.Errorf("the chart's files/grafana-dashboard.json differs from config/grafana/dynamic-ingress-operator.json: cp config/grafana/dynamic-ingress-operator.json %s", filepath.Join("charts", "dynamic-ingress-operator", "files", "grafana-dashboard.json"))
	}

	objs := renderChart(t, bundleRelease, bundleNamespace, map[string]any{"grafanaDashboard": map[string]any{"enabled": true, "annotations": map[string]any{"grafana_folder": "Operators"}}})
	cm := suite.Only[corev1.ConfigMap](t, objs, "ConfigMap")
	if cm.Labels["grafana_dashboard"] != "1" || cm.Annotations["grafana_folder"] != "Operators" || cm.Namespace != bundleNamespace {
		t.Errorf("ConfigMap %s/%s labels %v annotations %v, want grafana_dashboard=1 and grafana_folder=Operators in %s", cm.Namespace, cm.Name, cm.Labels, cm.Annotations, bundleNamespace)
	}
	var want, got any
	if err := json.Unmarshal(source, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(cm.Data["dynamic-ingress-operator.json"]), &got); err != nil {
		t.Fatalf("the ConfigMap's dynamic-ingress-operator.json: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the ConfigMap's dashboard (-config/grafana +chart):\n%s", diff)
	}
	if len(cm.Data) != 1 {
		t.Errorf("ConfigMap data keys %d, want the dashboard only", len(cm.Data))
	}
}

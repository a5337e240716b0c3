package config_test

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/bundle"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// serviceMonitor is the part of prometheus-operator's ServiceMonitor that
// says what is scraped and how.
type serviceMonitor struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Endpoints []struct {
			Port            string `json:"port"`
			Scheme          string `json:"scheme"`
			Path            string `json:"path"`
			BearerTokenFile string `json:"bearerTokenFile"`
			TLSConfig       *struct {
				InsecureSkipVerify bool `json:"insecureSkipVerify"`
			} `json:"tlsConfig"`
		} `json:"endpoints"`
	} `json:"spec"`
}

func TestServiceMonitorIsOffByDefault(t *testing.T) {
	for _, o := range render(t) {
		if o.GetKind() == "ServiceMonitor" {
			t.Errorf("config/default renders ServiceMonitor %s: it must stay off until the cluster has prometheus-operator", o.GetName())
		}
	}
	// config/prometheus renders on its own, for `kubectl apply -k`.
	objs := bundle.Kustomize(t, filepath.Join(controlplane.RepoRoot(), "config", "prometheus"))
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetAPIVersion()+" "+o.GetKind())
	}
	if diff := cmp.Diff([]string{"monitoring.coreos.com/v1 ServiceMonitor"}, kinds); diff != "" {
		t.Errorf("config/prometheus (-want +got):\n%s", diff)
	}
}

// TestServiceMonitorScrapesTheMetricsService checks that, turned on, the
// ServiceMonitor selects the metrics Service and only it, in its namespace,
// on its HTTPS port, with the bearer token the manager checks.
func TestServiceMonitorScrapesTheMetricsService(t *testing.T) {
	objs := bundle.Kustomize(t, bundle.DefaultDirWithMonitor(t))
	found := suite.Find(objs, "ServiceMonitor")
	if len(found) != 1 {
		t.Fatalf("%d ServiceMonitors, want 1", len(found))
	}
	// serviceMonitor is a partial view of prometheus-operator's type: the
	// fields it does not name are ignored, not refused.
	monitor := &serviceMonitor{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(found[0].Object, monitor); err != nil {
		t.Fatalf("decoding the ServiceMonitor: %v", err)
	}
	metricsSvc := suite.Named[corev1.Service](t, objs, "Service", metricsServiceName)

	var selected []string
	for _, o := range objs {
		if o.GetKind() != "Service" || o.GetNamespace() != monitor.Metadata.Namespace {
			continue
		}
		matches := len(monitor.Spec.Selector.MatchLabels) > 0
		for k, v := range monitor.Spec.Selector.MatchLabels {
			if o.GetLabels()[k] != v {
				matches = false
			}
		}
		if matches {
			selected = append(selected, o.GetName())
		}
	}
	if diff := cmp.Diff([]string{metricsSvc.Name}, selected); diff != "" {
		t.Errorf("Services the ServiceMonitor selects (-want +got):\n%s", diff)
	}

	if len(monitor.Spec.Endpoints) != 1 {
		t.Fatalf("ServiceMonitor has %d endpoints, want 1", len(monitor.Spec.Endpoints))
	}
	ep := monitor.Spec.Endpoints[0]
	var portNames []string
	for _, p := range metricsSvc.Spec.Ports {
		portNames = append(portNames, p.Name)
	}
	if len(portNames) != 1 || ep.Port != portNames[0] {
		t.Errorf("ServiceMonitor scrapes port %q, the metrics Service has ports %v", ep.Port, portNames)
	}
	if ep.Scheme != "https" || ep.Path != "/metrics" || ep.TLSConfig == nil {
		t.Errorf("ServiceMonitor scrapes %s://…%s with tlsConfig %v, want https /metrics with a tlsConfig", ep.Scheme, ep.Path, ep.TLSConfig)
	}
	if ep.BearerTokenFile != "/var/run/secrets/kubernetes.io/serviceaccount/token" {
		t.Errorf("ServiceMonitor sends bearer token %q, want Prometheus's ServiceAccount token (the manager refuses scrapes without a token)", ep.BearerTokenFile)
	}
}

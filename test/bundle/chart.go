package bundle

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
)

// ChartDir is the Helm chart, charts/dynamic-ingress-operator.
func ChartDir() string {
	return filepath.Join(controlplane.RepoRoot(), "charts", "dynamic-ingress-operator")
}

// LoadChart loads the chart directory as helm install would.
func LoadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.LoadDir(ChartDir())
	if err != nil {
		t.Fatalf("loading %s: %v", ChartDir(), err)
	}
	return ch
}

// ClusterAPIVersions are the APIs beyond Kubernetes' own that the chart is
// rendered for by default: a cluster with cert-manager and
// prometheus-operator, as `helm template --api-versions` would say.
var ClusterAPIVersions = []string{
	"cert-manager.io/v1",
	"monitoring.coreos.com/v1",
	"monitoring.coreos.com/v1/ServiceMonitor",
	"monitoring.coreos.com/v1/PrometheusRule",
}

// TryRenderChart renders the chart as `helm template` does (a client-only
// dry run of helm install), for a release name and namespace and with
// values, into its objects in order, for a cluster that has
// ClusterAPIVersions; it returns helm's error when the values are refused.
// A chart with hooks fails the test: it has none.
func TryRenderChart(t *testing.T, releaseName, namespace string, vals map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	return TryRenderChartFor(t, ClusterAPIVersions, releaseName, namespace, vals)
}

// TryRenderChartFor is TryRenderChart for a cluster whose APIs beyond
// Kubernetes' own are apiVersions ("group/version" or
// "group/version/Kind", as `helm template --api-versions`).
func TryRenderChartFor(t *testing.T, apiVersions []string, releaseName, namespace string, vals map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	install := action.NewInstall(action.NewConfiguration())
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName = releaseName
	install.Namespace = namespace
	install.Replace = true
	kubeVersion, err := common.ParseKubeVersion(controlplane.KubernetesVersion)
	if err != nil {
		t.Fatal(err)
	}
	install.KubeVersion = kubeVersion
	install.APIVersions = apiVersions
	rel, err := install.Run(LoadChart(t), ValuesFile(t, vals))
	if err != nil {
		return nil, err
	}
	r, ok := rel.(*release.Release)
	if !ok {
		t.Fatalf("helm install returned a %T", rel)
	}
	if len(r.Hooks) > 0 {
		t.Errorf("the chart has %d hooks; it should have none", len(r.Hooks))
	}
	return DecodeManifests(t, r.Manifest), nil
}

// ValuesFile returns values as helm install -f reads them from a file:
// numbers are float64 there, as a template sees them from values.yaml.
func ValuesFile(t *testing.T, vals map[string]any) map[string]any {
	t.Helper()
	raw, err := yaml.Marshal(vals)
	if err != nil {
		t.Fatal(err)
	}
	out, err := loader.LoadValues(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("reading values %s: %v", raw, err)
	}
	return out
}

// DecodeManifests splits a multi-document YAML stream into objects.
func DecodeManifests(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatalf("decoding the rendered manifest: %v\n%s", err, manifest)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

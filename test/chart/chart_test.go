// Package chart_test checks the Helm chart in charts/dynamic-ingress-operator
// with the Helm Go SDK: it lints; it renders with default and non-default
// values into what the values say; it agrees with config/ (the kustomize
// bundle) on everything that must not drift (CRDs, RBAC, webhook
// configurations, the manager's flags and pod); its default rendering is
// accepted by a real API server that has cert-manager's CRDs; it packages;
// and every value is documented.
//
// The CRDs, the manager ClusterRole, the user ClusterRoles and the webhook
// configurations of the chart are generated from config/; after changing
// those (make manifests, or config/rbac), regenerate them with
//
//	go test ./test/chart/ -run TestGeneratedTemplatesAreUpToDate -update
package chart_test

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

// The release name and namespace under which the chart's objects have the
// names config/default gives them.
const (
	bundleRelease   = "dynamic-ingress-operator"
	bundleNamespace = "dynamic-ingress-operator-system"
)

// chartDir is the chart under test.
func chartDir() string {
	return filepath.Join(controlplane.RepoRoot(), "charts", "dynamic-ingress-operator")
}

// loadChart loads the chart directory as helm install would.
func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.LoadDir(chartDir())
	if err != nil {
		t.Fatalf("loading %s: %v", chartDir(), err)
	}
	return ch
}

// renderChart renders the chart as `helm template` does (a client-only dry
// run of helm install), for a release name and namespace and with values,
// into its objects in order.
func renderChart(t *testing.T, releaseName, namespace string, vals map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs, err := tryRender(t, releaseName, namespace, vals)
	if err != nil {
		t.Fatalf("rendering the chart with %v: %v", vals, err)
	}
	return objs
}

// renderDefault renders the chart with its default values, as release
// bundleRelease in bundleNamespace.
func renderDefault(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	return renderChart(t, bundleRelease, bundleNamespace, nil)
}

func tryRender(t *testing.T, releaseName, namespace string, vals map[string]any) ([]*unstructured.Unstructured, error) {
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
	rel, err := install.Run(loadChart(t), asValuesFile(t, vals))
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
	return decodeManifests(t, r.Manifest), nil
}

// asValuesFile returns values as helm install -f reads them from a file:
// numbers are float64 there, as a template sees them from values.yaml.
func asValuesFile(t *testing.T, vals map[string]any) map[string]any {
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

// decodeManifests splits a multi-document YAML stream into objects.
func decodeManifests(t *testing.T, manifest string) []*unstructured.Unstructured {
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

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
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dynamicingress/dynamic-ingress-operator/test/bundle"
)

// The release name and namespace under which the chart's objects have the
// names config/default gives them.
const (
	bundleRelease   = "dynamic-ingress-operator"
	bundleNamespace = "dynamic-ingress-operator-system"
)

// chartDir is the chart under test.
func chartDir() string { return bundle.ChartDir() }

// loadChart loads the chart directory as helm install would.
func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	return bundle.LoadChart(t)
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
	return bundle.TryRenderChart(t, releaseName, namespace, vals)
}

// asValuesFile returns values as helm install -f reads them from a file.
func asValuesFile(t *testing.T, vals map[string]any) map[string]any {
	t.Helper()
	return bundle.ValuesFile(t, vals)
}

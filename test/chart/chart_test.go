// Package chart_test checks the Helm chart in charts/dynamic-ingress-operator
// with the helm CLI users run (pinned by the Makefile's HELM_VERSION and
// built into bin/; test/bundle runs it): it lints; it renders with default and non-default
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

// loadChart reads the chart directory.
func loadChart(t *testing.T) *bundle.Chart {
	t.Helper()
	return bundle.LoadChart(t)
}

// renderChart renders the chart with `helm template`, for a release name and namespace and with values,
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

// asValuesFile writes values into a file for helm's -f and returns its path.
func asValuesFile(t *testing.T, vals map[string]any) string {
	t.Helper()
	return bundle.ValuesFile(t, vals)
}

package chart_test

import (
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
)

// TestChartLints runs helm lint --strict (the SDK's lint action) with the
// default values and with the non-default ones of TestCustomValues: no
// error, no warning.
func TestChartLints(t *testing.T) {
	kubeVersion, err := common.ParseKubeVersion(controlplane.KubernetesVersion)
	if err != nil {
		t.Fatal(err)
	}
	for name, vals := range map[string]map[string]any{"default values": nil, "custom values": customValues()} {
		t.Run(name, func(t *testing.T) {
			lint := action.NewLint()
			lint.Strict = true
			lint.Namespace = bundleNamespace
			lint.KubeVersion = kubeVersion
			result := lint.Run([]string{chartDir()}, asValuesFile(t, vals))
			for _, m := range result.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", m)
				} else {
					t.Logf("helm lint: %s", m)
				}
			}
			for _, err := range result.Errors {
				t.Errorf("helm lint: %v", err)
			}
			if result.TotalChartsLinted != 1 {
				t.Errorf("helm lint linted %d charts, want 1", result.TotalChartsLinted)
			}
		})
	}
}

package chart_test

import (
	"strings"
	"testing"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/bundle"
)

// TestChartLints runs helm lint --strict with the default values and with
// the non-default ones of TestCustomValues: no error, no warning (--strict
// fails on warnings).
func TestChartLints(t *testing.T) {
	for name, vals := range map[string]map[string]any{"default values": nil, "custom values": customValues()} {
		t.Run(name, func(t *testing.T) {
			out, err := bundle.RunHelm(t, "lint", "--strict", chartDir(), "--namespace", bundleNamespace,
				"--kube-version", controlplane.KubernetesVersion, "-f", asValuesFile(t, vals))
			t.Logf("helm lint:\n%s", out)
			if err != nil {
				t.Errorf("%v", err)
			}
			if !strings.Contains(out, "1 chart(s) linted, 0 chart(s) failed") {
				t.Errorf("helm lint did not lint the one chart cleanly:\n%s", out)
			}
		})
	}
}

package chart_test

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
)

// prometheusOperatorModule holds the ServiceMonitor CRD. It is only
// downloaded into the module cache, never required by go.mod.
const prometheusOperatorModule = "github.com/prometheus-operator/prometheus-operator@v0.85.0"

// TestRenderingsDryRunApply applies, with a server-side dry run, the
// chart's default rendering and its custom one (TestCustomValues: its own
// certificate, a ServiceMonitor, no CRDs) to an API server that has
// cert-manager's and prometheus-operator's CRDs: the API server accepts
// every object, with its own validation and defaulting.
func TestRenderingsDryRunApply(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{certManagerCRDDir(t), serviceMonitorCRDFile(t)},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: controlplane.AssetsDir(),
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting kube-apiserver and etcd from %s (make envtest-assets builds them): %v", controlplane.AssetsDir(), err)
	}
	defer func() { _ = env.Stop() }()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	renderings := []struct {
		name, release, namespace string
		objs                     []*unstructured.Unstructured
	}{
		{"default values", bundleRelease, bundleNamespace, renderDefault(t)},
		{"custom values", "ops", "platform", renderChart(t, "ops", "platform", customValues())},
	}
	for _, r := range renderings {
		// The release namespace and the CRDs for real first: a dry run
		// does not create what the other objects need to exist.
		ns := &corev1.Namespace{}
		ns.Name = r.namespace
		if err := c.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
		for _, o := range suite.Find(r.objs, "CustomResourceDefinition") {
			if err := c.Create(ctx, o.DeepCopy()); err != nil {
				t.Fatalf("creating CRD %s: %v", o.GetName(), err)
			}
		}
	}
	for _, r := range renderings {
		t.Run(r.name, func(t *testing.T) {
			if len(r.objs) == 0 {
				t.Fatal("nothing rendered")
			}
			for _, o := range r.objs {
				if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner("helm"), client.DryRunAll, client.ForceOwnership); err != nil {
					t.Errorf("server-side dry-run apply of %s: %v", objectKey(o), err)
				}
			}
		})
	}
}

// certManagerCRDDir is deploy/crds inside the cert-manager Go module this
// project depends on.
func certManagerCRDDir(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/cert-manager/cert-manager")
	cmd.Dir = controlplane.RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("finding the cert-manager module: %v: %s", err, stderr.String())
	}
	return filepath.Join(strings.TrimSpace(string(out)), "deploy", "crds")
}

// serviceMonitorCRDFile is prometheus-operator's ServiceMonitor CRD, from
// the module cache.
func serviceMonitorCRDFile(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", prometheusOperatorModule)
	cmd.Dir = t.TempDir() // outside this module: go.mod stays as it is
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("downloading %s: %v: %s%s", prometheusOperatorModule, err, out, stderr.String())
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download said %s: %v", out, err)
	}
	return filepath.Join(mod.Dir, "example", "prometheus-operator-crd", "monitoring.coreos.com_servicemonitors.yaml")
}

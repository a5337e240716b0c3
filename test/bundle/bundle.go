// Package bundle renders the install bundle (config/) the way kubectl
// apply -k does and the Helm chart the way helm template does, with the
// very CLIs users run (the project's kubectl and the pinned helm, both
// built into bin/ by the Makefile), and finds the third-party CRDs their
// dry runs need, for the suites that check the bundle and the chart (test
// code only). Through the CLIs, the operator's go.mod needs neither the
// Helm SDK nor the kustomize API.
package bundle

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
)

// DefaultDir is config/default, the kustomization users apply.
func DefaultDir() string { return filepath.Join(controlplane.RepoRoot(), "config", "default") }

// Kustomize builds a kustomization directory into objects, as
// `kubectl apply -k` would: with `kubectl kustomize`, the kustomize that
// the project's kubectl embeds.
func Kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	cmd := exec.Command(filepath.Join(controlplane.AssetsDir(), "kubectl"), "kustomize", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s (make envtest-assets builds kubectl): %v: %s", dir, err, stderr.String())
	}
	return DecodeManifests(t, string(out))
}

// MonitorLine is how config/default lists config/prometheus, turned off.
const MonitorLine = "#- ../prometheus"

// DefaultDirWithMonitor copies config/ into a temporary directory, turns
// the ServiceMonitor on in its config/default the way the kustomization's
// comment says (uncommenting one line), and returns that config/default.
func DefaultDirWithMonitor(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "config")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(controlplane.RepoRoot(), "config"))); err != nil {
		t.Fatal(err)
	}
	kustomization := filepath.Join(dir, "default", "kustomization.yaml")
	raw, err := os.ReadFile(kustomization)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte("\n"+MonitorLine+"\n")) {
		t.Fatalf("config/default/kustomization.yaml has no line %q to turn the ServiceMonitor on", MonitorLine)
	}
	raw = bytes.Replace(raw, []byte("\n"+MonitorLine+"\n"), []byte("\n"+strings.TrimPrefix(MonitorLine, "#")+"\n"), 1)
	if err := os.WriteFile(kustomization, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "default")
}

// CertManagerCRDDir is deploy/crds inside the cert-manager Go module this
// project depends on.
func CertManagerCRDDir(t *testing.T) string {
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

// prometheusOperatorModule holds the ServiceMonitor CRD the dry runs use.
// The module is only downloaded (into the module cache), never built or
// required by go.mod: its CRDs are all the tests need from it.
const prometheusOperatorModule = "github.com/prometheus-operator/prometheus-operator@v0.85.0"

// ServiceMonitorCRDFile is prometheus-operator's ServiceMonitor CRD, from
// the module cache.
func ServiceMonitorCRDFile(t *testing.T) string {
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

package bundle

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
)

// ChartDir is the Helm chart, charts/dynamic-ingress-operator.
func ChartDir() string {
	return filepath.Join(controlplane.RepoRoot(), "charts", "dynamic-ingress-operator")
}

// Helm is the helm CLI the tests run: $HELM when set (the Makefile sets
// it), else bin/helm-$(HELM_VERSION), where the Makefile builds it.
func Helm(t *testing.T) string {
	t.Helper()
	if path := os.Getenv("HELM"); path != "" {
		return path
	}
	version, err := MakefileHelmVersion()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(controlplane.RepoRoot(), "bin", "helm-"+version)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no helm CLI at %s: run `make helm` (or set HELM)", path)
	}
	return path
}

// MakefileHelmVersion is the HELM_VERSION the Makefile builds the helm CLI
// at.
func MakefileHelmVersion() (string, error) {
	raw, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "Makefile"))
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^HELM_VERSION \?= (\S+)$`).FindSubmatch(raw)
	if m == nil {
		return "", errors.New("the Makefile sets no HELM_VERSION")
	}
	return string(m[1]), nil
}

// RunHelm runs the helm CLI with args and returns what it printed on
// stdout; when it fails, the error is what it printed on stderr.
func RunHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(Helm(t), args...)
	// helm reads and writes nothing of the user's own: no repositories,
	// no registry logins, no plugins.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		return stdout.String(), fmt.Errorf("helm %s: %w: %s", args[0], err, msg)
	}
	return stdout.String(), nil
}

// Chart is what the tests read of the chart directory: its Chart.yaml,
// values.yaml, values.schema.json and templates.
type Chart struct {
	Metadata ChartMetadata
	// Values are the default values (values.yaml).
	Values map[string]any
	// Schema is values.schema.json.
	Schema []byte
	// Templates are the files under templates/, named templates/....
	Templates []ChartFile
}

// ChartMetadata is the part of Chart.yaml the tests read.
type ChartMetadata struct {
	Name       string `json:"name"`
	Version    string `json:"version"`
	AppVersion string `json:"appVersion"`
}

// ChartFile is one file of the chart.
type ChartFile struct {
	// Name is the file's path in the chart, with slashes.
	Name string
	Data []byte
}

// LoadChart reads the chart directory.
func LoadChart(t *testing.T) *Chart {
	t.Helper()
	dir := ChartDir()
	read := func(name string) []byte {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	ch := &Chart{Schema: read("values.schema.json")}
	if err := yaml.Unmarshal(read("Chart.yaml"), &ch.Metadata); err != nil {
		t.Fatalf("Chart.yaml: %v", err)
	}
	if err := yaml.Unmarshal(read("values.yaml"), &ch.Values); err != nil {
		t.Fatalf("values.yaml: %v", err)
	}
	err := filepath.WalkDir(filepath.Join(dir, "templates"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		ch.Templates = append(ch.Templates, ChartFile{Name: filepath.ToSlash(rel), Data: read(rel)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
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

// TryRenderChart renders the chart with `helm template` for a release
// name and namespace and with values (given to helm as a values file),
// into its objects in order, for a cluster that has ClusterAPIVersions; it
// returns helm's error when the values are refused. A chart with hooks
// fails the test: it has none.
func TryRenderChart(t *testing.T, releaseName, namespace string, vals map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	return TryRenderChartFor(t, ClusterAPIVersions, releaseName, namespace, vals)
}

// TryRenderChartFor is TryRenderChart for a cluster whose APIs beyond
// Kubernetes' own are apiVersions ("group/version" or
// "group/version/Kind", as `helm template --api-versions`).
func TryRenderChartFor(t *testing.T, apiVersions []string, releaseName, namespace string, vals map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	args := []string{"template", releaseName, ChartDir(), "--namespace", namespace,
		"--kube-version", controlplane.KubernetesVersion, "-f", ValuesFile(t, vals)}
	for _, v := range apiVersions {
		args = append(args, "--api-versions", v)
	}
	manifest, err := RunHelm(t, args...)
	if err != nil {
		return nil, err
	}
	objs := DecodeManifests(t, manifest)
	for _, o := range objs {
		if hook := o.GetAnnotations()["helm.sh/hook"]; hook != "" {
			t.Errorf("%s %s is a %s hook; the chart should have none", o.GetKind(), o.GetName(), hook)
		}
	}
	return objs, nil
}

// ValuesFile writes values into a file for helm's -f and returns its
// path. Numbers are then float64, as a template sees them from values.yaml.
func ValuesFile(t *testing.T, vals map[string]any) string {
	t.Helper()
	if vals == nil {
		vals = map[string]any{}
	}
	raw, err := yaml.Marshal(vals)
	if err != nil {
		t.Fatal(err)
	}
	// Not in t.TempDir(): its name has the test's, and helm splits -f
	// at commas.
	f, err := os.CreateTemp("", "helm-values-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(f.Name()) })
	_, err = f.Write(raw)
	if err := errors.Join(err, f.Close()); err != nil {
		t.Fatal(err)
	}
	return f.Name()
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

// TemplateNames are the names of the chart's templates, sorted.
func (c *Chart) TemplateNames() []string {
	var names []string
	for _, f := range c.Templates {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return names
}

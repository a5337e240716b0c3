package chart_test

import (
	"archive/tar"
	"compress/gzip"
	"debug/buildinfo"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/bundle"
)

// TestChartPackages packages the chart with helm package (make
// helm-package) and checks that the archive holds exactly the chart: its
// templates, values, schema, README and nothing else.
func TestChartPackages(t *testing.T) {
	dest := t.TempDir()
	if _, err := bundle.RunHelm(t, "package", chartDir(), "--destination", dest); err != nil {
		t.Fatal(err)
	}
	dir := loadChart(t)
	path := filepath.Join(dest, dir.Metadata.Name+"-"+dir.Metadata.Version+".tgz")
	entries := readChartArchive(t, path, dir.Metadata.Name)
	var archivedTemplates, archivedFiles []string
	for _, name := range entries {
		switch {
		case strings.HasPrefix(name, "templates/"):
			archivedTemplates = append(archivedTemplates, name)
		case name == "Chart.yaml" || name == "values.yaml" || name == "values.schema.json":
		default:
			archivedFiles = append(archivedFiles, name)
		}
	}
	if diff := cmp.Diff(dir.TemplateNames(), archivedTemplates); diff != "" {
		t.Errorf("templates (-directory +archive):\n%s", diff)
	}
	if diff := cmp.Diff([]string{".helmignore", "README.md", "files/grafana-dashboard.json", "files/prometheus-rules.yaml"}, archivedFiles); diff != "" {
		t.Errorf("other files in the archive (-want +got):\n%s", diff)
	}
	for _, name := range []string{"Chart.yaml", "values.yaml", "values.schema.json"} {
		if !slices.Contains(entries, name) {
			t.Errorf("the archive has no %s", name)
		}
	}
}

// readChartArchive returns the sorted names of the files in the chart
// archive at path, relative to its top directory (the chart's name).
func readChartArchive(t *testing.T, path, chartName string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("helm package wrote no %s: %v", path, err)
	}
	defer func() { _ = f.Close() }()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name, ok := strings.CutPrefix(h.Name, chartName+"/")
		if !ok {
			t.Errorf("%s in the archive is outside %s/", h.Name, chartName)
			continue
		}
		if h.Typeflag == tar.TypeReg {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// TestMakefileHelmIsTheTestedHelm checks that make helm-package runs the
// helm CLI these tests run.
func TestMakefileHelmIsTheTestedHelm(t *testing.T) {
	version, err := bundle.MakefileHelmVersion()
	if err != nil {
		t.Fatal(err)
	}
	// helm version prints only v4.2; the build information has the module's.
	info, err := buildinfo.ReadFile(bundle.Helm(t))
	if err != nil {
		t.Fatal(err)
	}
	if info.Main.Path != "helm.sh/helm/v4" || info.Main.Version != version {
		t.Errorf("the tests run %s %s; the Makefile's HELM_VERSION is %s", info.Main.Path, info.Main.Version, version)
	}
	raw, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Fields(string(raw)), "helm-package:") {
		t.Error("the Makefile has no helm-package target")
	}
}

package chart_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
)

// TestChartPackages packages the chart as helm package does (make
// helm-package) and checks that the archive holds exactly the chart: its
// templates, values, schema, README and nothing else.
func TestChartPackages(t *testing.T) {
	pkg := action.NewPackage()
	pkg.Destination = t.TempDir()
	path, err := pkg.Run(chartDir(), nil)
	if err != nil {
		t.Fatalf("helm package: %v", err)
	}
	dir := loadChart(t)
	if want := filepath.Join(pkg.Destination, dir.Metadata.Name+"-"+dir.Metadata.Version+".tgz"); path != want {
		t.Errorf("helm package wrote %s, want %s", path, want)
	}
	archived, err := loader.Load(path)
	if err != nil {
		t.Fatalf("loading %s: %v", path, err)
	}
	names := func(fs []string) []string { sort.Strings(fs); return fs }
	var dirTemplates, archivedTemplates, archivedFiles []string
	for _, f := range dir.Templates {
		dirTemplates = append(dirTemplates, f.Name)
	}
	for _, f := range archived.Templates {
		archivedTemplates = append(archivedTemplates, f.Name)
	}
	for _, f := range archived.Files {
		archivedFiles = append(archivedFiles, f.Name)
	}
	if diff := cmp.Diff(names(dirTemplates), names(archivedTemplates)); diff != "" {
		t.Errorf("templates (-directory +archive):\n%s", diff)
	}
	if diff := cmp.Diff([]string{".helmignore", "README.md", "files/grafana-dashboard.json", "files/prometheus-rules.yaml"}, names(archivedFiles)); diff != "" {
		t.Errorf("other files in the archive (-want +got):\n%s", diff)
	}
	if len(archived.Schema) == 0 || archived.Values == nil {
		t.Errorf("the archive has no values.schema.json or no values.yaml")
	}
}

// TestMakefileHelmIsTheSDKVersion checks that make helm-package builds the
// helm CLI at the version of the Helm SDK these tests use.
func TestMakefileHelmIsTheSDKVersion(t *testing.T) {
	list := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "helm.sh/helm/v4")
	list.Dir = controlplane.RepoRoot()
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list -m helm.sh/helm/v4: %v", err)
	}
	sdk := strings.TrimSpace(string(out))
	raw, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^HELM_VERSION \?= (\S+)$`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("the Makefile sets no HELM_VERSION")
	}
	if string(m[1]) != sdk || sdk == "" {
		t.Errorf("the Makefile builds helm %s; go.mod requires the Helm SDK at %q: keep them the same", m[1], sdk)
	}
	if !slices.Contains(strings.Fields(string(raw)), "helm-package:") {
		t.Error("the Makefile has no helm-package target")
	}
}

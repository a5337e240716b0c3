package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"sigs.k8s.io/yaml"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
)

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// repoRoot is this repository's root, from this file's place in it.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "..")
}

func TestParsePlatforms(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []Platform
		wantErr bool
	}{
		{in: "linux/amd64", want: []Platform{{OS: "linux", Arch: "amd64"}}},
		{in: "linux/amd64, darwin/arm64", want: []Platform{{OS: "linux", Arch: "amd64"}, {OS: "darwin", Arch: "arm64"}}},
		{in: "linux", wantErr: true},
		{in: "linux/", wantErr: true},
		{in: "", wantErr: true},
	} {
		got, err := ParsePlatforms(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParsePlatforms(%q) error %v, want error %v", tc.in, err, tc.wantErr)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParsePlatforms(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestWriteChecksums(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"b.tgz": "chart", "a.oci.tar": "image", ChecksumsFile: "old"}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteChecksums(dir); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, ChecksumsFile))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%x  a.oci.tar\n%x  b.tgz\n", sha256.Sum256([]byte("image")), sha256.Sum256([]byte("chart")))
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("SHA256SUMS (-want +got):\n%s", diff)
	}
}

// testDigest is an image index digest for the tests.
const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestInstallYAML renders config/default with a release image: the
// Deployment runs it, pinned by its digest after its tag, and config/ is
// left as it was.
func TestInstallYAML(t *testing.T) {
	config := filepath.Join(repoRoot(t), "config")
	kustomization := filepath.Join(config, "manager", "kustomization.yaml")
	before, err := os.ReadFile(kustomization)
	if err != nil {
		t.Fatal(err)
	}
	out, err := InstallYAML(config, ImageRef{Repository: "registry.example.com/team/dynamic-ingress-operator", Tag: "1.2.3", Digest: testDigest})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var obj struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		kinds[obj.Kind]++
	}
	images, err := DeploymentImages(out)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"registry.example.com/team/dynamic-ingress-operator:1.2.3@" + testDigest}, images); diff != "" {
		t.Errorf("the Deployment's images (-want +got):\n%s", diff)
	}
	for _, kind := range []string{"CustomResourceDefinition", "ClusterRole", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "Certificate", "Issuer", "Deployment"} {
		if kinds[kind] == 0 {
			t.Errorf("install.yaml has no %s (kinds %v)", kind, kinds)
		}
	}
	after, err := os.ReadFile(kustomization)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("InstallYAML changed %s", kustomization)
	}
}

// TestPackageChart packages the chart with a release version and image:
// version and appVersion set in the archive, its default values and so its
// Deployment naming the image by tag and digest, values.yaml's comments
// kept, the chart directory unchanged, the same bytes twice.
func TestPackageChart(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "charts", "dynamic-ingress-operator")
	chartYAML, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	valuesYAML, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	image := ImageRef{Repository: "registry.example.com/team/dynamic-ingress-operator", Tag: "1.2.3", Digest: testDigest}
	first, second := t.TempDir(), t.TempDir()
	path, err := PackageChart(dir, image, epoch, first)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(first, "dynamic-ingress-operator-1.2.3.tgz"); path != want {
		t.Errorf("wrote %s, want %s", path, want)
	}
	if _, err := PackageChart(dir, image, epoch, second); err != nil {
		t.Fatal(err)
	}
	a, errA := os.ReadFile(path)
	b, errB := os.ReadFile(filepath.Join(second, filepath.Base(path)))
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if !bytes.Equal(a, b) {
		t.Error("packaging the chart twice gave two different archives")
	}
	zr, err := gzip.NewReader(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(epoch) {
			t.Errorf("%s in the archive is dated %s, want %s", h.Name, h.ModTime, epoch)
		}
	}
	ch, err := loader.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Metadata.Version != "1.2.3" || ch.Metadata.AppVersion != "1.2.3" {
		t.Errorf("the archive's chart has version %q and appVersion %q, want 1.2.3", ch.Metadata.Version, ch.Metadata.AppVersion)
	}
	if after, err := os.ReadFile(filepath.Join(dir, "Chart.yaml")); err != nil || !bytes.Equal(after, chartYAML) {
		t.Errorf("PackageChart changed Chart.yaml (%v)", err)
	}
	if after, err := os.ReadFile(filepath.Join(dir, "values.yaml")); err != nil || !bytes.Equal(after, valuesYAML) {
		t.Errorf("PackageChart changed values.yaml (%v)", err)
	}
	var archivedValues []byte
	for _, f := range ch.Raw {
		if f.Name == "values.yaml" {
			archivedValues = f.Data
		}
	}
	if got, want := bytes.Count(archivedValues, []byte("\n#")), bytes.Count(valuesYAML, []byte("\n#")); got != want {
		t.Errorf("the archive's values.yaml has %d comment lines, the chart's %d", got, want)
	}
	if got := renderedImage(t, ch); got != image.String() {
		t.Errorf("the packaged chart's Deployment runs %q, want %q", got, image)
	}
}

// TestHelmSDKIsTheMakefileHelm checks that PackageChart packages with the
// Helm SDK at the Makefile's HELM_VERSION: the helm CLI that make
// helm-package runs and that test/chart checks the chart with.
func TestHelmSDKIsTheMakefileHelm(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^HELM_VERSION \?= (\S+)$`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("the Makefile sets no HELM_VERSION")
	}
	// The test runs in this package's directory, inside the release module.
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "helm.sh/helm/v4").Output()
	if err != nil {
		t.Fatalf("go list -m helm.sh/helm/v4: %v", err)
	}
	sdk := strings.TrimSpace(string(out))
	if sdk != string(m[1]) {
		t.Errorf("the release module requires the Helm SDK at %q; the Makefile builds helm %s: keep them the same", sdk, m[1])
	}
}

// renderedImage renders the chart with its default values, as helm
// template does for a cluster with cert-manager, and returns the image of
// the Deployment's container.
func renderedImage(t *testing.T, ch *chart.Chart) string {
	t.Helper()
	install := action.NewInstall(action.NewConfiguration())
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName, install.Namespace = "dynamic-ingress-operator", "dynamic-ingress-operator-system"
	install.APIVersions = []string{"cert-manager.io/v1"}
	kubeVersion, err := common.ParseKubeVersion(controlplane.KubernetesVersion)
	if err != nil {
		t.Fatal(err)
	}
	install.KubeVersion = kubeVersion
	rel, err := install.Run(ch, nil)
	if err != nil {
		t.Fatalf("rendering the packaged chart: %v", err)
	}
	r, ok := rel.(*helmrelease.Release)
	if !ok {
		t.Fatalf("helm install returned a %T", rel)
	}
	images, err := DeploymentImages([]byte(r.Manifest))
	if err != nil {
		t.Fatal(err)
	}
	if len(images) != 1 {
		t.Fatalf("the rendered chart runs images %v, want one", images)
	}
	return images[0]
}

// TestPinImageValues sets the image's three values and nothing else, and
// refuses a values.yaml whose image block it does not recognise.
func TestPinImageValues(t *testing.T) {
	image := ImageRef{Repository: "registry.example.com/dio", Tag: "1.2.3", Digest: testDigest}
	in := "# -- The image.\nimage:\n  # -- Repository.\n  repository: dio\n\n  tag: \"\"\n  digest: \"\"\n  pullPolicy: IfNotPresent\n# -- Replicas.\nreplicaCount: 2\ntag: keep\n"
	want := "# -- The image.\nimage:\n  # -- Repository.\n  repository: \"registry.example.com/dio\"\n\n  tag: \"1.2.3\"\n  digest: \"" + testDigest + "\"\n  pullPolicy: IfNotPresent\n# -- Replicas.\nreplicaCount: 2\ntag: keep\n"
	got, err := PinImageValues([]byte(in), image)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("values.yaml (-want +got):\n%s", diff)
	}
	for name, in := range map[string]string{
		"no image block":     "replicaCount: 2\n",
		"no digest line":     "image:\n  repository: dio\n  tag: \"\"\n",
		"a flow-style block": "image: {repository: dio, tag: \"\", digest: \"\"}\n",
	} {
		if _, err := PinImageValues([]byte(in), image); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

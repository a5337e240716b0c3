package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/dynamicingress/dynamic-ingress-operator/hack/release/internal/release"
)

// repoRoot is the repository's root, from this file's place in it.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// TestInstallAndChartPinTheArchivedIndex runs `release install` and
// `release chart` as make release does, after an image archive: both name
// the image repository:version@digest, the digest being that of the index
// in the archive, the one `release image` printed.
func TestInstallAndChartPinTheArchivedIndex(t *testing.T) {
	dir := t.TempDir()
	created := time.Unix(1700000000, 0).UTC()
	var managers []release.PlatformBinary
	for _, arch := range []string{"amd64", "arm64"} {
		bin := filepath.Join(dir, "manager-linux-"+arch)
		if err := os.WriteFile(bin, []byte("a manager for "+arch), 0o755); err != nil {
			t.Fatal(err)
		}
		managers = append(managers, release.PlatformBinary{Platform: release.Platform{OS: "linux", Arch: arch}, Path: bin})
	}
	idx, err := release.Image(release.ImageOptions{Managers: managers, Stamp: release.Stamp{Version: "1.2.3", Commit: "abc"}, Created: created})
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "image.oci.tar")
	if err := release.WriteOCIArchive(idx, "1.2.3", created, archive); err != nil {
		t.Fatal(err)
	}
	digest, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	const repo = "registry.example.com/team/dynamic-ingress-operator"
	want := repo + ":1.2.3@" + digest.String()

	installYAML := filepath.Join(dir, "install.yaml")
	if err := run(context.Background(), "install", []string{"-repository", repo, "-tag", "1.2.3",
		"-config", filepath.Join(repoRoot(), "config"), "-image", archive, "-out", installYAML}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(installYAML)
	if err != nil {
		t.Fatal(err)
	}
	images, err := release.DeploymentImages(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(images) != 1 || images[0] != want {
		t.Errorf("install.yaml runs %v, want [%s]", images, want)
	}

	chartOut := filepath.Join(dir, "chart")
	if err := run(context.Background(), "chart", []string{"-version", "1.2.3", "-created", "1700000000",
		"-chart", filepath.Join(repoRoot(), "charts", "dynamic-ingress-operator"), "-repository", repo,
		"-image", archive, "-out", chartOut}); err != nil {
		t.Fatal(err)
	}
	ch, err := loader.Load(filepath.Join(chartOut, "dynamic-ingress-operator-1.2.3.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	image, _ := ch.Values["image"].(map[string]any)
	if got := image["repository"].(string) + ":" + image["tag"].(string) + "@" + image["digest"].(string); got != want {
		t.Errorf("the chart's default image is %s, want %s", got, want)
	}
}

// TestInstallNeedsTheArchive: without the image's archive there is no
// digest to pin, and install.yaml is not written.
func TestInstallNeedsTheArchive(t *testing.T) {
	out := filepath.Join(t.TempDir(), "install.yaml")
	err := run(context.Background(), "install", []string{"-tag", "1.2.3", "-config", filepath.Join(repoRoot(), "config"), "-out", out})
	if err == nil || !strings.Contains(err.Error(), "-image") {
		t.Errorf("error %v, want one asking for -image", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was written", out)
	}
}

package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// archiveEntry is what a test sees of one entry of a plugin archive.
type archiveEntry struct {
	Name, Content, ModTime string
	Mode                   int64
	UID, GID               int
	Uname, Gname           string
}

func readPluginArchive(t *testing.T, path string) []archiveEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if !zr.ModTime.IsZero() || zr.Name != "" {
		t.Errorf("gzip header: name %q, time %v; want neither", zr.Name, zr.ModTime)
	}
	var out []archiveEntry
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		content, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, archiveEntry{Name: h.Name, Content: string(content), ModTime: h.ModTime.UTC().String(),
			Mode: h.Mode, UID: h.Uid, GID: h.Gid, Uname: h.Uname, Gname: h.Gname})
	}
}

// fakePluginFiles writes a stand-in binary and license into dir.
func fakePluginFiles(t *testing.T, dir, binary string) (string, string) {
	t.Helper()
	bin, license := filepath.Join(dir, "bin-"+binary), filepath.Join(dir, "LICENSE.txt")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho "+binary+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(license, []byte("Apache License 2.0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return bin, license
}

func TestWritePluginArchive(t *testing.T) {
	dir := t.TempDir()
	bin, license := fakePluginFiles(t, dir, "plugin")
	first, second := filepath.Join(dir, "first.tar.gz"), filepath.Join(dir, "second.tar.gz")
	if err := WritePluginArchive(bin, license, epoch, first); err != nil {
		t.Fatal(err)
	}
	// The sources' own times and modes do not show in the archive.
	if err := os.Chtimes(bin, epoch.AddDate(1, 0, 0), epoch.AddDate(1, 0, 0)); err != nil {
		t.Fatal(err)
	}
	if err := WritePluginArchive(bin, license, epoch, second); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(first)
	b, _ := os.ReadFile(second)
	if !bytes.Equal(a, b) {
		t.Error("two archives of the same binary differ")
	}
	want := []archiveEntry{
		{Name: "LICENSE", Content: "Apache License 2.0\n", ModTime: epoch.String(), Mode: 0o644},
		{Name: "kubectl-dynamic", Content: "#!/bin/sh\necho plugin\n", ModTime: epoch.String(), Mode: 0o755},
	}
	if diff := cmp.Diff(want, readPluginArchive(t, first)); diff != "" {
		t.Errorf("archive entries (-want +got):\n%s", diff)
	}
	if err := WritePluginArchive(filepath.Join(dir, "missing"), license, epoch, filepath.Join(dir, "third.tar.gz")); err == nil {
		t.Error("an archive of a missing binary was written")
	}
	if _, err := os.Stat(filepath.Join(dir, "third.tar.gz")); !os.IsNotExist(err) {
		t.Errorf("a failed archive left a file behind: %v", err)
	}
}

// TestKrewManifest renders the committed plugins/dynamic.yaml for archives
// of the release's three platforms: a krew Plugin whose every platform
// names its own archive, with that archive's digest.
func TestKrewManifest(t *testing.T) {
	tmpl, err := os.ReadFile(filepath.Join(repoRoot(t), "plugins", "dynamic.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	platforms := []Platform{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "arm64"}}
	sums := map[string]string{}
	for _, p := range platforms {
		bin, license := fakePluginFiles(t, t.TempDir(), p.OS+"-"+p.Arch)
		name := PluginArchiveName("1.2.3", p)
		if err := WritePluginArchive(bin, license, epoch, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile(filepath.Join(dir, name))
		sums[p.String()] = fmt.Sprintf("%x", sha256.Sum256(raw))
	}
	manifest, err := KrewManifest(tmpl, "1.2.3", dir)
	if err != nil {
		t.Fatal(err)
	}
	var got KrewPlugin
	if err := yaml.UnmarshalStrict(manifest, &got); err != nil {
		t.Fatalf("the rendered manifest does not parse: %v\n%s", err, manifest)
	}
	if got.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || got.Kind != "Plugin" || got.Metadata.Name != "dynamic" || got.Spec.Version != "v1.2.3" {
		t.Errorf("manifest header: %s %s %s %s", got.APIVersion, got.Kind, got.Metadata.Name, got.Spec.Version)
	}
	if got.Spec.ShortDescription == "" || got.Spec.Description == "" || !strings.HasPrefix(got.Spec.Homepage, "https://") {
		t.Errorf("manifest spec lacks a description or homepage: %+v", got.Spec)
	}
	var rows []string
	for _, p := range got.Spec.Platforms {
		l := p.Selector.MatchLabels
		var files []string
		for _, f := range p.Files {
			files = append(files, f.From+"->"+f.To)
		}
		rows = append(rows, fmt.Sprintf("%s/%s %s %s bin=%s files=%s", l["os"], l["arch"], p.URI, p.SHA256, p.Bin, strings.Join(files, ",")))
	}
	const download = "https://github.com/dynamicingress/dynamic-ingress-operator/releases/download/v1.2.3/"
	var want []string
	for _, p := range platforms {
		want = append(want, fmt.Sprintf("%s %s%s %s bin=kubectl-dynamic files=kubectl-dynamic->.,LICENSE->.", p, download, PluginArchiveName("1.2.3", p), sums[p.String()]))
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("manifest platforms (-want +got):\n%s", diff)
	}
	if strings.Contains(string(manifest), "{{") || strings.Contains(string(manifest), "make release") {
		t.Errorf("the template's markup or comment is left in the manifest:\n%s", manifest)
	}
}

func TestKrewManifestRefuses(t *testing.T) {
	dir := t.TempDir()
	bin, license := fakePluginFiles(t, dir, "x")
	if err := WritePluginArchive(bin, license, epoch, filepath.Join(dir, PluginArchiveName("1.2.3", Platform{"linux", "amd64"}))); err != nil {
		t.Fatal(err)
	}
	platform := func(os, arch, sum string) string {
		return fmt.Sprintf(`
  - selector: {matchLabels: {os: %[1]s, arch: %[2]s}}
    uri: https://example.com/v{{ .Version }}/{{ archive "%[1]s" "%[2]s" }}
    sha256: %[3]s
    bin: kubectl-dynamic`, os, arch, sum)
	}
	head := "apiVersion: krew.googlecontainertools.github.com/v1alpha2\nkind: Plugin\nmetadata: {name: dynamic}\nspec:\n  version: v{{ .Version }}\n  homepage: https://example.com\n  shortDescription: x\n  platforms:"
	good := `{{ sha256 (archive "linux" "amd64") }}`
	for _, tc := range []struct {
		name, tmpl, wantErr string
	}{
		{"missing archive", head + platform("darwin", "arm64", `{{ sha256 (archive "darwin" "arm64") }}`), "kubectl-dynamic-1.2.3-darwin-arm64.tar.gz: no such file"},
		{"another archive's digest", head + platform("linux", "amd64", good) + platform("linux", "arm64", good), "spec.platforms[1]"},
		{"wrong version", strings.Replace(head, "v{{ .Version }}", "1.2.3", 1) + platform("linux", "amd64", good), `spec.version "1.2.3", want v1.2.3`},
		{"unknown field", head + platform("linux", "amd64", good) + "\n    binary: x", `unknown field "binary"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := KrewManifest([]byte(tc.tmpl), "1.2.3", dir)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("KrewManifest: error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

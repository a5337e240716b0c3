package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/template"
	"time"

	"sigs.k8s.io/yaml"
)

// PluginBinary is the name of the kubectl plugin's binary inside its
// archive: what kubectl looks for on the PATH, and the krew manifest's bin.
const PluginBinary = "kubectl-dynamic"

// PluginArchiveName is the name of the plugin's archive for a platform in
// dist/: kubectl-dynamic-x.y.z-os-arch.tar.gz.
func PluginArchiveName(version string, p Platform) string {
	return fmt.Sprintf("%s-%s-%s-%s.tar.gz", PluginBinary, version, p.OS, p.Arch)
}

// WritePluginArchive writes out, the gzip-compressed tar krew installs the
// plugin from: the binary at binary, named kubectl-dynamic (mode 0755), and
// the license at license, named LICENSE (0644). Entries are sorted by name,
// owned by root and carry modTime, and the gzip header carries no name nor
// time, so the same binary gives the same archive.
func WritePluginArchive(binary, license string, modTime time.Time, out string) error {
	entries := []struct {
		name, src string
		mode      int64
	}{
		// Sorted by name: "L" sorts before "k".
		{"LICENSE", license, 0o644},
		{PluginBinary, binary, 0o755},
	}
	return writeAtomically(out, ".plugin-archive-", func(w io.Writer) error {
		zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
		if err != nil {
			return err
		}
		tw := tar.NewWriter(zw)
		for _, e := range entries {
			content, err := os.ReadFile(e.src)
			if err != nil {
				return err
			}
			h := &tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: e.mode, Size: int64(len(content)),
				ModTime: modTime.UTC(), Format: tar.FormatPAX}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if _, err := tw.Write(content); err != nil {
				return err
			}
		}
		return errors.Join(tw.Close(), zw.Close())
	})
}

// KrewPlugin is the part of a krew plugin manifest
// (krew.googlecontainertools.github.com/v1alpha2, kind Plugin) that the
// release writes and checks.
type KrewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec KrewPluginSpec `json:"spec"`
}

// KrewPluginSpec is a krew plugin's spec.
type KrewPluginSpec struct {
	Version          string         `json:"version"`
	Homepage         string         `json:"homepage"`
	ShortDescription string         `json:"shortDescription"`
	Description      string         `json:"description"`
	Caveats          string         `json:"caveats,omitempty"`
	Platforms        []KrewPlatform `json:"platforms"`
}

// KrewPlatform is one platform of a krew plugin: where its archive is, its
// digest, and what to install from it.
type KrewPlatform struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	URI    string `json:"uri"`
	SHA256 string `json:"sha256"`
	Files  []struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"files,omitempty"`
	Bin string `json:"bin"`
}

// KrewManifest renders the krew manifest template tmpl (plugins/dynamic.yaml)
// for version: in it, {{ .Version }} is x.y.z, {{ archive "os" "arch" }}
// the name of that platform's archive and {{ sha256 "name" }} the digest
// of the file of that name in dir. It then checks what it rendered: a
// krew Plugin at version vx.y.z whose every platform installs
// kubectl-dynamic from the archive of its os and arch, with that archive's
// digest.
func KrewManifest(tmpl []byte, version, dir string) ([]byte, error) {
	funcs := template.FuncMap{
		"archive": func(os, arch string) string { return PluginArchiveName(version, Platform{OS: os, Arch: arch}) },
		"sha256": func(name string) (string, error) {
			if name != path.Base(name) {
				return "", fmt.Errorf("sha256 %q: name a file of the directory", name)
			}
			return fileSHA256(filepath.Join(dir, name))
		},
	}
	t, err := template.New("krew manifest").Funcs(funcs).Option("missingkey=error").Parse(string(tmpl))
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := t.Execute(&out, struct{ Version string }{version}); err != nil {
		return nil, err
	}
	if err := CheckKrewManifest(out.Bytes(), version, dir); err != nil {
		return nil, fmt.Errorf("the rendered manifest: %w", err)
	}
	return out.Bytes(), nil
}

// CheckKrewManifest checks a rendered krew manifest against the archives
// in dir: see KrewManifest.
func CheckKrewManifest(manifest []byte, version, dir string) error {
	var p KrewPlugin
	if err := yaml.UnmarshalStrict(manifest, &p); err != nil {
		return err
	}
	var errs []error
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" {
		errs = append(errs, fmt.Errorf("apiVersion %q, kind %q: want a krew v1alpha2 Plugin", p.APIVersion, p.Kind))
	}
	if p.Spec.Version != "v"+version {
		errs = append(errs, fmt.Errorf("spec.version %q, want v%s", p.Spec.Version, version))
	}
	if p.Metadata.Name == "" || p.Spec.ShortDescription == "" || p.Spec.Homepage == "" {
		errs = append(errs, errors.New("metadata.name, spec.shortDescription and spec.homepage are required"))
	}
	if len(p.Spec.Platforms) == 0 {
		errs = append(errs, errors.New("no platforms"))
	}
	for i, pl := range p.Spec.Platforms {
		at := fmt.Sprintf("spec.platforms[%d]", i)
		labels := pl.Selector.MatchLabels
		name := PluginArchiveName(version, Platform{OS: labels["os"], Arch: labels["arch"]})
		if labels["os"] == "" || labels["arch"] == "" || len(labels) != 2 {
			errs = append(errs, fmt.Errorf("%s: selector.matchLabels %v, want os and arch", at, labels))
		}
		if !strings.HasPrefix(pl.URI, "https://") || path.Base(pl.URI) != name {
			errs = append(errs, fmt.Errorf("%s: uri %q, want an https URL of %s", at, pl.URI, name))
		}
		sum, err := fileSHA256(filepath.Join(dir, name))
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", at, err))
		case pl.SHA256 != sum:
			errs = append(errs, fmt.Errorf("%s: sha256 %q, but %s has %s", at, pl.SHA256, name, sum))
		}
		if pl.Bin != PluginBinary {
			errs = append(errs, fmt.Errorf("%s: bin %q, want %s", at, pl.Bin, PluginBinary))
		}
		if err == nil {
			if err := archiveHolds(filepath.Join(dir, name), PluginBinary); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", at, err))
			}
		}
	}
	return errors.Join(errs...)
}

// archiveHolds checks that the gzip-compressed tar at archive holds an
// executable file named name.
func archiveHolds(archive, name string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", archive, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%s holds no %s", filepath.Base(archive), name)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", archive, err)
		}
		if h.Name == name && h.Typeflag == tar.TypeReg && h.Mode&0o111 != 0 {
			return nil
		}
	}
}

package release

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// refNameAnnotation is the OCI image layout's name of an image in the
// layout: its tag.
const refNameAnnotation = "org.opencontainers.image.ref.name"

// WriteOCIArchive writes idx to path as an OCI image layout in a tar (an
// "OCI archive"): index.json names idx, tagged tag, and blobs/ holds it,
// its images and their layers. Entries are sorted, owned by root and carry
// modTime, so the same index gives the same archive.
func WriteOCIArchive(idx v1.ImageIndex, tag string, modTime time.Time, path string) error {
	dir, err := os.MkdirTemp("", "oci-layout-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{refNameAnnotation: tag})); err != nil {
		return fmt.Errorf("writing the OCI layout: %w", err)
	}
	return tarDirectory(dir, path, modTime)
}

// ArchiveIndexDigest returns the digest of the image index in the OCI
// archive, the one entry of its index.json: what `release image`
// printed when it wrote the archive, and what a registry reports once the
// image is pushed. It reads index.json alone, unpacking nothing.
func ArchiveIndexDigest(archive string) (v1.Hash, error) {
	f, err := os.Open(archive)
	if err != nil {
		return v1.Hash{}, err
	}
	defer func() { _ = f.Close() }()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return v1.Hash{}, fmt.Errorf("%s has no index.json: it is not an OCI archive", archive)
		}
		if err != nil {
			return v1.Hash{}, fmt.Errorf("reading %s: %w", archive, err)
		}
		if path.Clean(h.Name) != "index.json" {
			continue
		}
		m, err := v1.ParseIndexManifest(tr)
		if err != nil {
			return v1.Hash{}, fmt.Errorf("%s: index.json: %w", archive, err)
		}
		if len(m.Manifests) != 1 || !m.Manifests[0].MediaType.IsIndex() {
			return v1.Hash{}, fmt.Errorf("%s: index.json should name exactly one image index, it names %d entries", archive, len(m.Manifests))
		}
		return m.Manifests[0].Digest, nil
	}
}

// ReadOCIArchive unpacks the OCI archive at path into dir and returns the
// image index its index.json names (the layout's only entry).
func ReadOCIArchive(path, dir string) (v1.ImageIndex, error) {
	if err := untar(path, dir); err != nil {
		return nil, err
	}
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, err
	}
	m, err := root.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 || !m.Manifests[0].MediaType.IsIndex() {
		return nil, fmt.Errorf("%s: index.json should name exactly one image index, it names %d entries", path, len(m.Manifests))
	}
	return root.ImageIndex(m.Manifests[0].Digest)
}

// tarDirectory writes the files under dir into a tar at out, in lexical
// order, with fixed owners, modes and times.
func tarDirectory(dir, out string, modTime time.Time) error {
	return writeAtomically(out, ".oci-archive-", func(w io.Writer) error {
		tw := tar.NewWriter(w)
		// WalkDir visits entries in lexical order.
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == dir {
				return err
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: modTime.UTC(), Format: tar.FormatPAX}
			switch {
			case d.IsDir():
				h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
				return tw.WriteHeader(h)
			case d.Type().IsRegular():
				info, err := d.Info()
				if err != nil {
					return err
				}
				h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, info.Size()
				if err := tw.WriteHeader(h); err != nil {
					return err
				}
				f, err := os.Open(p)
				if err != nil {
					return err
				}
				defer func() { _ = f.Close() }()
				_, err = io.Copy(tw, f)
				return err
			default:
				return fmt.Errorf("%s is neither a file nor a directory", p)
			}
		})
		if err != nil {
			return err
		}
		return tw.Close()
	})
}

// writeAtomically writes out (mode 0644) with write, through a temporary
// file in the same directory named prefix..., so that out is either whole
// or absent.
func writeAtomically(out, prefix string, write func(io.Writer) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(out), prefix)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err = write(tmp); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), out)
}

// untar unpacks the files and directories of the tar archive into dir.
func untar(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", archive, err)
		}
		name := path.Clean(h.Name)
		if !fs.ValidPath(name) || strings.HasPrefix(name, "../") {
			return fmt.Errorf("%s holds an entry outside its root: %q", archive, h.Name)
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			_, copyErr := io.Copy(out, tr)
			if err := errors.Join(copyErr, out.Close()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s holds %q, neither a file nor a directory", archive, h.Name)
		}
	}
}

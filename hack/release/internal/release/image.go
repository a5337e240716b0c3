package release

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The manager image's fixed settings (docs/install.md).
const (
	// ImageUser is the user and group the manager runs as: distroless's
	// nonroot, which owns no file in the image.
	ImageUser = "65532:65532"
	// ImageEntrypoint is the manager binary's path in the image.
	ImageEntrypoint = "/manager"
	// ImageTitle is the image's title label.
	ImageTitle = "dynamic-ingress-operator"
	// ImageLicense is the project's licence, as an SPDX expression.
	ImageLicense = "Apache-2.0"
)

// The OCI annotation keys the image carries as labels (in each platform's
// config) and as annotations (on the index).
const (
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelSource   = "org.opencontainers.image.source"
	LabelLicenses = "org.opencontainers.image.licenses"
	LabelTitle    = "org.opencontainers.image.title"
	LabelCreated  = "org.opencontainers.image.created"
)

// ImageOptions say what goes into the manager image.
type ImageOptions struct {
	// Managers are the manager binaries, one per platform, in the order
	// the index lists them.
	Managers []PlatformBinary
	// Stamp is the version and commit, for the labels.
	Stamp Stamp
	// Source is the URL of the source repository.
	Source string
	// Created is the time every timestamp in the image says: the commit's
	// time (SOURCE_DATE_EPOCH), so that rebuilding a commit gives the same
	// digest.
	Created time.Time
}

// PlatformBinary is a binary built for one platform.
type PlatformBinary struct {
	Platform Platform
	Path     string
}

// Labels are the OCI labels of the image.
func (o ImageOptions) Labels() map[string]string {
	return map[string]string{
		LabelVersion:  o.Stamp.Version,
		LabelRevision: o.Stamp.Commit,
		LabelSource:   o.Source,
		LabelLicenses: ImageLicense,
		LabelTitle:    ImageTitle,
		LabelCreated:  o.Created.UTC().Format(time.RFC3339),
	}
}

// Image builds the manager image: one OCI image per platform, each the
// manager binary alone on an empty base, running as ImageUser, gathered in
// one OCI image index.
func Image(o ImageOptions) (v1.ImageIndex, error) {
	if len(o.Managers) == 0 {
		return nil, fmt.Errorf("no manager binary to put in the image")
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var adds []mutate.IndexAddendum
	for _, m := range o.Managers {
		img, err := platformImage(o, m)
		if err != nil {
			return nil, fmt.Errorf("the %s image: %w", m.Platform, err)
		}
		adds = append(adds, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: m.Platform.OS, Architecture: m.Platform.Arch}},
		})
	}
	idx = mutate.AppendManifests(idx, adds...)
	annotated, ok := mutate.Annotations(idx, o.Labels()).(v1.ImageIndex)
	if !ok {
		return nil, fmt.Errorf("annotating the image index gave no image index")
	}
	return annotated, nil
}

func platformImage(o ImageOptions, m PlatformBinary) (v1.Image, error) {
	layer, err := managerLayer(m.Path, o.Created)
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: m.Platform.Arch,
		OS:           m.Platform.OS,
		Created:      v1.Time{Time: o.Created.UTC()},
		Config: v1.Config{
			User:       ImageUser,
			Entrypoint: []string{ImageEntrypoint},
			WorkingDir: "/",
			Labels:     o.Labels(),
		},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, err
	}
	return mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   v1.Time{Time: o.Created.UTC()},
			CreatedBy: "make image",
			Comment:   "the manager binary, " + o.Stamp.Version,
		},
	})
}

// managerLayer is the image's one layer: the binary at ImageEntrypoint,
// owned by root and not writable (the manager runs as ImageUser), with
// the fixed modification time.
func managerLayer(binary string, modTime time.Time) (v1.Layer, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg,
		Name:     ImageEntrypoint[1:],
		Mode:     0o555,
		Size:     int64(len(data)),
		ModTime:  modTime.UTC(),
		Format:   tar.FormatPAX,
	}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerTar := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}

package release

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// managerImageName is the image name config/manager's Deployment uses,
// which its kustomization replaces.
const managerImageName = "controller"

// ImageRef names the manager image as install.yaml and the chart's values
// do: repository:tag@digest, the digest that of the release's image index.
type ImageRef struct {
	Repository string
	// Tag is the release's version.
	Tag string
	// Digest is "sha256:..."; empty names the image by its tag alone.
	Digest string
}

// String is the reference a container runtime pulls: repository:tag, and
// @digest after it when there is one (the runtime then pulls by the
// digest; the tag still says the version).
func (r ImageRef) String() string {
	s := r.Repository + ":" + r.Tag
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// InstallYAML renders config/default (configDir is config/) into one YAML
// stream, as `make build-installer` does, with the manager image set to
// image. config/ itself is left as it is: the image is set on a copy in
// memory.
func InstallYAML(configDir string, image ImageRef) ([]byte, error) {
	mem := filesys.MakeFsInMemory()
	root := "/config"
	err := filepath.WalkDir(configDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(configDir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return mem.WriteFile(path.Join(root, filepath.ToSlash(rel)), data)
	})
	if err != nil {
		return nil, err
	}
	if err := setImage(mem, path.Join(root, "manager", "kustomization.yaml"), image); err != nil {
		return nil, err
	}
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, path.Join(root, "default"))
	if err != nil {
		return nil, err
	}
	return resources.AsYaml()
}

// setImage does what `kustomize edit set image
// controller=repository:tag@digest` does to the kustomization file at p.
func setImage(mem filesys.FileSystem, p string, ref ImageRef) error {
	raw, err := mem.ReadFile(p)
	if err != nil {
		return err
	}
	var k types.Kustomization
	if err := yaml.Unmarshal(raw, &k); err != nil {
		return err
	}
	image := types.Image{Name: managerImageName, NewName: ref.Repository, NewTag: ref.Tag, Digest: ref.Digest}
	found := false
	for i := range k.Images {
		if k.Images[i].Name == managerImageName {
			k.Images[i], found = image, true
		}
	}
	if !found {
		k.Images = append(k.Images, image)
	}
	if raw, err = yaml.Marshal(&k); err != nil {
		return err
	}
	return mem.WriteFile(p, raw)
}

// DeploymentImages are the images the containers of the Deployments in a
// YAML stream run (install.yaml, a rendered chart): what a release pins.
func DeploymentImages(stream []byte) ([]string, error) {
	var images []string
	for _, doc := range strings.Split(string(stream), "\n---\n") {
		var obj struct {
			Kind string
			Spec struct {
				Template struct {
					Spec struct{ Containers []struct{ Image string } }
				}
			}
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return nil, err
		}
		if obj.Kind != "Deployment" {
			continue
		}
		for _, c := range obj.Spec.Template.Spec.Containers {
			images = append(images, c.Image)
		}
	}
	return images, nil
}

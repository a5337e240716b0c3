package release

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"sigs.k8s.io/yaml"
)

// PackageChart lints the chart in dir strictly and packages it into outDir
// as helm package does, with version and appVersion set to image.Tag (the
// release's version) and the default values naming image (its repository,
// tag and digest), leaving the chart directory as it is. Every file in the
// archive carries modTime, so the same chart gives the same archive. It
// returns the archive's path.
func PackageChart(dir string, image ImageRef, modTime time.Time, outDir string) (string, error) {
	lint := action.NewLint()
	lint.Strict = true
	if res := lint.Run([]string{dir}, nil); len(res.Errors) > 0 {
		return "", fmt.Errorf("helm lint --strict %s: %w", dir, errors.Join(res.Errors...))
	}
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return "", err
	}
	ch.Metadata.Version = image.Tag
	ch.Metadata.AppVersion = image.Tag
	for _, f := range ch.Raw {
		// helm package writes values.yaml from the raw file.
		if f.Name != chartutil.ValuesfileName {
			continue
		}
		if f.Data, err = PinImageValues(f.Data, image); err != nil {
			return "", fmt.Errorf("%s/%s: %w", dir, chartutil.ValuesfileName, err)
		}
		if ch.Values, err = loader.LoadValues(bytes.NewReader(f.Data)); err != nil {
			return "", err
		}
	}
	ch.ModTime, ch.SchemaModTime = modTime, modTime
	for _, files := range [][]*common.File{ch.Raw, ch.Templates, ch.Files} {
		for _, f := range files {
			f.ModTime = modTime
		}
	}
	return chartutil.Save(ch, outDir)
}

// imageValueLine is one line of values.yaml's image block that
// PinImageValues sets: two spaces, the key, its value and any comment.
var imageValueLine = regexp.MustCompile(`^  (repository|tag|digest):( .*)?$`)

// PinImageValues sets image.repository, image.tag and image.digest in the
// chart's values.yaml to image's, line by line, so that the file keeps its
// comments and blank lines (helm show values prints them). It checks the
// result: every other value is what it was.
func PinImageValues(values []byte, image ImageRef) ([]byte, error) {
	want := map[string]string{"repository": image.Repository, "tag": image.Tag, "digest": image.Digest}
	lines := bytes.Split(values, []byte("\n"))
	inImage, set := false, map[string]bool{}
	for i, line := range lines {
		switch {
		case string(line) == "image:":
			inImage = true
			continue
		case len(line) > 0 && line[0] != ' ' && line[0] != '#':
			// The next top-level key ends the image block.
			inImage = false
		}
		m := imageValueLine.FindSubmatch(line)
		if !inImage || m == nil {
			continue
		}
		key := string(m[1])
		if set[key] {
			return nil, fmt.Errorf("image.%s is set twice", key)
		}
		quoted, err := json.Marshal(want[key]) // a YAML double-quoted scalar
		if err != nil {
			return nil, err
		}
		lines[i] = []byte("  " + key + ": " + string(quoted))
		set[key] = true
	}
	out := bytes.Join(lines, []byte("\n"))
	var before, after map[string]any
	if err := yaml.Unmarshal(values, &before); err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(out, &after); err != nil {
		return nil, err
	}
	img, ok := before["image"].(map[string]any)
	if !ok {
		return nil, errors.New("no image block")
	}
	for key, v := range want {
		if !set[key] {
			return nil, fmt.Errorf("no line `  %s: ...` in the image block", key)
		}
		img[key] = v
	}
	if !reflect.DeepEqual(before, after) {
		return nil, errors.New("setting the image's values changed others")
	}
	return out, nil
}

package release

import (
	"errors"
	"fmt"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// PackageChart lints the chart in dir strictly and packages it into outDir
// as helm package does, with version and appVersion set to version (the
// chart's default image tag), leaving Chart.yaml as it is. Every file in
// the archive carries modTime, so the same chart gives the same archive.
// It returns the archive's path.
func PackageChart(dir, version string, modTime time.Time, outDir string) (string, error) {
	lint := action.NewLint()
	lint.Strict = true
	if res := lint.Run([]string{dir}, nil); len(res.Errors) > 0 {
		return "", fmt.Errorf("helm lint --strict %s: %w", dir, errors.Join(res.Errors...))
	}
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return "", err
	}
	ch.Metadata.Version = version
	ch.Metadata.AppVersion = version
	ch.ModTime, ch.SchemaModTime = modTime, modTime
	for _, files := range [][]*common.File{ch.Raw, ch.Templates, ch.Files} {
		for _, f := range files {
			f.ModTime = modTime
		}
	}
	return chartutil.Save(ch, outDir)
}

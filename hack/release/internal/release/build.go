// Package release builds what `make image` and `make release` write into
// dist/ (docs/install.md): the manager and plugin binaries with their
// version stamped in, the multi-platform OCI image, the chart package,
// install.yaml, the SPDX SBOM and SHA256SUMS. Everything it writes is
// reproducible: the same commit, version and timestamp give the same bytes.
//
// It is a build tool in its own module (hack/release), which the command
// beside it runs; no shipped binary links it, and the operator's go.mod
// does not require what it needs (Helm, kustomize, go-containerregistry, spdx).
package release

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// ModulePath is this project's Go module.
const ModulePath = "github.com/dynamicingress/dynamic-ingress-operator"

// versionPackage holds the variables the linker stamps.
const versionPackage = ModulePath + "/internal/version"

// Platform is an operating system and CPU architecture, as GOOS and GOARCH
// name them.
type Platform struct {
	OS, Arch string
}

// String is the platform as os/arch.
func (p Platform) String() string { return p.OS + "/" + p.Arch }

// ParsePlatforms reads a comma-separated list of os/arch pairs.
func ParsePlatforms(s string) ([]Platform, error) {
	var out []Platform
	for _, f := range strings.Split(s, ",") {
		osName, arch, ok := strings.Cut(strings.TrimSpace(f), "/")
		if !ok || osName == "" || arch == "" {
			return nil, fmt.Errorf("platform %q is not os/arch", f)
		}
		out = append(out, Platform{OS: osName, Arch: arch})
	}
	return out, nil
}

// Stamp is what a release binary carries about itself, printed by its
// --version.
type Stamp struct {
	// Version is x.y.z.
	Version string
	// Commit is the git commit the binary is built from.
	Commit string
}

// LDFlags are the linker flags of a release binary: no symbol table or
// DWARF, and the stamp.
func (s Stamp) LDFlags() string {
	return fmt.Sprintf("-s -w -X %s.Version=%s -X %s.Commit=%s", versionPackage, s.Version, versionPackage, s.Commit)
}

// Build builds the Go package pkg (./cmd, ./cmd/kubectl-dynamic) of the
// module in dir for platform p into out: static (no cgo), without build
// paths (-trimpath), stamped with s. Go's builds are reproducible, so the
// same commit and stamp give the same binary.
func Build(ctx context.Context, dir, pkg string, p Platform, s Stamp, out string) error {
	// -buildvcs=false: the commit is in the stamp, and a build from a
	// source archive gives the same binary as one from a git checkout.
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", s.LDFlags(), "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch)
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s for %s: %w\n%s", pkg, p, err, output)
	}
	return nil
}

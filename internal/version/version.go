// Package version holds the version and git commit a binary was built
// from. `make image` and `make release` stamp them with
//
//	-ldflags "-X github.com/dynamicingress/dynamic-ingress-operator/internal/version.Version=x.y.z
//	          -X github.com/dynamicingress/dynamic-ingress-operator/internal/version.Commit=<sha>"
//
// (docs/install.md); a plain `go build` leaves the defaults.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release the binary belongs to, x.y.z, or "dev" when it
// was built without a version.
var Version = "dev"

// Commit is the git commit the binary was built from. When it is not
// stamped, the commit Go recorded in the binary's build information is
// used, if any (a build inside a git checkout records it).
var Commit = ""

// GitCommit is Commit, or the commit Go recorded at build time, or
// "unknown".
func GitCommit() string {
	if Commit != "" {
		return Commit
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				return s.Value
			}
		}
	}
	return "unknown"
}

// String is what `--version` prints: the version, the git commit and the
// Go version and platform the binary was built with.
func String() string {
	return fmt.Sprintf("version %s, commit %s, %s %s/%s", Version, GitCommit(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

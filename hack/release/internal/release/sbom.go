package release

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdx/v2/common"
	spdx "github.com/spdx/tools-golang/spdx/v2/v2_3"
	"golang.org/x/mod/module"
)

// Supplier is who supplies the shipped binaries, as the SBOM names them
// (an SPDX Organization).
const Supplier = "The dynamic-ingress-operator authors"

// Binary is a shipped binary: its file name, platform and SHA-256, and the
// build information Go recorded in it.
type Binary struct {
	// Name is the binary's file name (manager-linux-amd64,
	// kubectl-dynamic-x.y.z-darwin-arm64).
	Name     string
	Platform Platform
	// SHA256 is the file's SHA-256, in hex.
	SHA256 string
	Info   *debug.BuildInfo
}

// ReadBinary reads the binary at path: its SHA-256, and the build
// information (what `go version -m` prints), which also says its platform.
func ReadBinary(path string) (Binary, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Binary{}, err
	}
	info, err := buildinfo.Read(bytes.NewReader(data))
	if err != nil {
		return Binary{}, fmt.Errorf("reading the build information of %s: %w", path, err)
	}
	bin := Binary{Name: filepath.Base(path), SHA256: sha256Hex(data), Info: info}
	for _, s := range info.Settings {
		switch s.Key {
		case "GOOS":
			bin.Platform.OS = s.Value
		case "GOARCH":
			bin.Platform.Arch = s.Value
		}
	}
	if bin.Platform.OS == "" || bin.Platform.Arch == "" {
		return Binary{}, fmt.Errorf("the build information of %s names no GOOS and GOARCH", path)
	}
	return bin, nil
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// SBOMOptions say what the SBOM says of the release.
type SBOMOptions struct {
	// Version is the release's version, x.y.z.
	Version string
	// Source is the URL of the source repository.
	Source string
	// Created is the document's creation time: the commit's time, for a
	// reproducible document.
	Created time.Time
}

// SBOM is an SPDX 2.3 document, in JSON, of the shipped binaries: one
// package per binary (its file name, platform, SHA-256, version and
// Supplier), which the document DESCRIBES, and one package per Go module
// linked into any of them (its purl, and the module proxy's download URL,
// case-escaped), which the binaries that link it DEPEND_ON; the Go
// standard library counts as one module. Element IDs are numbered in the
// order of the binaries' names and of the modules' paths and versions, so
// no two elements share one, whatever their names; the name after the
// number is for the reader. The same binaries give the same bytes.
func SBOM(o SBOMOptions, binaries ...Binary) ([]byte, error) {
	if len(binaries) == 0 {
		return nil, fmt.Errorf("no binary to describe")
	}
	doc := &spdx.Document{
		SPDXVersion:       spdx.Version,
		DataLicense:       spdx.DataLicense,
		SPDXIdentifier:    "DOCUMENT",
		DocumentName:      ImageTitle + "-" + o.Version,
		DocumentNamespace: strings.TrimSuffix(o.Source, "/") + "/releases/" + o.Version + "/sbom.spdx.json",
		CreationInfo: &spdx.CreationInfo{
			Creators: []common.Creator{
				{CreatorType: "Organization", Creator: Supplier},
				{CreatorType: "Tool", Creator: ImageTitle + "-release-" + o.Version},
			},
			Created: o.Created.UTC().Format(time.RFC3339),
		},
	}
	binaries = slices.Clone(binaries)
	slices.SortFunc(binaries, func(a, b Binary) int { return strings.Compare(a.Name, b.Name) })

	// Every module any binary links, once, numbered in sorted order.
	linked := map[string][]moduleVersion{}
	var all []moduleVersion
	for _, bin := range binaries {
		mods, err := linkedModules(bin.Info)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", bin.Name, err)
		}
		linked[bin.Name] = mods
		all = append(all, mods...)
	}
	slices.SortFunc(all, compareModules)
	all = slices.Compact(all)
	moduleIDs := map[moduleVersion]common.ElementID{}
	var modulePackages []*spdx.Package
	for i, m := range all {
		id := elementID("Module", i+1, m.Path+"@"+m.Version)
		moduleIDs[m] = id
		p, err := modulePackage(id, m)
		if err != nil {
			return nil, err
		}
		modulePackages = append(modulePackages, p)
	}

	for i, bin := range binaries {
		if len(bin.SHA256) != sha256.Size*2 {
			return nil, fmt.Errorf("%s has no SHA-256", bin.Name)
		}
		id := elementID("Binary", i+1, bin.Name)
		doc.Packages = append(doc.Packages, &spdx.Package{
			PackageName:               bin.Name,
			PackageSPDXIdentifier:     id,
			PackageVersion:            o.Version,
			PackageFileName:           bin.Name,
			PackageSupplier:           &common.Supplier{SupplierType: "Organization", Supplier: Supplier},
			PackageDownloadLocation:   o.Source,
			FilesAnalyzed:             false,
			IsFilesAnalyzedTagPresent: true,
			PackageChecksums:          []common.Checksum{{Algorithm: common.SHA256, Value: bin.SHA256}},
			PackageLicenseConcluded:   ImageLicense,
			PackageLicenseDeclared:    ImageLicense,
			PackageCopyrightText:      "NOASSERTION",
			PrimaryPackagePurpose:     "APPLICATION",
			PackageComment: fmt.Sprintf("%s for %s, built from %s package %s with %s",
				bin.Name, bin.Platform, bin.Info.Main.Path, bin.Info.Path, bin.Info.GoVersion),
		})
		doc.Relationships = append(doc.Relationships, &spdx.Relationship{
			RefA:         common.MakeDocElementID("", "DOCUMENT"),
			RefB:         common.MakeDocElementID("", string(id)),
			Relationship: common.TypeRelationshipDescribe,
		})
		for _, m := range linked[bin.Name] {
			doc.Relationships = append(doc.Relationships, &spdx.Relationship{
				RefA:         common.MakeDocElementID("", string(id)),
				RefB:         common.MakeDocElementID("", string(moduleIDs[m])),
				Relationship: common.TypeRelationshipDependsOn,
			})
		}
	}
	doc.Packages = append(doc.Packages, modulePackages...)
	var buf bytes.Buffer
	if err := spdxjson.Write(doc, &buf, spdxjson.Indent("  ")); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// moduleVersion is a module as a binary links it: the replacement where
// go.mod replaces it. Local is set when the replacement is a directory
// (Path is then the replaced module's path and Version its version).
type moduleVersion struct {
	Path, Version string
	Local         bool
}

func compareModules(a, b moduleVersion) int {
	if c := strings.Compare(a.Path, b.Path); c != 0 {
		return c
	}
	if c := strings.Compare(a.Version, b.Version); c != 0 {
		return c
	}
	switch {
	case a.Local == b.Local:
		return 0
	case a.Local:
		return 1
	default:
		return -1
	}
}

// stdlib is the purl name of the Go standard library.
const stdlib = "stdlib"

// linkedModules are the modules a binary links, sorted, the standard
// library first among equals.
func linkedModules(info *debug.BuildInfo) ([]moduleVersion, error) {
	if info == nil {
		return nil, fmt.Errorf("no build information")
	}
	mods := []moduleVersion{{Path: stdlib, Version: strings.TrimPrefix(info.GoVersion, "go")}}
	for _, m := range info.Deps {
		switch {
		case m.Replace == nil:
			mods = append(mods, moduleVersion{Path: m.Path, Version: m.Version})
		case m.Replace.Version == "":
			mods = append(mods, moduleVersion{Path: m.Path, Version: m.Version, Local: true})
		default:
			mods = append(mods, moduleVersion{Path: m.Replace.Path, Version: m.Replace.Version})
		}
	}
	slices.SortFunc(mods, compareModules)
	return slices.Compact(mods), nil
}

// ModuleDownloadURL is where the Go module proxy serves a module version's
// zip: path and version case-escaped as the proxy protocol says
// (github.com/BurntSushi/toml is github.com/!burnt!sushi/toml there).
func ModuleDownloadURL(path, version string) (string, error) {
	p, err := module.EscapePath(path)
	if err != nil {
		return "", err
	}
	v, err := module.EscapeVersion(version)
	if err != nil {
		return "", err
	}
	return "https://proxy.golang.org/" + p + "/@v/" + v + ".zip", nil
}

func modulePackage(id common.ElementID, m moduleVersion) (*spdx.Package, error) {
	p := &spdx.Package{
		PackageName:               m.Path,
		PackageSPDXIdentifier:     id,
		PackageVersion:            m.Version,
		PackageSupplier:           &common.Supplier{Supplier: "NOASSERTION"},
		FilesAnalyzed:             false,
		IsFilesAnalyzedTagPresent: true,
		PackageLicenseConcluded:   "NOASSERTION",
		PackageLicenseDeclared:    "NOASSERTION",
		PackageCopyrightText:      "NOASSERTION",
		PrimaryPackagePurpose:     "LIBRARY",
		PackageExternalReferences: []*spdx.PackageExternalReference{{
			Category: common.CategoryPackageManager,
			RefType:  common.TypePackageManagerPURL,
			Locator:  "pkg:golang/" + m.Path + "@" + m.Version,
		}},
	}
	switch {
	case m.Path == stdlib:
		p.PackageDownloadLocation = "https://go.dev/dl/"
	case m.Local:
		p.PackageDownloadLocation = "NOASSERTION"
		p.PackageComment = "replaced by a local directory in go.mod"
	default:
		url, err := ModuleDownloadURL(m.Path, m.Version)
		if err != nil {
			return nil, fmt.Errorf("module %s@%s: %w", m.Path, m.Version, err)
		}
		p.PackageDownloadLocation = url
	}
	return p, nil
}

var notIDCharacters = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// elementID is the SPDX identifier of the n-th element of a kind: unique
// by its number, followed by name with every character an identifier
// cannot hold replaced, for the reader.
func elementID(kind string, n int, name string) common.ElementID {
	readable := strings.Trim(notIDCharacters.ReplaceAllString(name, "-"), "-")
	return common.ElementID(fmt.Sprintf("%s-%d-%s", kind, n, readable))
}

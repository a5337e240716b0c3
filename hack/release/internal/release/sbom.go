package release

import (
	"bytes"
	"debug/buildinfo"
	"fmt"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdx/v2/common"
	spdx "github.com/spdx/tools-golang/spdx/v2/v2_3"
)

// Binary is a shipped binary and the build information Go recorded in it.
type Binary struct {
	// Name is the binary's file name.
	Name string
	Info *debug.BuildInfo
}

// ReadBinary reads the build information of the binary at path (what
// `go version -m` prints).
func ReadBinary(path string) (Binary, error) {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return Binary{}, fmt.Errorf("reading the build information of %s: %w", path, err)
	}
	return Binary{Name: filepath.Base(path), Info: info}, nil
}

// SBOM is an SPDX 2.3 document, in JSON, of the Go modules linked into
// binaries: one package per binary, with the release's version, the Go
// standard library and one package per module, each module with its purl,
// and a DEPENDS_ON relationship from each binary to what it links. Created
// is the document's creation time (the commit's time, for a reproducible
// document).
func SBOM(version, source string, created time.Time, binaries ...Binary) ([]byte, error) {
	doc := &spdx.Document{
		SPDXVersion:       spdx.Version,
		DataLicense:       spdx.DataLicense,
		SPDXIdentifier:    "DOCUMENT",
		DocumentName:      ImageTitle + "-" + version,
		DocumentNamespace: strings.TrimSuffix(source, "/") + "/releases/" + version + "/sbom.spdx.json",
		CreationInfo: &spdx.CreationInfo{
			Creators: []common.Creator{{CreatorType: "Tool", Creator: ImageTitle + "-release-" + version}},
			Created:  created.UTC().Format(time.RFC3339),
		},
	}
	modules := map[common.ElementID]*spdx.Package{}
	for _, bin := range binaries {
		info := bin.Info
		binID := elementID("Binary", bin.Name)
		doc.Packages = append(doc.Packages, &spdx.Package{
			PackageName:             bin.Name,
			PackageSPDXIdentifier:   binID,
			PackageVersion:          version,
			PackageDownloadLocation: source,
			PackageLicenseConcluded: ImageLicense,
			PackageLicenseDeclared:  ImageLicense,
			PackageCopyrightText:    "NOASSERTION",
			PrimaryPackagePurpose:   "APPLICATION",
			PackageComment:          "built from " + info.Main.Path + " package " + info.Path + " with " + info.GoVersion,
		})
		doc.Relationships = append(doc.Relationships, &spdx.Relationship{
			RefA:         common.MakeDocElementID("", "DOCUMENT"),
			RefB:         common.MakeDocElementID("", string(binID)),
			Relationship: common.TypeRelationshipDescribe,
		})
		linked := []*debug.Module{{Path: "stdlib", Version: strings.TrimPrefix(info.GoVersion, "go")}}
		for _, m := range info.Deps {
			if m.Replace != nil {
				m = m.Replace
			}
			linked = append(linked, m)
		}
		for _, m := range linked {
			id := elementID("Module", m.Path+"@"+m.Version)
			if modules[id] == nil {
				modules[id] = modulePackage(id, m)
			}
			doc.Relationships = append(doc.Relationships, &spdx.Relationship{
				RefA:         common.MakeDocElementID("", string(binID)),
				RefB:         common.MakeDocElementID("", string(id)),
				Relationship: common.TypeRelationshipDependsOn,
			})
		}
	}
	ids := make([]common.ElementID, 0, len(modules))
	for id := range modules {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		doc.Packages = append(doc.Packages, modules[id])
	}
	var buf bytes.Buffer
	if err := spdxjson.Write(doc, &buf, spdxjson.Indent("  ")); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func modulePackage(id common.ElementID, m *debug.Module) *spdx.Package {
	purl := "pkg:golang/" + m.Path + "@" + m.Version
	download := "https://proxy.golang.org/" + m.Path + "/@v/" + m.Version + ".zip"
	if m.Path == "stdlib" {
		purl = "pkg:golang/stdlib@" + m.Version
		download = "https://go.dev/dl/"
	}
	return &spdx.Package{
		PackageName:             m.Path,
		PackageSPDXIdentifier:   id,
		PackageVersion:          m.Version,
		PackageDownloadLocation: download,
		PackageLicenseConcluded: "NOASSERTION",
		PackageLicenseDeclared:  "NOASSERTION",
		PackageCopyrightText:    "NOASSERTION",
		PrimaryPackagePurpose:   "LIBRARY",
		PackageExternalReferences: []*spdx.PackageExternalReference{
			{Category: common.CategoryPackageManager, RefType: common.TypePackageManagerPURL, Locator: purl},
		},
	}
}

var notIDCharacters = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// elementID is an SPDX identifier for kind and name: letters, digits, '.'
// and '-' only.
func elementID(kind, name string) common.ElementID {
	return common.ElementID(kind + "-" + strings.Trim(notIDCharacters.ReplaceAllString(name, "-"), "-"))
}

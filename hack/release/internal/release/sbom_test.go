package release

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spdx/tools-golang/spdx/v2/common"
	spdx "github.com/spdx/tools-golang/spdx/v2/v2_3"
)

var sbomOptions = SBOMOptions{Version: "1.2.3", Source: "https://example.com/src", Created: epoch}

// fakeBinary is a shipped binary with build information and a checksum
// made up from its name.
func fakeBinary(name string, p Platform, deps ...*debug.Module) Binary {
	return Binary{
		Name:     name,
		Platform: p,
		SHA256:   fmt.Sprintf("%064x", len(name)*7919),
		Info: &debug.BuildInfo{
			GoVersion: "go1.26.8",
			Path:      ModulePath + "/cmd",
			Main:      debug.Module{Path: ModulePath, Version: "(devel)"},
			Deps:      deps,
		},
	}
}

// releaseBinaries are the five binaries a release ships.
func releaseBinaries() []Binary {
	cmp := &debug.Module{Path: "github.com/google/go-cmp", Version: "v0.7.0"}
	toml := &debug.Module{Path: "github.com/BurntSushi/toml", Version: "v1.6.0"}
	return []Binary{
		fakeBinary("manager-linux-amd64", Platform{"linux", "amd64"}, cmp),
		fakeBinary("manager-linux-arm64", Platform{"linux", "arm64"}, cmp),
		fakeBinary("kubectl-dynamic-1.2.3-linux-amd64", Platform{"linux", "amd64"}, cmp, toml),
		fakeBinary("kubectl-dynamic-1.2.3-linux-arm64", Platform{"linux", "arm64"}, cmp, toml),
		fakeBinary("kubectl-dynamic-1.2.3-darwin-arm64", Platform{"darwin", "arm64"}, cmp, toml),
	}
}

// packagesByName indexes a document's packages by name.
func packagesByName(t *testing.T, doc *spdx.Document) map[string]*spdx.Package {
	t.Helper()
	out := map[string]*spdx.Package{}
	for _, p := range doc.Packages {
		if out[p.PackageName] != nil {
			t.Errorf("two packages named %s", p.PackageName)
		}
		out[p.PackageName] = p
	}
	return out
}

// TestSBOM: a valid SPDX 2.3 document describing every shipped binary with
// its SHA-256, supplier and platform, and every module they link once,
// with its purl and case-escaped download URL (the replacement where a
// module is replaced); the same bytes every time, whatever the order of
// the binaries.
func TestSBOM(t *testing.T) {
	bins := releaseBinaries()
	bins[0].Info.Deps = append(bins[0].Info.Deps, &debug.Module{Path: "example.com/replaced", Version: "v1.0.0", Replace: &debug.Module{Path: "example.com/fork", Version: "v1.0.1"}})
	data, err := SBOM(sbomOptions, bins...)
	if err != nil {
		t.Fatal(err)
	}
	reversed := slices.Clone(bins)
	slices.Reverse(reversed)
	again, err := SBOM(sbomOptions, reversed...)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, again) {
		t.Error("two SBOMs of the same binaries differ")
	}
	doc, err := ValidateSBOM(data)
	if err != nil {
		t.Fatalf("the SBOM is not valid: %v", err)
	}
	if doc.CreationInfo.Created != "2026-01-02T03:04:05Z" {
		t.Errorf("created %s", doc.CreationInfo.Created)
	}
	var shipped []ShippedFile
	for _, b := range bins {
		shipped = append(shipped, ShippedFile{Name: b.Name, SHA256: b.SHA256})
	}
	if err := CheckSBOMDescribes(doc, shipped); err != nil {
		t.Errorf("the SBOM does not describe the binaries: %v", err)
	}
	pkgs := packagesByName(t, doc)
	darwin := pkgs["kubectl-dynamic-1.2.3-darwin-arm64"]
	if darwin == nil || darwin.PackageSupplier == nil || darwin.PackageSupplier.SupplierType != "Organization" || darwin.PackageSupplier.Supplier != Supplier ||
		!strings.Contains(darwin.PackageComment, "darwin/arm64") || darwin.PackageFileName != darwin.PackageName || darwin.PackageVersion != "1.2.3" {
		t.Errorf("the darwin plugin's package %+v", darwin)
	}
	type module struct{ Purl, Download string }
	got := map[string]module{}
	for _, p := range doc.Packages {
		if p.PrimaryPackagePurpose != "LIBRARY" {
			continue
		}
		m := module{Download: p.PackageDownloadLocation}
		for _, r := range p.PackageExternalReferences {
			if r.RefType == common.TypePackageManagerPURL {
				m.Purl = r.Locator
			}
		}
		got[p.PackageName+"@"+p.PackageVersion] = m
	}
	want := map[string]module{
		"stdlib@1.26.8":                     {"pkg:golang/stdlib@1.26.8", "https://go.dev/dl/"},
		"github.com/google/go-cmp@v0.7.0":   {"pkg:golang/github.com/google/go-cmp@v0.7.0", "https://proxy.golang.org/github.com/google/go-cmp/@v/v0.7.0.zip"},
		"github.com/BurntSushi/toml@v1.6.0": {"pkg:golang/github.com/BurntSushi/toml@v1.6.0", "https://proxy.golang.org/github.com/!burnt!sushi/toml/@v/v1.6.0.zip"},
		"example.com/fork@v1.0.1":           {"pkg:golang/example.com/fork@v1.0.1", "https://proxy.golang.org/example.com/fork/@v/v1.0.1.zip"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("module packages (-want +got):\n%s", diff)
	}
	// The darwin plugin links the standard library, go-cmp and toml.
	var darwinLinks []string
	byID := map[common.ElementID]string{}
	for _, p := range doc.Packages {
		byID[p.PackageSPDXIdentifier] = p.PackageName
	}
	for _, r := range doc.Relationships {
		if r.RefA.ElementRefID == darwin.PackageSPDXIdentifier && r.Relationship == common.TypeRelationshipDependsOn {
			darwinLinks = append(darwinLinks, byID[r.RefB.ElementRefID])
		}
	}
	slices.Sort(darwinLinks)
	if diff := cmp.Diff([]string{"github.com/BurntSushi/toml", "github.com/google/go-cmp", "stdlib"}, darwinLinks); diff != "" {
		t.Errorf("what the darwin plugin depends on (-want +got):\n%s", diff)
	}
}

// TestSBOMElementIDsNeverCollide: module paths that differ only in
// characters an element ID cannot hold (the old IDs replaced them with
// '-', so one module hid the other) each get a package of their own.
func TestSBOMElementIDsNeverCollide(t *testing.T) {
	colliding := []*debug.Module{
		{Path: "example.com/a_b", Version: "v1.0.0"},
		{Path: "example.com/a-b", Version: "v1.0.0"},
		{Path: "example.com/a~b", Version: "v1.0.0"},
		{Path: "example.com/a/b", Version: "v1.0.0"},
		{Path: "example.com/a/b", Version: "v1.0.0+incompatible"},
	}
	data, err := SBOM(sbomOptions, fakeBinary("manager-linux-amd64", Platform{"linux", "amd64"}, colliding...))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := ValidateSBOM(data)
	if err != nil {
		t.Fatalf("the SBOM is not valid: %v", err)
	}
	names := map[common.ElementID]string{}
	for _, p := range doc.Packages {
		if other, ok := names[p.PackageSPDXIdentifier]; ok {
			t.Errorf("%s and %s share the element ID %s", other, p.PackageName, p.PackageSPDXIdentifier)
		}
		names[p.PackageSPDXIdentifier] = p.PackageName + "@" + p.PackageVersion
	}
	for _, m := range colliding {
		if !slices.Contains(slices.Collect(maps.Values(names)), m.Path+"@"+m.Version) {
			t.Errorf("no package for %s@%s", m.Path, m.Version)
		}
	}
	if len(names) != 1+1+len(colliding) { // the binary, stdlib, the modules
		t.Errorf("%d packages, want %d: %v", len(names), 2+len(colliding), names)
	}
}

// TestModuleDownloadURL: the module proxy's URLs case-escape paths and
// versions ('!' before a lower-cased capital).
func TestModuleDownloadURL(t *testing.T) {
	for _, tc := range []struct{ path, version, want string }{
		{"github.com/google/go-cmp", "v0.7.0", "https://proxy.golang.org/github.com/google/go-cmp/@v/v0.7.0.zip"},
		{"github.com/BurntSushi/toml", "v1.6.0", "https://proxy.golang.org/github.com/!burnt!sushi/toml/@v/v1.6.0.zip"},
		{"github.com/Azure/go-ansiterm", "v0.0.0-20250102033503-faa5f7b0171c", "https://proxy.golang.org/github.com/!azure/go-ansiterm/@v/v0.0.0-20250102033503-faa5f7b0171c.zip"},
		{"example.com/m", "v1.0.0-RC1", "https://proxy.golang.org/example.com/m/@v/v1.0.0-!r!c1.zip"},
		{"gopkg.in/inf.v0", "v0.9.1", "https://proxy.golang.org/gopkg.in/inf.v0/@v/v0.9.1.zip"},
	} {
		got, err := ModuleDownloadURL(tc.path, tc.version)
		if err != nil || got != tc.want {
			t.Errorf("ModuleDownloadURL(%q, %q) = %q, %v; want %q", tc.path, tc.version, got, err, tc.want)
		}
	}
	if _, err := ModuleDownloadURL("example.com/a b", "v1.0.0"); err == nil {
		t.Error("a path with a space: no error")
	}
}

// TestValidateSBOMRefuses breaks a valid SBOM one way at a time: the
// validator names each.
func TestValidateSBOMRefuses(t *testing.T) {
	valid, err := SBOM(sbomOptions, releaseBinaries()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		edit    func(doc map[string]any)
		wantErr string
	}{
		{"a duplicate element ID", func(doc map[string]any) {
			pkgs := doc["packages"].([]any)
			pkgs[1].(map[string]any)["SPDXID"] = pkgs[0].(map[string]any)["SPDXID"]
		}, "is not unique"},
		{"a relationship to nothing", func(doc map[string]any) {
			doc["relationships"].([]any)[0].(map[string]any)["relatedSpdxElement"] = "SPDXRef-Nothing"
		}, "Nothing used in relationship but no such package exists"},
		{"an ID with an underscore", func(doc map[string]any) {
			pkg(doc, 0)["SPDXID"] = "SPDXRef-a_b"
		}, "holds a character"},
		{"a short checksum", func(doc map[string]any) {
			pkg(doc, 0)["checksums"] = []any{map[string]any{"algorithm": "SHA256", "checksumValue": "abc"}}
		}, "not 64 lowercase hex digits"},
		{"a license that is no expression", func(doc map[string]any) {
			pkg(doc, 0)["licenseDeclared"] = "Apache 2"
		}, "licenseDeclared"},
		{"files analysed without files", func(doc map[string]any) {
			delete(pkg(doc, 0), "filesAnalyzed")
		}, "filesAnalyzed"},
		{"a supplier without a type", func(doc map[string]any) {
			pkg(doc, 0)["supplier"] = "Someone: x"
		}, "supplier"},
		{"no download location", func(doc map[string]any) {
			pkg(doc, 0)["downloadLocation"] = "somewhere"
		}, "downloadLocation"},
		{"a namespace with a fragment", func(doc map[string]any) {
			doc["documentNamespace"] = "https://example.com/sbom#1"
		}, "documentNamespace"},
		{"a local creation time", func(doc map[string]any) {
			doc["creationInfo"].(map[string]any)["created"] = "2026-01-02T03:04:05+01:00"
		}, "created"},
		{"SPDX 2.2", func(doc map[string]any) { doc["spdxVersion"] = "SPDX-2.2" }, "SPDX-2.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal(valid, &doc); err != nil {
				t.Fatal(err)
			}
			tc.edit(doc)
			broken, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			_, err = ValidateSBOM(broken)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ValidateSBOM: error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func pkg(doc map[string]any, i int) map[string]any {
	return doc["packages"].([]any)[i].(map[string]any)
}

// TestCheckSBOMDescribes: the SBOM must describe every shipped binary,
// with its checksum, and nothing else.
func TestCheckSBOMDescribes(t *testing.T) {
	bins := releaseBinaries()
	data, err := SBOM(sbomOptions, bins[:4]...) // not the darwin plugin
	if err != nil {
		t.Fatal(err)
	}
	doc, err := ValidateSBOM(data)
	if err != nil {
		t.Fatal(err)
	}
	var shipped []ShippedFile
	for _, b := range bins[1:] { // not the amd64 manager
		shipped = append(shipped, ShippedFile{Name: b.Name, SHA256: b.SHA256})
	}
	shipped[0].SHA256 = strings.Repeat("0", 64) // the arm64 manager changed
	err = CheckSBOMDescribes(doc, shipped)
	for _, want := range []string{
		"describes manager-linux-amd64, which the release does not ship",
		"manager-linux-arm64: the SBOM says SHA-256",
		"does not describe kubectl-dynamic-1.2.3-darwin-arm64",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckSBOMDescribes: error %v, want one containing %q", err, want)
		}
	}
}

// TestReadBinary reads a Go binary's platform, SHA-256 and modules: this
// test's own.
func TestReadBinary(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := ReadBinary(exe)
	if err != nil {
		t.Fatal(err)
	}
	f, err := FileSHA256(exe)
	if err != nil {
		t.Fatal(err)
	}
	if bin.Name != filepath.Base(exe) || bin.SHA256 != f.SHA256 || bin.Platform.OS == "" || bin.Platform.Arch == "" || bin.Info == nil {
		t.Errorf("ReadBinary(%s) = %+v", exe, bin)
	}
}

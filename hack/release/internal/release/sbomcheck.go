package release

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/github/go-spdx/v2/spdxexp"
	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdx/v2/common"
	spdx "github.com/spdx/tools-golang/spdx/v2/v2_3"
	"github.com/spdx/tools-golang/spdxlib"
)

// ValidateSBOM parses an SPDX 2.3 JSON document with spdx tools-golang's
// reader and validates it: first with tools-golang's own validation
// (spdxlib.ValidateDocument: every relationship names an element of the
// document; spdxlib.GetDescribedPackageIDs: the document describes what it
// is about), then against the clauses of the SPDX 2.3 specification that
// tools-golang does not check: the document's header (6.1-6.9), unique
// element IDs of the allowed characters (3.2, 7.2; tools-golang issue
// 222), each package's name, download location, files-analyzed and
// verification code, checksums, supplier, license expressions (through
// GitHub's go-spdx, with the SPDX license list) and copyright text (7.x).
// It returns every problem it finds, one per line.
func ValidateSBOM(data []byte) (*spdx.Document, error) {
	var header struct {
		SPDXVersion string `json:"spdxVersion"`
	}
	if err := json.Unmarshal(data, &header); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if header.SPDXVersion != spdx.Version {
		// tools-golang would read an older version and convert it.
		return nil, fmt.Errorf("spdxVersion %q, want %s", header.SPDXVersion, spdx.Version)
	}
	doc := &spdx.Document{}
	if err := spdxjson.ReadInto(bytes.NewReader(data), doc); err != nil {
		return nil, fmt.Errorf("spdx tools-golang cannot read it: %w", err)
	}
	var errs []error
	if err := spdxlib.ValidateDocument(doc); err != nil {
		errs = append(errs, fmt.Errorf("spdx tools-golang: %w", err))
	}
	if _, err := spdxlib.GetDescribedPackageIDs(doc); err != nil {
		errs = append(errs, fmt.Errorf("spdx tools-golang: %w", err))
	}
	errs = append(errs, checkHeader(doc)...)
	seen := map[common.ElementID]bool{}
	checkID := func(what string, id common.ElementID) {
		switch {
		case !elementIDPattern.MatchString(string(id)):
			errs = append(errs, fmt.Errorf("%s: element ID %q holds a character other than letters, digits, '.' and '-'", what, "SPDXRef-"+id))
		case seen[id]:
			errs = append(errs, fmt.Errorf("%s: element ID %q is not unique", what, "SPDXRef-"+id))
		}
		seen[id] = true
	}
	for _, p := range doc.Packages {
		checkID("package "+p.PackageName, p.PackageSPDXIdentifier)
		errs = append(errs, checkPackage(p)...)
	}
	for _, f := range doc.Files {
		checkID("file "+f.FileName, f.FileSPDXIdentifier)
	}
	return doc, errors.Join(errs...)
}

// elementIDPattern is what may follow SPDXRef- (SPDX 2.3, 3.2).
var elementIDPattern = regexp.MustCompile(`^[A-Za-z0-9.-]+$`)

func checkHeader(doc *spdx.Document) []error {
	var errs []error
	if doc.DataLicense != spdx.DataLicense {
		errs = append(errs, fmt.Errorf("dataLicense %q, want %s (6.2)", doc.DataLicense, spdx.DataLicense))
	}
	if doc.SPDXIdentifier != "DOCUMENT" {
		errs = append(errs, fmt.Errorf("SPDXID %q, want SPDXRef-DOCUMENT (6.3)", "SPDXRef-"+doc.SPDXIdentifier))
	}
	if doc.DocumentName == "" {
		errs = append(errs, errors.New("no document name (6.4)"))
	}
	if u, err := url.Parse(doc.DocumentNamespace); err != nil || !u.IsAbs() || strings.Contains(doc.DocumentNamespace, "#") {
		errs = append(errs, fmt.Errorf("documentNamespace %q is not an absolute URI without '#' (6.5)", doc.DocumentNamespace))
	}
	if doc.CreationInfo == nil || len(doc.CreationInfo.Creators) == 0 {
		return append(errs, errors.New("no creator (6.8)"))
	}
	for _, c := range doc.CreationInfo.Creators {
		if !slices.Contains([]string{"Person", "Organization", "Tool"}, c.CreatorType) || c.Creator == "" {
			errs = append(errs, fmt.Errorf("creator %q is not Person:, Organization: or Tool: and a name (6.8)", c.CreatorType+": "+c.Creator))
		}
	}
	if _, err := time.Parse("2006-01-02T15:04:05Z", doc.CreationInfo.Created); err != nil {
		errs = append(errs, fmt.Errorf("created %q is not YYYY-MM-DDThh:mm:ssZ (6.9)", doc.CreationInfo.Created))
	}
	return errs
}

// checksumLengths are the hex lengths of the digests SPDX 2.3 names
// (7.10) that a release would use.
var checksumLengths = map[common.ChecksumAlgorithm]int{
	common.SHA1: 40, common.SHA224: 56, common.SHA256: 64, common.SHA384: 96, common.SHA512: 128,
}

func checkPackage(p *spdx.Package) []error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("package %s: "+format, append([]any{"SPDXRef-" + p.PackageSPDXIdentifier}, args...)...))
	}
	if p.PackageName == "" {
		fail("no name (7.1)")
	}
	switch loc := p.PackageDownloadLocation; loc {
	case "NONE", "NOASSERTION":
	default:
		if u, err := url.Parse(loc); err != nil || !u.IsAbs() {
			fail("downloadLocation %q is neither NONE, NOASSERTION nor a URL (7.7)", loc)
		}
	}
	if !p.IsFilesAnalyzedTagPresent || p.FilesAnalyzed {
		// Files analysed (the default) needs the files and their
		// verification code, which a binary's package does not have.
		if p.PackageVerificationCode == nil || len(p.Files) == 0 {
			fail("filesAnalyzed is true (or absent) without files and a verification code (7.8, 7.9)")
		}
	} else if p.PackageVerificationCode != nil {
		fail("a verification code with filesAnalyzed false (7.9)")
	}
	for _, c := range p.PackageChecksums {
		want, known := checksumLengths[c.Algorithm]
		if _, err := hex.DecodeString(c.Value); !known || err != nil || len(c.Value) != want || strings.ToLower(c.Value) != c.Value {
			fail("checksum %s: %q is not %d lowercase hex digits (7.10)", c.Algorithm, c.Value, want)
		}
	}
	if s := p.PackageSupplier; s != nil && s.Supplier != "NOASSERTION" {
		if (s.SupplierType != "Person" && s.SupplierType != "Organization") || s.Supplier == "" {
			fail("supplier %q is not NOASSERTION, Person: or Organization: and a name (7.5)", s.SupplierType+": "+s.Supplier)
		}
	}
	for what, expr := range map[string]string{"licenseConcluded": p.PackageLicenseConcluded, "licenseDeclared": p.PackageLicenseDeclared} {
		if expr == "NONE" || expr == "NOASSERTION" {
			continue
		}
		if ok, invalid := spdxexp.ValidateLicenses([]string{expr}); !ok {
			fail("%s %q is not NONE, NOASSERTION or an SPDX license expression: %v (7.13, 7.15)", what, expr, invalid)
		}
	}
	if p.PackageCopyrightText == "" {
		fail("no copyrightText (7.17)")
	}
	for _, r := range p.PackageExternalReferences {
		if r.RefType == common.TypePackageManagerPURL && !strings.HasPrefix(r.Locator, "pkg:") {
			fail("purl %q does not start with pkg: (7.21)", r.Locator)
		}
	}
	return errs
}

// ShippedFile is a file a release ships, as its SBOM must describe it.
type ShippedFile struct {
	Name string
	// SHA256 is its SHA-256, in hex.
	SHA256 string
}

// FileSHA256 reads the file at path into a ShippedFile, named by its base
// name.
func FileSHA256(path string) (ShippedFile, error) {
	sum, err := fileSHA256(path)
	if err != nil {
		return ShippedFile{}, err
	}
	return ShippedFile{Name: filepath.Base(path), SHA256: sum}, nil
}

// ArchiveManagers reads the manager binary of every platform's image in
// the OCI archive (make image), named as make image builds them
// (manager-os-arch), with their SHA-256: what the image ships.
func ArchiveManagers(archive, dir string) ([]ShippedFile, error) {
	idx, err := ReadOCIArchive(archive, dir)
	if err != nil {
		return nil, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var out []ShippedFile
	for _, d := range m.Manifests {
		if d.Platform == nil {
			return nil, fmt.Errorf("%s: image %s has no platform", archive, d.Digest)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, err
		}
		layers, err := img.Layers()
		if err != nil {
			return nil, err
		}
		sum := ""
		for _, l := range layers {
			rc, err := l.Uncompressed()
			if err != nil {
				return nil, err
			}
			s, err := tarEntrySHA256(rc, ImageEntrypoint[1:])
			if err := errors.Join(err, rc.Close()); err != nil {
				return nil, err
			}
			if s != "" {
				sum = s
			}
		}
		if sum == "" {
			return nil, fmt.Errorf("%s: the %s/%s image has no %s", archive, d.Platform.OS, d.Platform.Architecture, ImageEntrypoint)
		}
		out = append(out, ShippedFile{Name: "manager-" + d.Platform.OS + "-" + d.Platform.Architecture, SHA256: sum})
	}
	return out, nil
}

// tarEntrySHA256 is the SHA-256 of the regular file name in the tar, or ""
// when it holds none.
func tarEntrySHA256(r io.Reader, name string) (string, error) {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		if h.Name != name || h.Typeflag != tar.TypeReg {
			continue
		}
		hash := sha256.New()
		if _, err := io.Copy(hash, tr); err != nil {
			return "", err
		}
		return hex.EncodeToString(hash.Sum(nil)), nil
	}
}

// CheckSBOMDescribes checks that doc describes exactly the shipped files:
// one package each, named by the file's name, with its SHA-256, a
// supplier and the modules it links (at least the standard library).
func CheckSBOMDescribes(doc *spdx.Document, shipped []ShippedFile) error {
	described, err := spdxlib.GetDescribedPackageIDs(doc)
	if err != nil {
		return err
	}
	byID := map[common.ElementID]*spdx.Package{}
	for _, p := range doc.Packages {
		byID[p.PackageSPDXIdentifier] = p
	}
	dependsOn := map[common.ElementID]int{}
	for _, r := range doc.Relationships {
		if r.Relationship == common.TypeRelationshipDependsOn {
			dependsOn[r.RefA.ElementRefID]++
		}
	}
	want := map[string]string{}
	for _, f := range shipped {
		want[f.Name] = f.SHA256
	}
	var errs []error
	got := map[string]bool{}
	for _, id := range described {
		p := byID[id]
		if p == nil {
			continue // spdxlib.ValidateDocument reports it
		}
		got[p.PackageName] = true
		sum, ok := want[p.PackageName]
		if !ok {
			errs = append(errs, fmt.Errorf("the SBOM describes %s, which the release does not ship", p.PackageName))
			continue
		}
		var sums []string
		for _, c := range p.PackageChecksums {
			if c.Algorithm == common.SHA256 {
				sums = append(sums, c.Value)
			}
		}
		if len(sums) != 1 || sums[0] != sum {
			errs = append(errs, fmt.Errorf("%s: the SBOM says SHA-256 %v, the file's is %s", p.PackageName, sums, sum))
		}
		if p.PackageSupplier == nil || p.PackageSupplier.Supplier == "NOASSERTION" {
			errs = append(errs, fmt.Errorf("%s: no supplier", p.PackageName))
		}
		if dependsOn[id] == 0 {
			errs = append(errs, fmt.Errorf("%s: no module it links", p.PackageName))
		}
	}
	for _, f := range shipped {
		if !got[f.Name] {
			errs = append(errs, fmt.Errorf("the SBOM does not describe %s", f.Name))
		}
	}
	return errors.Join(errs...)
}

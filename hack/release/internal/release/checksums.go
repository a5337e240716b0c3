package release

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// ChecksumsFile is the name of the checksum list in dist/.
const ChecksumsFile = "SHA256SUMS"

// WriteChecksums writes dir/SHA256SUMS: the SHA-256 of every other regular
// file in dir, in the order of their names, in the format `sha256sum -c` reads.
func WriteChecksums(dir string) error {
	// ReadDir sorts by name.
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var lines []string
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == ChecksumsFile {
			continue
		}
		sum, err := fileSHA256(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		lines = append(lines, fmt.Sprintf("%s  %s\n", sum, e.Name()))
	}
	return os.WriteFile(filepath.Join(dir, ChecksumsFile), []byte(strings.Join(lines, "")), 0o644)
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return fmt.Sprintf("%x", h.Sum(nil)), nil
}

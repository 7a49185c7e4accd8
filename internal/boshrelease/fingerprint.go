package boshrelease

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// fingerprint is bosh's v2 fingerprint of a job or package: the SHA-256
// (hex) of "v2", then for each file in order of its archive path that path,
// the digest of its content (of its target for a symlink it does not
// follow) and, unless excluded, its mode as git records it (100755 when
// executable, else 100644; "symlink" for a kept symlink), then the extra
// chunks (a package's dependencies) sorted and joined by commas.
func fingerprint(files []File, extra []string) (string, error) {
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b File) int { return strings.Compare(a.Rel, b.Rel) })
	var b strings.Builder
	b.WriteString("v2")
	for _, f := range sorted {
		chunk, err := fileChunk(f)
		if err != nil {
			return "", err
		}
		b.WriteString(chunk)
	}
	if len(extra) > 0 {
		b.WriteString(strings.Join(slices.Sorted(slices.Values(extra)), ","))
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:]), nil
}

func fileChunk(f File) (string, error) {
	fi, err := os.Lstat(f.Path)
	if err != nil {
		return "", err
	}
	link := fi.Mode()&os.ModeSymlink != 0
	var digest string
	switch {
	case link && !f.Follow:
		target, err := os.Readlink(f.Path)
		if err != nil {
			return "", err
		}
		digest = stringDigest(target)
	default:
		path := f.Path
		if link {
			if path, err = filepath.EvalSymlinks(f.Path); err != nil {
				return "", err
			}
		}
		if digest, err = fileDigest(path); err != nil {
			return "", err
		}
	}
	chunk := f.Rel + digest
	if !f.ExcludeMode {
		chunk += gitMode(fi, link && !f.Follow)
	}
	return chunk, nil
}

func gitMode(fi os.FileInfo, keptLink bool) string {
	switch {
	case fi.IsDir():
		return "40755"
	case keptLink:
		return "symlink"
	case fi.Mode()&0o111 != 0:
		return "100755"
	}
	return "100644"
}

// fileDigest is bosh's digest of a file: "sha256:" and the hex SHA-256.
func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("digest %s: %w", path, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

func stringDigest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

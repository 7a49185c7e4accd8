package boshrelease

import (
	"io/fs"
	"path"
	"path/filepath"
	"strings"
)

// recursiveGlob returns the paths below root (relative, slash-separated,
// sorted) that pattern matches as bosh's glob (doublestar) matches them: a
// "**" element matches any number of directories, zero included; the other
// elements are path.Match patterns, and "*" matches names starting with a
// dot too. Directories match as well as files (the caller filters). A
// missing root matches nothing.
func recursiveGlob(root, pattern string) ([]string, error) {
	if _, err := path.Match(pattern, ""); err != nil {
		return nil, err
	}
	parts := strings.Split(path.Clean(filepath.ToSlash(pattern)), "/")
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return fs.SkipAll
			}
			return err
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if match(parts, strings.Split(filepath.ToSlash(rel), "/")) {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out, err
}

// match reports whether the path elements name match the pattern elements.
func match(pattern, name []string) bool {
	if len(pattern) == 0 {
		return len(name) == 0
	}
	if pattern[0] == "**" {
		for i := 0; i <= len(name); i++ {
			if match(pattern[1:], name[i:]) {
				return true
			}
		}
		return false
	}
	if len(name) == 0 {
		return false
	}
	ok, _ := path.Match(pattern[0], name[0])
	return ok && match(pattern[1:], name[1:])
}

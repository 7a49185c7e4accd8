package boshrelease

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
)

// Verify reads the release tarball at path as the director would: its
// release.MF, and for each job and package the archive it names, whose
// digest must be the one recorded and whose files must give the recorded
// fingerprint (recomputed from the archive's own files, as bosh checks its
// staged copies). It returns the manifest.
func Verify(path string) (*Manifest, error) {
	dir, err := os.MkdirTemp("", "bosh-release-verify")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := untar(path, dir); err != nil {
		return nil, err
	}
	var m Manifest
	if err := readYAML(filepath.Join(dir, "release.MF"), &m); err != nil {
		return nil, err
	}
	for _, j := range m.Jobs {
		if err := verifyArchive(filepath.Join(dir, "jobs", j.Name+".tgz"), j.SHA1, j.Fingerprint, nil, ""); err != nil {
			return nil, fmt.Errorf("job '%s': %w", j.Name, err)
		}
	}
	for _, p := range m.Packages {
		if err := verifyArchive(filepath.Join(dir, "packages", p.Name+".tgz"), p.SHA1, p.Fingerprint, p.Dependencies, "packaging"); err != nil {
			return nil, fmt.Errorf("package '%s': %w", p.Name, err)
		}
	}
	return &m, nil
}

func verifyArchive(archive, digest, fp string, extra []string, modeless string) error {
	got, err := fileDigest(archive)
	if err != nil {
		return err
	}
	if got != digest {
		return fmt.Errorf("archive digest %s, release.MF says %s", got, digest)
	}
	dir, err := os.MkdirTemp("", "bosh-archive-verify")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := untar(archive, dir); err != nil {
		return err
	}
	var files []File
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		files = append(files, File{Path: p, Rel: rel, ExcludeMode: rel == modeless})
		return nil
	})
	if err != nil {
		return err
	}
	if got, err := fingerprint(files, extra); err != nil || got != fp {
		return fmt.Errorf("files give fingerprint %s (%v), release.MF says %s", got, err, fp)
	}
	return nil
}

func untar(archive, dir string) error {
	if out, err := exec.Command("tar", "-xzf", archive, "-C", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("extract %s: %w: %s", archive, err, out)
	}
	return nil
}

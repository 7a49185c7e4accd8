package boshrelease

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

// Meta is what a release tarball records besides its jobs and packages.
type Meta struct {
	Name, Version      string
	CommitHash         string // git rev-parse --short HEAD
	UncommittedChanges bool
}

// Manifest is release.MF, with bosh's keys in bosh's order.
type Manifest struct {
	Name               string       `yaml:"name"`
	Version            string       `yaml:"version"`
	CommitHash         string       `yaml:"commit_hash"`
	UncommittedChanges bool         `yaml:"uncommitted_changes"`
	Jobs               []JobRef     `yaml:"jobs,omitempty"`
	Packages           []PackageRef `yaml:"packages,omitempty"`
	NoCompression      bool         `yaml:"no_compression"`
}

// JobRef is a job's entry in release.MF. Version is the fingerprint, as
// bosh writes it; SHA1 holds the archive's digest ("sha256:HEX").
type JobRef struct {
	Name        string   `yaml:"name"`
	Version     string   `yaml:"version"`
	Fingerprint string   `yaml:"fingerprint"`
	SHA1        string   `yaml:"sha1"`
	Packages    []string `yaml:"packages"`
}

// PackageRef is a package's entry in release.MF.
type PackageRef struct {
	Name         string   `yaml:"name"`
	Version      string   `yaml:"version"`
	Fingerprint  string   `yaml:"fingerprint"`
	SHA1         string   `yaml:"sha1"`
	Dependencies []string `yaml:"dependencies"`
}

// Write builds every job and package archive and the release tarball at
// path: a gzipped tar of release.MF, jobs/NAME.tgz and packages/NAME.tgz.
// It returns the manifest it wrote.
func Write(r *Release, m Meta, path string) (*Manifest, error) {
	stage, err := os.MkdirTemp("", "bosh-release")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(stage)
	man := &Manifest{Name: m.Name, Version: m.Version, CommitHash: m.CommitHash, UncommittedChanges: m.UncommittedChanges}
	var entries []string
	if len(r.Jobs) > 0 {
		entries = append(entries, "jobs")
	}
	for _, j := range r.Jobs {
		digest, err := buildArchive(j.Files, j.Fingerprint, nil, filepath.Join(stage, "jobs", j.Name+".tgz"))
		if err != nil {
			return nil, fmt.Errorf("job '%s': %w", j.Name, err)
		}
		man.Jobs = append(man.Jobs, JobRef{Name: j.Name, Version: j.Fingerprint, Fingerprint: j.Fingerprint, SHA1: digest, Packages: j.Packages})
	}
	if len(r.Packages) > 0 {
		entries = append(entries, "packages")
	}
	for _, p := range r.Packages {
		digest, err := buildArchive(p.Files, p.Fingerprint, p.Dependencies, filepath.Join(stage, "packages", p.Name+".tgz"))
		if err != nil {
			return nil, fmt.Errorf("package '%s': %w", p.Name, err)
		}
		man.Packages = append(man.Packages, PackageRef{Name: p.Name, Version: p.Fingerprint, Fingerprint: p.Fingerprint, SHA1: digest, Dependencies: p.Dependencies})
	}
	mf, err := MarshalManifest(man)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(stage, "release.MF"), mf, 0o644); err != nil {
		return nil, err
	}
	if err := tarGz(stage, append([]string{"release.MF"}, entries...), path); err != nil {
		return nil, err
	}
	return man, nil
}

// MarshalManifest renders release.MF as the bosh CLI does (yaml.v2: two
// spaces, sequences not indented below their key).
func MarshalManifest(m *Manifest) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	enc.CompactSeqIndent()
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("render release.MF: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// buildArchive copies files into a staging directory as bosh does, checks
// that the copies have the fingerprint, archives the directory to dst and
// returns the archive's digest.
func buildArchive(files []File, want string, extra []string, dst string) (string, error) {
	stage, err := os.MkdirTemp("", "bosh-resource-archive")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(stage)
	staged := make([]File, len(files))
	for i, f := range files {
		if err := stageFile(f, stage); err != nil {
			return "", err
		}
		staged[i] = File{Path: filepath.Join(stage, filepath.FromSlash(f.Rel)), Rel: f.Rel, ExcludeMode: f.ExcludeMode, Follow: f.Follow}
	}
	got, err := fingerprint(staged, extra)
	if err != nil {
		return "", err
	}
	if got != want {
		return "", fmt.Errorf("Expected source ('%s') and staging ('%s') fingerprints to match", want, got)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	if err := tarGz(stage, []string{"."}, dst); err != nil {
		return "", err
	}
	// bosh's archives are temporary files (0600) copied as they are.
	if err := os.Chmod(dst, 0o600); err != nil {
		return "", err
	}
	return fileDigest(dst)
}

// stageFile copies f into stage at its archive path, as bosh's archive
// does: its directory gets the mode of the source's directory, the file
// 0755 when the source is executable, else 0644; a symlink is followed for
// jobs and recreated for packages.
func stageFile(f File, stage string) error {
	dst := filepath.Join(stage, filepath.FromSlash(f.Rel))
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	srcDir, err := os.Lstat(filepath.Dir(f.Path))
	if err == nil && srcDir.Mode()&os.ModeSymlink != 0 && f.Follow {
		srcDir, err = os.Stat(filepath.Dir(f.Path))
	}
	if err != nil {
		return err
	}
	if err := os.Chmod(dir, srcDir.Mode().Perm()); err != nil {
		return err
	}
	fi, err := os.Lstat(f.Path)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 && !f.Follow {
		target, err := os.Readlink(f.Path)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	}
	if err := copyFile(f.Path, dst); err != nil {
		return err
	}
	perm := os.FileMode(0o644)
	if fi.Mode()|0o100 == fi.Mode() { // bosh looks at the owner's execute bit of what it stats
		perm = 0o755
	}
	return os.Chmod(dst, perm)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// tarGz archives names inside dir into dst exactly as bosh does, with
// "tar -cf DST -C DIR -z NAMES...".
func tarGz(dir string, names []string, dst string) error {
	args := append([]string{"-cf", dst, "-C", dir, "-z"}, names...)
	out, err := exec.Command("tar", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("tar %v: %w: %s", args, err, out)
	}
	return nil
}

// Digest is bosh's digest of a file, "sha256:HEX".
func Digest(path string) (string, error) { return fileDigest(path) }

// Package boshrelease builds a BOSH release tarball from a release
// directory (jobs/, packages/, src/, blobs/, config/final.yml) the way the
// bosh CLI's create-release --tarball does (cloudfoundry/bosh-cli v7,
// packages release, release/job, release/pkg, release/resource): the same
// file selection for each job and package, the same fingerprints (v2,
// SHA-256), the same archive layout (GNU tar, gzip, entries under "./"),
// the same release.MF. It needs no bosh CLI: only tar and gzip.
//
// What it does not do: blobstores (blobs are read from blobs/ as they are),
// final releases and their indices, pre_packaging scripts, licenses and
// compiled packages. A release directory that needs them is refused.
package boshrelease

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Release is a release directory read as bosh create-release reads it.
type Release struct {
	Dir      string
	Jobs     []*Job     // by name
	Packages []*Package // by name
}

// Job is one jobs/NAME directory.
type Job struct {
	Name        string
	Packages    []string // as the spec lists them
	Files       []File   // job.MF (the spec), monit, templates/SRC
	Fingerprint string
}

// Package is one packages/NAME directory.
type Package struct {
	Name         string
	Dependencies []string // as the spec lists them
	Files        []File   // packaging, then the spec's files from src/ or blobs/
	Fingerprint  string
}

// File is a file of a job or package: where it is, and where it goes in
// the archive (relative, slash-separated).
type File struct {
	Path        string
	Rel         string
	ExcludeMode bool // its mode is not part of the fingerprint (packaging)
	Follow      bool // a symlink is read through (jobs), not kept (packages)
}

type jobSpec struct {
	Name      string            `yaml:"name"`
	Templates map[string]string `yaml:"templates"`
	Packages  []string          `yaml:"packages"`
}

type packageSpec struct {
	Name          string   `yaml:"name"`
	Dependencies  []string `yaml:"dependencies"`
	Files         []string `yaml:"files"`
	ExcludedFiles []string `yaml:"excluded_files"`
}

// Read reads the release directory dir, computing every fingerprint.
func Read(dir string) (*Release, error) {
	r := &Release{Dir: dir}
	if _, err := os.Stat(filepath.Join(dir, "packages")); err == nil {
		if err := r.readPackages(); err != nil {
			return nil, err
		}
	}
	if err := r.readJobs(); err != nil {
		return nil, err
	}
	for _, name := range []string{"LICENSE", "NOTICE"} {
		if m, _ := filepath.Glob(filepath.Join(dir, name+"*")); len(m) > 0 {
			return nil, fmt.Errorf("%s: licenses are not supported", m[0])
		}
	}
	return r, nil
}

func (r *Release) readJobs() error {
	dirs, err := subdirs(filepath.Join(r.Dir, "jobs"))
	if err != nil {
		return err
	}
	for _, d := range dirs {
		var spec jobSpec
		if err := readYAML(filepath.Join(d, "spec"), &spec); err != nil {
			return err
		}
		if spec.Name != filepath.Base(d) {
			return fmt.Errorf("job directory '%s' does not match job name '%s' in spec", filepath.Base(d), spec.Name)
		}
		j := &Job{Name: spec.Name, Packages: spec.Packages}
		j.Files = append(j.Files, File{Path: filepath.Join(d, "spec"), Rel: "job.MF", Follow: true})
		for _, extra := range []string{"monit", "properties_schema.json"} {
			if _, err := os.Stat(filepath.Join(d, extra)); err == nil {
				j.Files = append(j.Files, File{Path: filepath.Join(d, extra), Rel: extra, Follow: true})
			}
		}
		for src := range spec.Templates {
			j.Files = append(j.Files, File{Path: filepath.Join(d, "templates", src), Rel: "templates/" + src, Follow: true})
		}
		for _, p := range spec.Packages {
			if r.pkg(p) == nil {
				return fmt.Errorf("job '%s': package '%s' is not in the release", j.Name, p)
			}
		}
		if j.Fingerprint, err = fingerprint(j.Files, nil); err != nil {
			return fmt.Errorf("job '%s': %w", j.Name, err)
		}
		r.Jobs = append(r.Jobs, j)
	}
	slices.SortFunc(r.Jobs, func(a, b *Job) int { return strings.Compare(a.Name, b.Name) })
	return nil
}

func (r *Release) readPackages() error {
	dirs, err := subdirs(filepath.Join(r.Dir, "packages"))
	if err != nil {
		return err
	}
	for _, d := range dirs {
		p, err := r.readPackage(d)
		if err != nil {
			return err
		}
		r.Packages = append(r.Packages, p)
	}
	for _, p := range r.Packages {
		for _, dep := range p.Dependencies {
			if r.pkg(dep) == nil {
				return fmt.Errorf("Expected to find package '%s' since it's a dependency of package '%s'", dep, p.Name)
			}
		}
	}
	slices.SortFunc(r.Packages, func(a, b *Package) int { return strings.Compare(a.Name, b.Name) })
	return nil
}

func (r *Release) readPackage(d string) (*Package, error) {
	var spec packageSpec
	if err := readYAML(filepath.Join(d, "spec"), &spec); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(d, "spec.lock")); err == nil {
		return nil, fmt.Errorf("package '%s': vendored packages (spec.lock) are not supported", spec.Name)
	}
	if _, err := os.Stat(filepath.Join(d, "pre_packaging")); err == nil {
		return nil, fmt.Errorf("package '%s': pre_packaging is not supported", spec.Name)
	}
	if _, err := os.Stat(filepath.Join(d, "packaging")); err != nil {
		return nil, fmt.Errorf("Expected to find '%s' for package '%s'", filepath.Join(d, "packaging"), spec.Name)
	}
	p := &Package{Name: spec.Name, Dependencies: spec.Dependencies}
	files, err := r.specFiles(spec)
	if err != nil {
		return nil, fmt.Errorf("package '%s': %w", spec.Name, err)
	}
	if _, ok := files["packaging"]; ok {
		return nil, fmt.Errorf("Expected special 'packaging' file to not be included via 'files' key for package '%s'", spec.Name)
	}
	p.Files = append(p.Files, File{Path: filepath.Join(d, "packaging"), Rel: "packaging", ExcludeMode: true})
	for _, rel := range slices.Sorted(maps.Keys(files)) {
		p.Files = append(p.Files, files[rel])
	}
	if p.Fingerprint, err = fingerprint(p.Files, p.Dependencies); err != nil {
		return nil, fmt.Errorf("package '%s': %w", p.Name, err)
	}
	return p, nil
}

// specFiles resolves a package spec's files and excluded_files in src/,
// then blobs/: a path found in src/ wins. Every pattern must match a file.
func (r *Release) specFiles(spec packageSpec) (map[string]File, error) {
	files := map[string]File{}
	for _, pattern := range spec.Files {
		found := false
		for _, base := range []string{"src", "blobs"} {
			root := filepath.Join(r.Dir, base)
			matches, err := recursiveGlob(root, pattern)
			if err != nil {
				return nil, err
			}
			for _, rel := range matches {
				ok, err := packageable(root, rel)
				if err != nil {
					return nil, err
				}
				if !ok {
					continue
				}
				found = true
				if _, dup := files[rel]; !dup {
					files[rel] = File{Path: filepath.Join(root, rel), Rel: rel}
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("Missing files for pattern '%s'", pattern)
		}
	}
	for _, pattern := range spec.ExcludedFiles {
		for _, base := range []string{"src", "blobs"} {
			matches, err := recursiveGlob(filepath.Join(r.Dir, base), pattern)
			if err != nil {
				return nil, err
			}
			for _, rel := range matches {
				delete(files, rel)
			}
		}
	}
	return files, nil
}

// packageable is bosh's test of a match: not a directory, and, unless it
// is a symlink itself, reached without going through one.
func packageable(root, rel string) (bool, error) {
	path := filepath.Join(root, rel)
	fi, err := os.Lstat(path)
	if err != nil {
		return false, err
	}
	if fi.IsDir() {
		return false, nil
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return true, nil
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return false, err
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false, err
	}
	realRel, err := filepath.Rel(realRoot, real)
	return err == nil && realRel == rel, err
}

func (r *Release) pkg(name string) *Package {
	for _, p := range r.Packages {
		if p.Name == name {
			return p
		}
	}
	return nil
}

func subdirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var out []string
	for _, e := range entries {
		if fi, err := os.Stat(filepath.Join(dir, e.Name())); err == nil && fi.IsDir() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}

func readYAML(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	return nil
}

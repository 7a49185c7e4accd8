package boshrelease

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMatchesTheBoshCLI: the fixture release gives the bosh CLI's
// release.MF (fingerprints, order, formatting) and the same entries, modes
// included, in every archive; each archive's recorded digest is its own.
// testdata/bosh-cli-*.txt and .MF were written by the real bosh CLI.
func TestMatchesTheBoshCLI(t *testing.T) {
	dir := fixture(t)
	r, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "fixture.tgz")
	man, err := Write(r, Meta{Name: "fixture", Version: "1.2.3", CommitHash: "c657dd2"}, out)
	if err != nil {
		t.Fatal(err)
	}
	mf, err := MarshalManifest(man)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := withoutDigests(string(mf)), golden(t, "bosh-cli-release.MF"); got != want {
		t.Fatalf("release.MF:\n%s\nthe bosh CLI's:\n%s", got, want)
	}
	entries := readTarball(t, out)
	if got := entries["release.MF"].body; got != string(mf) {
		t.Fatalf("the tarball's release.MF:\n%s", got)
	}
	var listing []string
	for _, name := range []string{"jobs/errand.tgz", "jobs/web.tgz", "packages/app.tgz", "packages/runtime.tgz"} {
		listing = append(listing, "== "+name)
		inner := filepath.Join(t.TempDir(), "a.tgz")
		os.WriteFile(inner, []byte(entries[name].body), 0o600)
		for _, e := range sortedEntries(readTarball(t, inner)) {
			listing = append(listing, e)
		}
		digest, _ := Digest(inner)
		if !strings.Contains(string(mf), "sha1: "+digest+"\n") {
			t.Errorf("%s: its digest %s is not in release.MF", name, digest)
		}
	}
	listing = append(listing, "== (release tarball)")
	outer := sortedEntries(entries)
	want := strings.Split(golden(t, "bosh-cli-archives.txt"), "\n")
	i := slices.Index(want, "== (release tarball)")
	slices.SortFunc(want[i+1:], func(a, b string) int { // the outer order is the file system's
		return strings.Compare(a[strings.Index(a, " "):], b[strings.Index(b, " "):])
	})
	if got := strings.Join(append(listing, outer...), "\n"); got != strings.Join(want, "\n") {
		t.Fatalf("archive entries:\n%s\nthe bosh CLI's:\n%s", got, strings.Join(want, "\n"))
	}
}

// TestRefusesWhatItDoesNotBuild: the bosh CLI's errors for a missing file
// pattern and a dependency that is not there, and a clear refusal of what
// this writer does not do.
func TestRefusesWhatItDoesNotBuild(t *testing.T) {
	for name, c := range map[string]struct {
		file, content, want string
	}{
		"missing files": {"packages/app/spec", "---\nname: app\nfiles:\n- nothere/*\n", "Missing files for pattern 'nothere/*'"},
		"missing dependency": {"packages/app/spec", "---\nname: app\ndependencies: [ghost]\nfiles:\n- app/**/*\n",
			"Expected to find package 'ghost' since it's a dependency of package 'app'"},
		"job name":      {"jobs/web/spec", "---\nname: other\n", "Job directory 'web' does not match job name 'other' in spec"},
		"pre_packaging": {"packages/app/pre_packaging", "true\n", "pre_packaging is not supported"},
		"license":       {"LICENSE", "MIT\n", "licenses are not supported"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := fixture(t)
			if err := os.WriteFile(filepath.Join(dir, c.file), []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := Read(dir); err == nil || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(c.want)) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

func TestRecursiveGlob(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"a/b/c.go", "a/.h/d.go", "a/e.txt", "x.go"} {
		os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o755)
		os.WriteFile(filepath.Join(root, f), nil, 0o644)
	}
	for pattern, want := range map[string]string{
		"a/**/*.go": "a/.h/d.go a/b/c.go",
		"**/*.go":   "a/.h/d.go a/b/c.go x.go",
		"a/*":       "a/.h a/b a/e.txt",
		"a/**/*":    "a/.h a/.h/d.go a/b a/b/c.go a/e.txt",
		"none/**":   "",
	} {
		got, err := recursiveGlob(root, pattern)
		if err != nil || strings.Join(got, " ") != want {
			t.Errorf("%s: %v %v, want %q", pattern, got, err, want)
		}
	}
}

// fixture copies testdata/release into a temporary directory with the
// modes a checkout has (git keeps only the execute bits), whatever the
// umask.
func fixture(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "release")
	err := filepath.Walk("testdata/release", func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, strings.TrimPrefix(p, "testdata/release"))
		if fi.IsDir() {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
			return os.Chmod(dst, 0o755) // whatever the umask
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if fi.Mode()&0o100 != 0 {
			mode = 0o755
		}
		if err := os.WriteFile(dst, b, mode); err != nil {
			return err
		}
		return os.Chmod(dst, mode)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func golden(t *testing.T, name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !strings.HasPrefix(l, "#") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func withoutDigests(mf string) string {
	var keep []string
	for _, l := range strings.Split(strings.TrimSpace(mf), "\n") {
		if !strings.HasPrefix(l, "  sha1: ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

type entry struct {
	mode os.FileMode
	body string
}

func readTarball(t *testing.T, path string) map[string]entry {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]entry{}
	tr := tar.NewReader(z)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out[h.Name] = entry{mode: h.FileInfo().Mode(), body: string(b)}
	}
}

// sortedEntries lists "MODE NAME" as tar -tv shows them, by name.
func sortedEntries(entries map[string]entry) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		out = append(out, fmt.Sprintf("%s %s", lsMode(entries[name].mode), name))
	}
	return out
}

func lsMode(m os.FileMode) string {
	s := []byte(m.Perm().String()) // -rwxr-xr-x
	if m.IsDir() {
		s[0] = 'd'
	}
	return string(s)
}

// TestVerify: a tarball this package wrote verifies, one whose archive was
// changed does not.
func TestVerify(t *testing.T) {
	r, err := Read(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "fixture.tgz")
	if _, err := Write(r, Meta{Name: "fixture", Version: "1"}, out); err != nil {
		t.Fatal(err)
	}
	if m, err := Verify(out); err != nil || len(m.Jobs) != 2 || len(m.Packages) != 2 {
		t.Fatalf("%+v %v", m, err)
	}
	// The same tarball with release.MF naming another fingerprint.
	dir := t.TempDir()
	if err := untar(out, dir); err != nil {
		t.Fatal(err)
	}
	mf, _ := os.ReadFile(filepath.Join(dir, "release.MF"))
	os.WriteFile(filepath.Join(dir, "release.MF"), []byte(strings.Replace(string(mf), r.Packages[0].Fingerprint, strings.Repeat("0", 64), -1)), 0o644)
	bad := filepath.Join(t.TempDir(), "bad.tgz")
	if err := tarGz(dir, []string{"release.MF", "jobs", "packages"}, bad); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(bad); err == nil || !strings.Contains(err.Error(), "fingerprint") {
		t.Fatalf("a wrong fingerprint verified: %v", err)
	}
}

package release_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-bosh/vigil/internal/boshrelease"
)

// TestTarballBuildsVigil: scripts/create-release writes a release tarball
// that reads back as BOSH's format (each archive's digest and fingerprint
// as release.MF records them; the jobs and packages this release has),
// and its packages compile as a BOSH compilation VM compiles them: each
// packaging script in a clean directory of its own, with BOSH's variables
// and PATH only, golang-1-linux first. The vigil it builds is bpm and
// monit, and reports the release's version.
func TestTarballBuildsVigil(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release with a Go toolchain and compiles vigil from nothing (minutes)")
	}
	dir := t.TempDir()
	tarball := filepath.Join(dir, "vigil.tgz")
	cmd := exec.Command("scripts/create-release", "--version", "0+dev.7", "--tarball", tarball)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("create-release: %v\n%s", err, out)
	}
	m, err := boshrelease.Verify(tarball)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, j := range m.Jobs {
		names = append(names, "job "+j.Name+" "+strings.Join(j.Packages, ","))
	}
	for _, p := range m.Packages {
		names = append(names, "package "+p.Name+" "+strings.Join(p.Dependencies, ","))
	}
	want := []string{"job bpm vigil", "job vigil vigil", "package golang-1-linux ", "package vigil golang-1-linux"}
	if m.Name != "vigil" || m.Version != "0+dev.7" || !slices.Equal(names, want) {
		t.Fatalf("release %s/%s: %q", m.Name, m.Version, names)
	}
	x := filepath.Join(dir, "x")
	untar(t, tarball, x)
	src := filepath.Join(dir, "compile")
	for _, p := range []string{"golang-1-linux", "vigil"} {
		untar(t, filepath.Join(x, "packages", p+".tgz"), filepath.Join(src, p))
	}
	if files := listFiles(t, filepath.Join(src, "vigil")); !slices.Contains(files, "vigil/vendor/modules.txt") ||
		!slices.Contains(files, "vigil/VERSION") || slices.ContainsFunc(files, func(f string) bool { return strings.HasSuffix(f, "_test.go") }) {
		t.Fatalf("the vigil package's files: vendored modules, VERSION and no tests expected; %d files", len(files))
	}
	pkgs := filepath.Join(dir, "packages")
	for _, p := range []string{"golang-1-linux", "vigil"} {
		install := filepath.Join(pkgs, p)
		os.MkdirAll(install, 0o755)
		build := exec.Command("bash", "-x", "packaging")
		build.Dir = filepath.Join(src, p)
		build.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "BOSH_COMPILE_TARGET=" + build.Dir,
			"BOSH_INSTALL_TARGET=" + install, "BOSH_PACKAGES_DIR=" + pkgs, "BOSH_PACKAGE_NAME=" + p}
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("compile %s: %v\n%s", p, err, tail(out))
		}
	}
	bin := filepath.Join(pkgs, "vigil", "bin")
	for cmd, want := range map[string]string{
		"vigil version":      "vigil 0-dev.7\n",
		"bpm --version":      "1.4.38+vigil.0-dev.7\n",
		"monit -V | head -1": "This is Monit version 5.2.5\n",
	} {
		run := exec.Command("sh", "-c", cmd)
		run.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
		if out, err := run.Output(); err != nil || string(out) != want {
			t.Errorf("%s: %q %v, want %q", cmd, out, err, want)
		}
	}
	// The stemcell's units, for the vigil job's pre-start, as in the source.
	for _, u := range []string{"vigil.service", "monit.service"} {
		got, err := os.ReadFile(filepath.Join(pkgs, "vigil", "stemcell", u))
		want, _ := os.ReadFile(filepath.Join("..", "internal", "stemcell", u))
		if err != nil || len(want) == 0 || string(got) != string(want) {
			t.Errorf("the package's stemcell/%s: %v\n%s", u, err, got)
		}
	}
}

func untar(t *testing.T, archive, dir string) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	if out, err := exec.Command("tar", "-xzf", archive, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("extract %s: %v %s", archive, err, out)
	}
}

func listFiles(t *testing.T, dir string) []string {
	var out []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

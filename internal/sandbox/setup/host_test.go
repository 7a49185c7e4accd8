package setup

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vigil-bosh/vigil/boshpath"
)

// TestHandOverRefusesPlantedLinks: a volume the job's user replaced by a
// symlink (itself, or a directory on its path) is refused before anything
// is created, chmodded or chowned through it; a real missing volume is
// created 0700 and handed over.
func TestHandOverRefusesPlantedLinks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creating symlinks of another owner and chowning need root")
	}
	const job = 65534
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	data := filepath.Join(dir, "data", "job")
	for _, d := range []string{victim, data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"vol", "link"} {
		p := filepath.Join(data, name)
		if err := os.Symlink(victim, p); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(p, job, job); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range []string{filepath.Join(data, "vol"), filepath.Join(data, "link", "new", "deeper")} {
		err := handOver(path, job, job)
		if err == nil || !strings.Contains(err.Error(), "owned by uid 65534: not followed") {
			t.Fatalf("volume %s: %v", path, err)
		}
		if share(path) == nil {
			t.Fatalf("shared volume %s through a planted link accepted", path)
		}
	}
	if fi, err := os.Stat(victim); err != nil || fi.Mode().Perm() != 0o755 || statOwner(t, victim) != 0 {
		t.Fatalf("victim changed: %v %v", fi, err)
	}
	if entries, _ := os.ReadDir(victim); len(entries) != 0 {
		t.Fatalf("created through the link: %v", entries)
	}

	fresh := filepath.Join(data, "fresh", "sub")
	if err := handOver(fresh, job, job); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(fresh); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 || statOwner(t, fresh) != job {
		t.Fatalf("fresh volume %v %v", fi, err)
	}
}

func statOwner(t *testing.T, path string) int {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return int(fi.Sys().(*syscall.Stat_t).Uid)
}

// TestReachable: under isolation: host, the directories between the BOSH
// root and the job's own get search permission for group and others, and
// nothing else (the root itself and the job's directories are left as
// they are); a level a job's user replaced by a symlink is refused, never
// followed.
func TestReachable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chowning a planted link needs root")
	}
	root := t.TempDir()
	l, err := boshpath.New(root)
	if err != nil {
		t.Fatal(err)
	}
	tmp := l.TmpDir("job")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := reachable(l, []string{tmp}); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]os.FileMode{root: 0o700, filepath.Join(root, "data"): 0o711,
		l.DataDir("job"): 0o711, tmp: 0o700} {
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %o", dir, fi.Mode().Perm(), err, want)
		}
	}
	victim := t.TempDir()
	if err := os.Chmod(victim, 0o700); err != nil {
		t.Fatal(err)
	}
	planted := l.DataDir("other")
	if err := os.Symlink(victim, planted); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(planted, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := reachable(l, []string{filepath.Join(planted, "tmp")}); err == nil {
		t.Fatal("a level planted as a link was followed")
	}
	if fi, _ := os.Stat(victim); fi.Mode().Perm() != 0o700 {
		t.Errorf("the link's target became %o", fi.Mode().Perm())
	}
}

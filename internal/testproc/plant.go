package testproc

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// victimText is what a planted symlink's victim holds.
const victimText = "victim: must stay as it is\n"

// PlantSymlink puts a symlink at path, as a job running as an unprivileged
// user could in a directory it owns, pointing at a victim file outside:
// an existing file (mode 0600) or, with dangling, a path where nothing is.
// The returned check fails t if anything went through the link: the
// victim's content or mode changed, or the dangling target was created.
func PlantSymlink(t testing.TB, path string, dangling bool) (check func()) {
	t.Helper()
	victim := filepath.Join(t.TempDir(), "victim")
	if !dangling {
		if err := os.WriteFile(victim, []byte(victimText), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		fi, err := os.Lstat(victim)
		if dangling {
			if err == nil {
				t.Errorf("the symlink at %s was followed: %s was created", path, victim)
			}
			return
		}
		b, rerr := os.ReadFile(victim)
		if err != nil || rerr != nil || string(b) != victimText || fi.Mode() != 0o600 {
			t.Errorf("the symlink at %s was followed: victim now %v %q (%v %v)", path, fi.Mode(), b, err, rerr)
		}
	}
}

// PlantFIFO puts a FIFO at path, as a job could in a directory it owns, to
// make a blocking open of the path hang. At the end of the test it opens
// the FIFO from the other side, so an open that did block (the defect
// under test) is released instead of holding the test binary.
func PlantFIFO(t testing.TB, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(path, 0o666); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if f, err := os.OpenFile(path, os.O_RDWR|unix.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
}

// Within runs f and fails t if it has not returned within Guard: for
// calls that must never block on what a job planted.
func Within(t testing.TB, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	guard := time.NewTimer(Guard)
	defer guard.Stop()
	select {
	case <-done:
	case <-guard.C:
		t.Fatalf("%s still blocked after %s", what, Guard)
	}
}

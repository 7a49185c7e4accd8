package testproc

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
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

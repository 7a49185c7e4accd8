package monitext

import (
	"log/slog"
	"os"
	"slices"
	"testing"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestStateFileReplacesPlantedSymlink: a symlink planted where monit.state
// is written is replaced, never followed, and the file is read back.
func TestStateFileReplacesPlantedSymlink(t *testing.T) {
	l, _ := boshpath.New(t.TempDir())
	f := stateFile{path: monitStatePath(l), log: slog.New(slog.DiscardHandler)}
	state := testproc.PlantSymlink(t, f.path, false)
	if err := f.save(monitState{Unmonitored: []string{"web"}}); err != nil {
		t.Fatal(err)
	}
	state()
	if fi, err := os.Lstat(f.path); err != nil || fi.Mode() != 0o600 {
		t.Errorf("monit state file: %v %v", fi, err)
	}
	if got := f.load(); !slices.Equal(got.Unmonitored, []string{"web"}) {
		t.Errorf("monit state read back: %+v", got)
	}
}

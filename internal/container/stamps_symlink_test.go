package container

import (
	"path/filepath"
	"testing"

	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestStampsRefusePlantedSymlinks: the stamp directory is shared by the
// pod's containers; a symlink planted at a stamp's path is refused
// (O_NOFOLLOW), so its target is neither written nor created.
func TestStampsRefusePlantedSymlinks(t *testing.T) {
	dir := t.TempDir()
	s, err := NewStamps(dir, "a")
	if err != nil {
		t.Fatal(err)
	}
	up := testproc.PlantSymlink(t, filepath.Join(dir, "a.up"), true)
	drained := testproc.PlantSymlink(t, filepath.Join(dir, "a.drained"), false)
	if err := s.Register(); err == nil {
		t.Error("Register followed a symlink")
	}
	if err := s.MarkDrained(); err == nil {
		t.Error("MarkDrained followed a symlink")
	}
	up()
	drained()
}

// TestStampsRefusePlantedFIFOs: another container sharing the directory
// can put a FIFO where a stamp goes; writing the stamp fails at once
// instead of waiting for a reader.
func TestStampsRefusePlantedFIFOs(t *testing.T) {
	dir := t.TempDir()
	s, err := NewStamps(dir, "a")
	if err != nil {
		t.Fatal(err)
	}
	testproc.PlantFIFO(t, filepath.Join(dir, "a.up"))
	testproc.PlantFIFO(t, filepath.Join(dir, "a.drained"))
	testproc.Within(t, "the stamps", func() {
		if err := s.Register(); err == nil {
			t.Error("Register wrote into a FIFO")
		}
		if err := s.MarkDrained(); err == nil {
			t.Error("MarkDrained wrote into a FIFO")
		}
	})
}

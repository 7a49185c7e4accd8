package pidfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/vigil-bosh/vigil/internal/pidfile"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestWriteReplacesPlantedSymlink: a symlink at the pid file's path is
// replaced by the new file (the temporary file is created with O_EXCL and
// renamed over the path); its target is never written or created.
func TestWriteReplacesPlantedSymlink(t *testing.T) {
	for _, dangling := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "proc.pid")
		check := testproc.PlantSymlink(t, path, dangling)
		if err := pidfile.Write(path, 42); err != nil {
			t.Fatal(err)
		}
		check()
		if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("pid file after the write: %v %v", fi, err)
		}
		if pid, err := pidfile.Read(path); pid != 42 || err != nil {
			t.Fatalf("read %d %v", pid, err)
		}
	}
}

// TestReadRefusesPlantedFIFO: monit's checks name pid files in the job's
// own directories, so a job can put a FIFO there; Read refuses it at once
// instead of waiting for a writer, and refuses a symlink too.
func TestReadRefusesPlantedFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "proc.pid")
	testproc.PlantFIFO(t, fifo)
	testproc.Within(t, "reading a FIFO pid file", func() {
		if pid, err := pidfile.Read(fifo); err == nil {
			t.Errorf("a FIFO read as pid %d", pid)
		}
	})
	link := filepath.Join(dir, "link.pid")
	os.WriteFile(filepath.Join(dir, "real"), []byte("42\n"), 0o644)
	os.Symlink(filepath.Join(dir, "real"), link)
	if pid, err := pidfile.Read(link); err == nil {
		t.Errorf("a symlink read as pid %d", pid)
	}
}

package pidfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/vigil-bosh/vigil/internal/testproc"
	"github.com/vigil-bosh/vigil/pidfile"
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

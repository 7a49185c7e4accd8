package launch

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestNotifySocketChmodNeverFollowsSymlinks: the notify socket lives in the
// job's tmp directory, which the job's user owns. chmodSocket opens the
// socket for its mode; a symlink swapped in (pointing at a file the user
// must not write) or any other kind of file is refused, unchanged.
func TestNotifySocketChmodNeverFollowsSymlinks(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "vigil-web.notify")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := chmodSocket(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(sock); err != nil || fi.Mode().Perm() != 0o666 {
		t.Fatalf("socket after chmod: %v %v", fi, err)
	}
	link := filepath.Join(dir, "swapped.notify")
	check := testproc.PlantSymlink(t, link, false)
	if err := chmodSocket(link, 0o666); err == nil {
		t.Error("chmod through a symlink")
	}
	check()
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, nil, 0o600)
	if err := chmodSocket(plain, 0o666); err == nil {
		t.Error("chmod of a regular file")
	}
}

package testproc

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// makeShortDir makes a directory with a short path: unix socket paths are
// limited to about 100 bytes, and test temp dirs can be longer.
func makeShortDir() (string, error) { return os.MkdirTemp("", "tp") }

func removeDir(dir string) { os.RemoveAll(dir) }

// SandboxRoot makes a directory for a test's BOSH root whose processes run
// sandboxed, removed when the test ends: not under /tmp (a sandbox has its
// own), on a file system that lets its programs execute. That is /run,
// unless it is mounted noexec (as on Ubuntu and Debian 13), then /var/tmp.
func SandboxRoot(t testing.TB, prefix string) string {
	t.Helper()
	root, err := os.MkdirTemp(SandboxParent(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// SandboxParent is where SandboxRoot makes its directories: /run, unless
// it is mounted noexec, then /var/tmp.
func SandboxParent() string {
	var st unix.Statfs_t
	if err := unix.Statfs("/run", &st); err != nil || st.Flags&unix.ST_NOEXEC != 0 {
		return "/var/tmp"
	}
	return "/run"
}

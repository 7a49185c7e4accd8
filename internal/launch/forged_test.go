package launch

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/vigil-bosh/vigil/internal/pidfile"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestForgedInitNotAdopted: a stale pid file names a process that looks
// like the init of job/forged (its command line is "BINARY init
// job/forged"), placed at that pid by someone else: a child of the test.
// Neither adoption nor bpm's lookup takes it for the init unless it is
// owned by root, has the start time recorded for the init (root-only), and
// executes the recorded binary; a record that others could have written
// counts for nothing.
func TestForgedInitNotAdopted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to place a process of another user")
	}
	f := newFixture(t)
	rep := testproc.ListenAbstract(t) // reachable by any user
	bin := copyForOthers(t)
	l := f.layout
	pidPath, recPath := l.PidFile("job", "forged"), l.InitRecord("job", "forged")
	os.MkdirAll(filepath.Dir(pidPath), 0o700)
	forge := func(uid uint32) int {
		t.Helper()
		cmd := exec.Command(bin, "init", "job/forged")
		for k, v := range rep.Env("serve") {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		rep.Expect(t, "ready")
		if err := pidfile.Write(pidPath, cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
		return cmd.Process.Pid
	}
	refused := func(what string) {
		t.Helper()
		if p, err := Adopt(l, "job", "forged"); err == nil {
			p.ForceKill()
			t.Errorf("%s: adopted", what)
		} else if !errors.Is(err, ErrNoInit) {
			t.Errorf("%s: %v", what, err)
		}
		if it, err := FindInit(l, "job", "forged"); err == nil {
			it.Close()
			t.Errorf("%s: found as the init", what)
		}
	}
	writeRecord := func(rec initRecord, mode os.FileMode, owner int) {
		t.Helper()
		b, _ := json.Marshal(rec)
		os.MkdirAll(filepath.Dir(recPath), 0o700)
		os.Remove(recPath)
		if err := os.WriteFile(recPath, b, mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(recPath, mode)
		os.Chown(recPath, owner, owner)
	}

	// Another user's process, with no record, and with a record a root
	// process would have: neither is the init.
	pid := forge(65534)
	refused("a process of uid 65534")
	if err := recordInit(recPath, pid, exeOf(t, pid)); err != nil {
		t.Fatal(err)
	}
	refused("a process of uid 65534 with a record of it")

	// Root's process: only with a record that matches in every point.
	pid = forge(0)
	os.Remove(recPath)
	refused("root's process without a record")
	if err := recordInit(recPath, pid, exeOf(t, pid)); err != nil {
		t.Fatal(err)
	}
	rec, err := readRecord(recPath)
	if err != nil {
		t.Fatal(err)
	}
	it, err := FindInit(l, "job", "forged")
	if err != nil {
		t.Fatalf("the recorded process was not found: %v", err)
	}
	it.Close()
	for _, bad := range []struct {
		what  string
		rec   initRecord
		mode  os.FileMode
		owner int
	}{
		{"a record of another start", initRecord{PID: rec.PID, Start: rec.Start + 1, Dev: rec.Dev, Ino: rec.Ino}, 0o600, 0},
		{"a record of another pid", initRecord{PID: rec.PID + 1, Start: rec.Start, Dev: rec.Dev, Ino: rec.Ino}, 0o600, 0},
		{"a record of another binary", initRecord{PID: rec.PID, Start: rec.Start, Dev: rec.Dev, Ino: rec.Ino + 1}, 0o600, 0},
		{"a record others can write", rec, 0o666, 0},
		{"a record of another user", rec, 0o600, 65534},
	} {
		writeRecord(bad.rec, bad.mode, bad.owner)
		refused(bad.what)
	}
}

// copyForOthers copies the test binary where any user may run it.
func copyForOthers(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "vigil-forge")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "vigil")
	copyFile(t, bin)
	return bin
}

// exeOf is the file pid executes, as its starter would name it.
func exeOf(t *testing.T, pid int) string {
	t.Helper()
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

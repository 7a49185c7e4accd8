package monit

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
	"github.com/vigil-bosh/vigil/internal/pidfile"
)

// nobody is the uid and gid the tests give a service's user.
const nobody = 65534

// sleeper starts a long sleep as uid (root when 0), killed at the end of
// the test, and returns its pid.
func sleeper(t *testing.T, uid uint32) int {
	t.Helper()
	attr := &syscall.SysProcAttr{}
	if uid != 0 {
		attr.Credential = &syscall.Credential{Uid: uid, Gid: uid}
	}
	return sleep(t, attr)
}

// sleep starts a long sleep with attr, killed at the end of the test, and
// returns its pid.
func sleep(t *testing.T, attr *syscall.SysProcAttr) int {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// sharedDir is a temporary directory another user may write.
func sharedDir(t *testing.T) string {
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o777)
	return dir
}

// TestPidFileTrust: a check process's pid file lies where its job writes,
// so the process it names is taken (and ever signalled) only when it is
// the service's: its user's, named by a file its user (or root) wrote, or
// in the session of the start program vigil ran. A job that writes the
// pid of root's process, or another user's, into its pid file gets a
// *ForeignError: never adopted, never signalled.
func TestPidFileTrust(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: processes and pid files of another user")
	}
	dir := t.TempDir()
	root, job := sleeper(t, 0), sleeper(t, nobody)
	other := sleeper(t, nobody-1)
	pidFile := func(name string, pid int, owner uint32, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strconv.Itoa(pid)+"\n"), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode) // past the umask
		if err := os.Chown(p, int(owner), int(owner)); err != nil {
			t.Fatal(err)
		}
		return p
	}
	asNobody := owner{uid: nobody}
	for _, tc := range []struct {
		name    string
		o       owner
		path    string
		trusted bool
	}{
		{"the job's own process, its own file", asNobody, pidFile("own.pid", job, nobody, 0o644), true},
		{"root's process named by the job", asNobody, pidFile("evil.pid", root, nobody, 0o644), false},
		{"root's process named by a root-owned file of a service that is not root's", asNobody,
			pidFile("rootfile.pid", root, 0, 0o644), false},
		{"another user's process named by the job", asNobody, pidFile("other.pid", other, nobody, 0o644), false},
		{"a root service: its process, its root-owned file", owner{}, pidFile("rootsvc.pid", root, 0, 0o644), true},
		{"a root service: a process that dropped to the job's user", owner{}, pidFile("dropped.pid", job, 0, 0o644), true},
		{"a root service whose directory the job writes: root's process in a file the job wrote", owner{},
			pidFile("planted.pid", root, nobody, 0o644), false},
		{"a root service: a root-owned file others may write", owner{}, pidFile("open.pid", root, 0, 0o666), false},
	} {
		pid, fd, err := livePid(tc.path, tc.o)
		if fd >= 0 {
			syscall.Close(fd)
		}
		var fe *ForeignError
		if tc.trusted && err != nil || !tc.trusted && !errors.As(err, &fe) {
			t.Errorf("%s: pid %d, %v", tc.name, pid, err)
		}
	}
	// The start program's session proves the process its own, whoever's
	// it is: a process another user's pid file names is taken when it
	// lies in that session. The session is one of the test's making, as
	// the start program's is (the test's own may be 0 or 1 in a pid
	// namespace, which proves nothing).
	sid := sleep(t, &syscall.SysProcAttr{Setsid: true})
	if err := (owner{uid: nobody, session: sid}).check("x", sid, pidfile.Writer{UID: nobody}); err != nil {
		t.Errorf("in the start program's session: %v", err)
	}
	if err := (owner{uid: nobody, session: sid}).check("x", root, pidfile.Writer{UID: nobody}); err == nil {
		t.Error("root's process outside the start program's session was trusted")
	}
}

// TestForeignPidFileNeverSignalled: a service run as another user writes
// the pid of root's process into its pid file. The start never takes it
// (the start fails, saying why, and OnForeign is told once), and no stop,
// kill or forced kill reaches it.
func TestForeignPidFileNeverSignalled(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: a service run as another user")
	}
	dir := sharedDir(t)
	victim := sleeper(t, 0)
	pidPath := filepath.Join(dir, "evil.pid")
	var told []error
	r := &ProgramRunner{Service: &monitrc.Service{Name: "evil", Type: monitrc.TypeProcess, PidFile: pidPath,
		Start: &monitrc.Program{Argv: []string{script(t, dir, "start", "echo "+strconv.Itoa(victim)+" > "+pidPath+"\n")},
			UID: strconv.Itoa(nobody), GID: strconv.Itoa(nobody), Timeout: 500e6}},
		OnForeign: func(err error) { told = append(told, err) }}
	if p := r.Adopt(); p != nil {
		t.Fatal("adopted before any start")
	}
	p, err := r.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, p)
	var fe *ForeignError
	if ev.Running || len(told) != 1 || !errors.As(told[0], &fe) || fe.PID != victim || fe.UID != 0 || fe.Service != nobody {
		t.Fatalf("start: %+v, told %v", ev, told)
	}
	for _, f := range []func() error{func() error { return p.Signal(syscall.SIGQUIT) }, p.Kill, p.ForceKill} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	// A second runner of the same service (the next daemon's) neither
	// adopts it.
	if q := r.Adopt(); q != nil {
		q.Kill()
		t.Fatal("the victim was adopted")
	}
	if err := syscall.Kill(victim, 0); err != nil {
		t.Fatalf("the victim was signalled: %v", err)
	}
	if st, err := StartTime(victim); err != nil {
		t.Fatalf("the victim: %v %v", st, err)
	}
}

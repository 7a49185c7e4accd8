package launch

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/pidfile"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

func (f *fixture) newRunner(name, behaviour string, extra ...string) *Runner {
	self, _ := os.Executable()
	return NewRunner(f.process(name, behaviour, extra...),
		Options{Layout: f.layout, Init: self, InitEnv: []string{"GORACE=" + testproc.NoRaceExitDelay}, NoIsolation: true})
}

// detached starts a detached init and makes sure it is gone after the test.
func (f *fixture) detached(name, behaviour string, extra ...string) int {
	f.t.Helper()
	pid, err := f.newRunner(name, behaviour, extra...).StartDetached(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		Stop(f.layout, "job", name, supervise.Timing{StopTimeout: time.Millisecond, QuitTimeout: time.Millisecond})
	})
	return pid
}

func TestDetachedInitKeepsItsOwnPidFile(t *testing.T) {
	f := newFixture(t)
	pid := f.detached("server", "serve")
	// The pid file exists once StartDetached returns and names the init,
	// whose direct child is the executable.
	pidPath := f.layout.PidFile("job", "server")
	if got, err := pidfile.Read(pidPath); err != nil || got != pid {
		t.Fatalf("pid file holds %d (%v), want %d", got, err, pid)
	}
	ready := f.rep.Expect(t, "ready")
	if ppid := ready.Fields()[1]; ppid != pid {
		t.Fatalf("executable's parent is %d, init is %d", ppid, pid)
	}
	it, err := FindInit(f.layout, "job", "server")
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if err := it.Signal(unix.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	f.rep.Expect(t, "signal USR1")
	// The executable ends by itself: the init removes the pid file and exits.
	unix.Kill(ready.PID, unix.SIGTERM)
	if !it.Wait(testproc.Guard) {
		t.Fatal("init still runs after its executable ended")
	}
	if _, err := os.Stat(pidPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("pid file left behind: %v", err)
	}
}

func TestDetachedStartFailure(t *testing.T) {
	f := newFixture(t)
	r := f.newRunner("missing", "serve")
	r.p.ResolvedExecutable = filepath.Join(t.TempDir(), "nope")
	_, err := r.StartDetached(context.Background())
	if err == nil || err.Error() != "exec "+r.p.ResolvedExecutable+": no such file or directory" {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(f.layout.PidFile("job", "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("pid file for a process that never ran: %v", err)
	}
}

// TestStopLadder runs bpm's ladder (with short rungs) against an executable
// and a grandchild that ignore TERM and QUIT: nothing of it may be left.
func TestStopLadder(t *testing.T) {
	f := newFixture(t)
	pid := f.detached("stubborn", "grandchild", testproc.EnvIgnore+"=TERM,QUIT")
	grand := f.rep.Expect(t, "grandchild").Fields()[0]
	exe := f.rep.Expect(t, "ready")
	if exe.PID == grand {
		exe = f.rep.Expect(t, "ready")
	}
	stopped := make(chan error, 1)
	go func() {
		// QuitTimeout: time for the child to report the ignored QUIT before the kill.
		stopped <- Stop(f.layout, "job", "stubborn", supervise.Timing{StopSignal: syscall.SIGTERM,
			StopTimeout: 50 * time.Millisecond, QuitTimeout: time.Second})
	}()
	f.rep.Expect(t, "signal TERM")
	f.rep.Expect(t, "signal QUIT")
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	for _, p := range []int{pid, exe.PID, grand} {
		if err := waitGone(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(f.layout.PidFile("job", "stubborn")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("pid file left behind: %v", err)
	}
}

func TestFindInitRejectsOtherProcesses(t *testing.T) {
	f := newFixture(t)
	f.detached("other", "serve")
	f.rep.Expect(t, "ready")
	path := f.layout.PidFile("job", "server")
	dead := deadPID(t)
	tests := []struct {
		name string
		pid  int
	}{
		{"not an init", os.Getpid()},
		{"exited", dead},
		{"the init of another process", mustRead(t, f.layout.PidFile("job", "other"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := pidfile.Write(path, tt.pid); err != nil {
				t.Fatal(err)
			}
			if _, err := FindInit(f.layout, "job", "server"); !errors.Is(err, ErrNoInit) {
				t.Fatalf("FindInit of pid %d: %v", tt.pid, err)
			}
			if err := RemoveStalePidFile(f.layout, "job", "server"); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("stale pid file kept: %v", err)
			}
		})
	}
	// A live init's pid file is kept.
	if err := RemoveStalePidFile(f.layout, "job", "other"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.layout.PidFile("job", "other")); err != nil {
		t.Fatalf("live pid file removed: %v", err)
	}
}

// deadPID runs a process to its end and returns its pid, now unused.
func deadPID(t *testing.T) int {
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	p.Wait()
	return p.Pid
}

func mustRead(t *testing.T, path string) int {
	pid, err := pidfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestForegroundTeesAndKeepsNoPidFile(t *testing.T) {
	f := newFixture(t)
	var out, errOut bytes.Buffer
	pr, err := f.newRunner("errand", "serve").StartForeground(context.Background(), &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	f.rep.Expect(t, "ready")
	if ev := next(t, pr); !ev.Running {
		t.Fatalf("got %+v", ev)
	}
	if _, err := os.Stat(f.layout.PidFile("job", "errand")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("foreground run wrote a pid file: %v", err)
	}
	pr.Signal(unix.SIGUSR2)
	f.rep.Expect(t, "printed")
	pr.Signal(unix.SIGTERM)
	if ev := next(t, pr); ev.Running || ev.Exit.Code != 0 {
		t.Fatalf("got %+v", ev)
	}
	wantOut, wantErr := "started\nstdout after USR2\n", "stderr after USR2\n"
	logOut, _ := os.ReadFile(f.layout.StdoutLog("job", "errand"))
	logErr, _ := os.ReadFile(f.layout.StderrLog("job", "errand"))
	if out.String() != wantOut || string(logOut) != wantOut {
		t.Errorf("stdout: terminal %q, log %q, want %q in both", out.String(), logOut, wantOut)
	}
	if errOut.String() != wantErr || string(logErr) != wantErr {
		t.Errorf("stderr: terminal %q, log %q, want %q in both", errOut.String(), logErr, wantErr)
	}
}

// TestDetachedInitWritesNothingAfterItsExit: a detached init whose
// executable ends by itself, with nobody adopting it, creates nothing in
// the BOSH root (bpm's runc writes nothing once its container's process
// has ended, and bpm-release's suite removes the root the moment it sees
// the process's output: an exit record written then made that fail with
// "directory not empty").
func TestDetachedInitWritesNothingAfterItsExit(t *testing.T) {
	f := newFixture(t)
	f.detached("brief", "serve")
	ready := f.rep.Expect(t, "ready")
	it, err := FindInit(f.layout, "job", "brief")
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	before := tree(t, f.layout.Root())
	unix.Kill(ready.PID, unix.SIGTERM)
	if !it.Wait(testproc.Guard) {
		t.Fatal("init still runs after its executable ended")
	}
	for path := range tree(t, f.layout.Root()) {
		if !before[path] {
			t.Errorf("%s appeared after the executable ended", path)
		}
	}
}

// tree is the set of every path below root.
func tree(t *testing.T, root string) map[string]bool {
	paths := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, _ fs.DirEntry, err error) error {
		paths[path] = true
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

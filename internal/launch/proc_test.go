package launch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/pidfile"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/testproc"
	"github.com/vigil-bosh/vigil/internal/testroot"
	"github.com/vigil-bosh/vigil/job"
)

func TestMain(m *testing.M) {
	testproc.Main()
	os.Exit(m.Run())
}

type fixture struct {
	t      *testing.T
	layout boshpath.Layout
	rep    *testproc.Listener
}

func newFixture(t *testing.T) *fixture {
	r := testroot.New(t, "")
	return &fixture{t: t, layout: r.Layout, rep: r.Rep}
}

// process describes the test binary as a bpm process with a behaviour.
func (f *fixture) process(name, behaviour string, extra ...string) job.Process {
	self, _ := os.Executable()
	return job.Process{
		Job: "job", Name: name, Executable: self, ResolvedExecutable: self,
		Env: f.rep.Env(behaviour, extra...), Workdir: "/", ShutdownSignal: syscall.SIGTERM,
	}
}

func (f *fixture) start(p job.Process, opts ...func(*Options)) (*Runner, supervise.Process) {
	f.t.Helper()
	self, _ := os.Executable()
	o := Options{Layout: f.layout, Init: self, InitEnv: []string{"GORACE=" + testproc.NoRaceExitDelay}, NoIsolation: true}
	for _, fn := range opts {
		fn(&o)
	}
	r := NewRunner(p, o)
	pr, err := r.Start(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		_ = pr.ForceKill()
		for range pr.Events() {
		}
	})
	return r, pr
}

func next(t *testing.T, pr supervise.Process) supervise.ProcessEvent {
	t.Helper()
	select {
	case ev, ok := <-pr.Events():
		if !ok {
			t.Fatal("events closed early")
		}
		return ev
	case <-time.After(testproc.Guard):
		t.Fatal("no event")
	}
	return supervise.ProcessEvent{}
}

func alive(pid int) bool { return unix.Kill(pid, 0) == nil }

func TestInitContract(t *testing.T) {
	f := newFixture(t)
	_, pr := f.start(f.process("server", "serve"))
	ready := f.rep.Expect(t, "ready")
	ev := next(t, pr)
	if !ev.Running || ev.ExecPID != ready.PID {
		t.Fatalf("running event %+v, child says pid %d", ev, ready.PID)
	}
	// The executable is the init's direct child, and the pid file holds the init.
	if ppid := ready.Fields()[1]; ppid != pr.PID() {
		t.Fatalf("executable's parent is %d, init is %d", ppid, pr.PID())
	}
	pidPath := f.layout.PidFile("job", "server")
	if got, err := pidfile.Read(pidPath); err != nil || got != pr.PID() {
		t.Fatalf("pid file holds %d (%v), want %d", got, err, pr.PID())
	}
	// The executable does not inherit the init's control socket.
	ctrl, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/3", pr.PID()))
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", ready.PID))
	for _, fd := range fds {
		if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", ready.PID, fd.Name())); l == ctrl {
			t.Fatalf("executable holds the control socket %s on fd %s", ctrl, fd.Name())
		}
	}
	// A drain script's kill -USR1 $(cat pidfile) reaches the executable.
	if err := unix.Kill(pr.PID(), unix.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	f.rep.Expect(t, "signal USR1")
	// SIGKILL of the executable: the exit is reported and the pid file goes.
	unix.Kill(ready.PID, unix.SIGKILL)
	ev = next(t, pr)
	if ev.Running || ev.Exit.Signal != syscall.SIGKILL {
		t.Fatalf("exit event %+v", ev)
	}
	if _, err := os.Stat(pidPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("pid file still there: %v", err)
	}
	if _, ok := <-pr.Events(); ok {
		t.Fatal("events not closed after the exit")
	}
}

// TestPooledInit runs a process through a spare init: it must behave as a
// fresh one (logs, pid file, signals) and be found by its pid file.
func TestPooledInit(t *testing.T) {
	f := newFixture(t)
	self, _ := os.Executable()
	pool := NewPool(PoolConfig{Init: self, Env: []string{"GORACE=" + testproc.NoRaceExitDelay}, Size: 1, Records: f.layout.SpareRecords()})
	t.Cleanup(pool.Close)
	for i := range 2 {
		s := <-pool.spares // wait until a spare is ready, and put it back
		select {
		case pool.spares <- s:
		default: // the pool refilled meanwhile: one spare is enough
			s.discard()
		}
		_, pr := f.start(f.process("pooled", "serve"), func(o *Options) { o.Pool = pool })
		if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pr.PID())); strings.Count(string(cmdline), "\x00") != 2 {
			t.Fatalf("start %d did not use the spare: %q", i, cmdline)
		}
		ready := f.rep.Expect(t, "ready")
		next(t, pr)
		if ppid := ready.Fields()[1]; ppid != pr.PID() {
			t.Fatalf("start %d: executable's parent %d, init %d", i, ppid, pr.PID())
		}
		it, err := FindInit(f.layout, "job", "pooled")
		if err != nil {
			t.Fatalf("start %d: pooled init not recognised: %v", i, err)
		}
		it.Close()
		// Its record was written ahead and renamed into place.
		if _, err := os.Stat(filepath.Join(pool.staging, strconv.Itoa(pr.PID())+".json")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("start %d: the spare's record is still staged: %v", i, err)
		}
		unix.Kill(ready.PID, unix.SIGUSR2)
		f.rep.Expect(t, "printed")
		unix.Kill(ready.PID, unix.SIGTERM)
		next(t, pr)
	}
	out, _ := os.ReadFile(f.layout.StdoutLog("job", "pooled"))
	if strings.Count(string(out), "stdout after USR2\n") != 2 {
		t.Fatalf("stdout log %q", out)
	}
	if pool.staging == "" {
		t.Fatal("the pool writes no record ahead")
	}
	pool.Close()
	if _, err := os.Stat(pool.staging); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the pool's staged records outlive it: %v", err)
	}
}

func TestSymlinkedLogRefused(t *testing.T) {
	f := newFixture(t)
	p := f.process("planted", "serve")
	os.MkdirAll(f.layout.LogDir("job"), 0o750)
	os.Symlink("/etc/passwd", f.layout.StdoutLog("job", "planted"))
	_, pr := f.start(p)
	ev := next(t, pr)
	if ev.Running || !strings.HasPrefix(ev.Exit.Err, "refusing to open symlink at "+f.layout.StdoutLog("job", "planted")) {
		t.Fatalf("got %+v", ev)
	}
}

// TestPlantedLogFIFORefused: the job's user owns its log directory, so
// it can put a FIFO where the process's log goes. The init refuses it at
// once (a blocking open would hold the start, with no time limit running,
// until someone read the FIFO) and the start fails saying why. A FIFO
// planted before a reopen is refused the same way: the output goes on
// into the file the init already had.
func TestPlantedLogFIFORefused(t *testing.T) {
	f := newFixture(t)
	out := f.layout.StdoutLog("job", "planted")
	testproc.PlantFIFO(t, out)
	_, pr := f.start(f.process("planted", "serve"))
	ev := next(t, pr)
	if ev.Running || !strings.Contains(ev.Exit.Err, "open log: open "+out+": not a regular file") {
		t.Fatalf("start with a FIFO for its log: %+v", ev)
	}

	os.Remove(out)
	r, pr := f.start(f.process("planted", "serve"))
	exe := f.rep.Expect(t, "ready")
	next(t, pr)
	os.Rename(out, out+".1")
	testproc.PlantFIFO(t, out)
	testproc.Within(t, "the reopen", func() {
		if err := r.Reopen(t.Context()); err != nil {
			t.Error(err)
		}
	})
	unix.Kill(exe.PID, unix.SIGUSR2)
	f.rep.Expect(t, "printed")
	testproc.WaitUntil(t, filepath.Dir(out), testproc.FileContains(out+".1", "stdout after USR2\n"))
}

func TestExitCodePassesThrough(t *testing.T) {
	f := newFixture(t)
	_, pr := f.start(f.process("crash", "exit", testproc.EnvCode+"=3"))
	next(t, pr) // running
	ev := next(t, pr)
	if ev.Exit.Code != 3 || ev.Exit.Signal != 0 || ev.Exit.Err != "" {
		t.Fatalf("exit %+v", ev.Exit)
	}
	<-ev.Reaped
	if code := pr.(*Process).cmd.ProcessState.ExitCode(); code != 3 {
		t.Fatalf("init exited %d, want the executable's 3", code)
	}
}

// TestKillTakesTheWholeTree is the last rung of the stop ladder against an
// executable that ignores TERM and QUIT and has a grandchild doing the same.
func TestKillTakesTheWholeTree(t *testing.T) {
	f := newFixture(t)
	_, pr := f.start(f.process("stubborn", "grandchild", testproc.EnvIgnore+"=TERM,QUIT"))
	grand := f.rep.Expect(t, "grandchild").Fields()[0]
	exe := f.rep.Expect(t, "ready")
	if exe.PID == grand {
		exe = f.rep.Expect(t, "ready")
	}
	next(t, pr) // running
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGQUIT} {
		if err := pr.Signal(sig); err != nil {
			t.Fatal(err)
		}
		f.rep.Expect(t, "signal "+strings.TrimPrefix(unix.SignalName(sig), "SIG"))
	}
	if !alive(exe.PID) || !alive(grand) {
		t.Fatal("ignored signals ended a process")
	}
	if err := pr.Kill(); err != nil {
		t.Fatal(err)
	}
	ev := next(t, pr)
	if ev.Exit.Signal != syscall.SIGKILL {
		t.Fatalf("exit %+v", ev.Exit)
	}
	<-ev.Reaped
	for _, pid := range []int{exe.PID, grand, pr.PID()} {
		if alive(pid) {
			t.Fatalf("pid %d survived the kill", pid)
		}
	}
}

// TestInitKilledOutright: kill -9 of the pid-file pid must not leave the
// executable or its group running unsupervised.
func TestInitKilledOutright(t *testing.T) {
	f := newFixture(t)
	_, pr := f.start(f.process("victim", "grandchild"))
	grand := f.rep.Expect(t, "grandchild").Fields()[0]
	f.rep.Expect(t, "ready")
	f.rep.Expect(t, "ready")
	next(t, pr)
	exe := pr.(*Process).execPIDValue()
	unix.Kill(pr.PID(), unix.SIGKILL)
	if ev := next(t, pr); ev.Exit.Signal != syscall.SIGKILL {
		t.Fatalf("exit %+v", ev.Exit)
	}
	for _, pid := range []int{exe, grand} {
		if err := waitGone(pid); err != nil {
			t.Fatal(err)
		}
	}
}

// waitGone waits for a process that is not our child to disappear, using a
// pidfd (readable once it exits) rather than polling.
func waitGone(pid int) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil // already gone
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, int(testproc.Guard/time.Millisecond))
	if n == 1 {
		return nil
	}
	return fmt.Errorf("pid %d still runs: %v", pid, err)
}

func TestOrphansDieWithTheExecutable(t *testing.T) {
	f := newFixture(t)
	_, pr := f.start(f.process("parent", "grandchild"))
	grand := f.rep.Expect(t, "grandchild").Fields()[0]
	next(t, pr)
	unix.Kill(pr.(*Process).execPIDValue(), unix.SIGTERM)
	if ev := next(t, pr); ev.Exit.Code != 0 {
		t.Fatalf("exit %+v", ev.Exit)
	}
	if alive(grand) {
		t.Fatalf("grandchild %d outlived the executable", grand)
	}
}

func TestLogsAppendAndReopen(t *testing.T) {
	f := newFixture(t)
	out := f.layout.StdoutLog("job", "logger")
	os.MkdirAll(filepath.Dir(out), 0o750)
	os.WriteFile(out, []byte("earlier\n"), 0o600)
	r, pr := f.start(f.process("logger", "serve"))
	exe := f.rep.Expect(t, "ready")
	next(t, pr)
	unix.Kill(exe.PID, unix.SIGUSR2)
	f.rep.Expect(t, "printed")
	// logrotate's create mode: move the file away, then ask for a reopen.
	os.Rename(out, out+".1")
	if err := r.Reopen(t.Context()); err != nil {
		t.Fatal(err)
	}
	unix.Kill(exe.PID, unix.SIGUSR2)
	f.rep.Expect(t, "printed")
	unix.Kill(exe.PID, unix.SIGTERM)
	next(t, pr) // the exit comes after the output is drained
	// Output still in the pipe when the reopen lands goes to the new file:
	// nothing is lost, nothing is written twice, and the old file keeps
	// what it had.
	old, _ := os.ReadFile(out + ".1")
	cur, _ := os.ReadFile(out)
	want := "earlier\nstarted\nstdout after USR2\nstdout after USR2\n"
	if string(old)+string(cur) != want || !strings.HasPrefix(string(old), "earlier\n") ||
		!strings.HasSuffix(string(cur), "stdout after USR2\n") {
		t.Fatalf("rotated log %q, new log %q", old, cur)
	}
	errLog, _ := os.ReadFile(f.layout.StderrLog("job", "logger"))
	t.Logf("stderr log: %s", errLog)
	if strings.Count(string(errLog), "stderr after USR2\n") != 2 {
		t.Fatalf("stderr log %q", errLog)
	}
}

func TestStartFailures(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755)
		return p
	}
	missing := f.process("missing", "serve")
	missing.ResolvedExecutable = filepath.Join(dir, "nope")
	failing := f.process("hooked", "serve")
	failing.Hooks.PreStart = script("hook-fails", "echo hook ran; exit 3")
	hanging := f.process("hanging", "serve")
	hanging.Hooks.PreStart = script("hook-hangs", "exec sleep 1000")
	tests := []struct {
		name string
		p    job.Process
		want string
	}{
		{"missing executable", missing, "exec " + missing.ResolvedExecutable + ": no such file or directory"},
		{"failing hook", failing, "prestart hook failed: exit status 3"},
		{"hanging hook", hanging, "prestart hook failed: timed out after 200ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, pr := f.start(tt.p, func(o *Options) { o.HookTimeout = 200 * time.Millisecond })
			ev := next(t, pr)
			if ev.Running || ev.Exit.Err != tt.want {
				t.Fatalf("got %+v, want error %q", ev, tt.want)
			}
			if _, err := os.Stat(f.layout.PidFile("job", tt.p.Name)); err == nil {
				t.Fatal("pid file written for a process that never ran")
			}
		})
	}
	logged, _ := os.ReadFile(f.layout.StdoutLog("job", "hooked"))
	if string(logged) != "hook ran\n" {
		t.Fatalf("hook output not in the process log: %q", logged)
	}
}

func TestStopDuringHook(t *testing.T) {
	f := newFixture(t)
	// The hook is the test binary serving (it shares the process's
	// environment), so it says when it runs and whether it got a signal.
	p := f.process("slowhook", "serve", testproc.EnvIgnore+"=TERM")
	p.Hooks.PreStart = p.ResolvedExecutable
	_, pr := f.start(p)
	hook := f.rep.Expect(t, "ready")
	pr.Signal(syscall.SIGTERM)
	ev := next(t, pr)
	if ev.Running || ev.Exit.Err != "stopped while the prestart hook ran" {
		t.Fatalf("got %+v", ev)
	}
	if alive(hook.PID) {
		t.Fatal("the hook outlived the stop")
	}
}

func TestPersistentDiskMissing(t *testing.T) {
	f := newFixture(t)
	p := f.process("store", "serve")
	p.PersistentDisk = true
	self, _ := os.Executable()
	_, err := NewRunner(p, Options{Layout: f.layout, Init: self, NoIsolation: true}).Start(context.Background())
	if err == nil || err.Error() != "requested persistent disk does not exist" {
		t.Fatalf("got %v", err)
	}
}

// TestAdoptedExitIsRecorded: once its daemon is gone, an init records how
// its executable ended, and the daemon that adopted it reports that exit.
func TestAdoptedExitIsRecorded(t *testing.T) {
	f := newFixture(t)
	_, pr := f.start(f.process("orphan", "serve"))
	exe := f.rep.Expect(t, "ready")
	next(t, pr)
	pr.(*Process).ctrl.Close() // the daemon dies: nobody holds the init's socket
	adopted, err := Adopt(f.layout, "job", "orphan")
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-adopted.Events(); !ev.Running || ev.ExecPID != exe.PID {
		t.Fatalf("adopted %+v, executable %d", ev, exe.PID)
	}
	unix.Kill(exe.PID, unix.SIGKILL)
	ev := <-adopted.Events()
	if ev.Running || ev.Exit.Signal != syscall.SIGKILL {
		t.Fatalf("adopted exit %+v, want the recorded SIGKILL", ev.Exit)
	}
	if _, err := os.Stat(f.layout.ExitFile("job", "orphan")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("exit record left behind: %v", err)
	}
}

// TestIsolationWarnedOnce: what isolation is not enforced is logged at
// the first start, not again at each restart of a process that exits
// again and again.
func TestIsolationWarnedOnce(t *testing.T) {
	f := newFixture(t)
	warned := &counter{msg: "isolation not enforced"}
	r, pr := f.start(f.process("crash", "exit", testproc.EnvCode+"=3"), func(o *Options) { o.Log = slog.New(warned) })
	for i := range 3 {
		next(t, pr) // running
		<-next(t, pr).Reaped
		if i == 2 {
			break
		}
		var err error
		if pr, err = r.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := warned.n.Load(); n != 1 {
		t.Fatalf("warned %d times in 3 starts", n)
	}
}

// counter is a log handler that counts the records of one message.
type counter struct {
	msg string
	n   atomic.Int32
}

func (c *counter) Enabled(context.Context, slog.Level) bool { return true }
func (c *counter) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *counter) WithGroup(string) slog.Handler            { return c }
func (c *counter) Handle(_ context.Context, r slog.Record) error {
	if r.Message == c.msg {
		c.n.Add(1)
	}
	return nil
}

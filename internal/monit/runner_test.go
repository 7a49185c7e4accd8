package monit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

func script(t *testing.T, dir, name, body string) string {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func nextEvent(t *testing.T, p supervise.Process) supervise.ProcessEvent {
	t.Helper()
	select {
	case ev := <-p.Events():
		return ev
	case <-time.After(20 * time.Second):
		t.Fatal("no event")
	}
	return supervise.ProcessEvent{}
}

// TestProgramRunner: the start program daemonizes and writes the pid file;
// its environment carries MONIT_*; the stop program ends the process; a
// start program that fails, or a pid file that never shows, is an exit.
func TestProgramRunner(t *testing.T) {
	dir := t.TempDir()
	pidPath := filepath.Join(dir, "x.pid")
	envPath := filepath.Join(dir, "env")
	start := script(t, dir, "start", "env > "+envPath+"\nsleep 100000 </dev/null >/dev/null 2>&1 &\necho $! > "+pidPath+"\n")
	stop := script(t, dir, "stop", "kill $(cat "+pidPath+")\n")
	svc := &monitrc.Service{Name: "x", Type: monitrc.TypeProcess, PidFile: pidPath,
		Start: &monitrc.Program{Argv: []string{start}, Timeout: 10 * time.Second},
		Stop:  &monitrc.Program{Argv: []string{stop}, Timeout: 10 * time.Second}}
	r := &ProgramRunner{Service: svc, Host: "vm-1"}
	p, err := r.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, p)
	data, _ := os.ReadFile(pidPath)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if !ev.Running || ev.ExecPID != pid || p.PID() != pid {
		t.Fatalf("running: %+v, pid file %d", ev, pid)
	}
	env, _ := os.ReadFile(envPath)
	for _, want := range []string{"MONIT_SERVICE=x\n", "MONIT_HOST=vm-1\n", "MONIT_EVENT=Started\n"} {
		if !strings.Contains(string(env), want) {
			t.Errorf("environment lacks %q", want)
		}
	}
	// A second start finds the live process and does not run the program.
	os.Remove(envPath)
	p2, err := r.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, p2); !ev.Running || ev.ExecPID != pid {
		t.Fatalf("adopted: %+v", ev)
	}
	if _, err := os.Stat(envPath); err == nil {
		t.Fatal("the start program ran for a live process")
	}
	if err := p.Signal(syscall.SIGTERM); err != nil { // runs the stop program
		t.Fatal(err)
	}
	if ev := nextEvent(t, p); ev.Running {
		t.Fatalf("exit: %+v", ev)
	}
	if ev := nextEvent(t, p2); ev.Running {
		t.Fatalf("exit seen by the second watcher: %+v", ev)
	}

	fail := &ProgramRunner{Service: &monitrc.Service{Name: "f", Type: monitrc.TypeProcess, PidFile: filepath.Join(dir, "none.pid"),
		Start: &monitrc.Program{Argv: []string{script(t, dir, "fail", "exit 3\n")}, Timeout: 300 * time.Millisecond}}}
	p, _ = fail.Start(context.Background())
	// As monit: the start program's status does not count, only the
	// process it should leave: none after the timeout.
	if ev := nextEvent(t, p); !strings.HasSuffix(ev.Exit.Err, "(start program: exit status 3)") {
		t.Fatalf("failed start: %+v", ev)
	}
	slow := &ProgramRunner{Service: &monitrc.Service{Name: "s", Type: monitrc.TypeProcess, PidFile: filepath.Join(dir, "none.pid"),
		Start: &monitrc.Program{Argv: []string{script(t, dir, "nothing", "exit 0\n")}, Timeout: 300 * time.Millisecond}}}
	p, _ = slow.Start(context.Background())
	if ev := nextEvent(t, p); !strings.HasPrefix(ev.Exit.Err, "no process in ") {
		t.Fatalf("timeout: %+v", ev)
	}
	// A pid file naming a dead or foreign pid is not trusted.
	os.WriteFile(filepath.Join(dir, "stale.pid"), []byte("999999999\n"), 0o644)
	if _, _, err := livePid(filepath.Join(dir, "stale.pid"), owner{}); err == nil {
		t.Fatal("stale pid trusted")
	}
}

// TestFailedStartEndsItsSession: a start program that fails leaves
// nothing behind: what it started in its session is killed when the start
// fails (no process in the pid file by the timeout), so that retries do
// not pile its children up.
func TestFailedStartEndsItsSession(t *testing.T) {
	dir := t.TempDir()
	child := filepath.Join(dir, "child.pid")
	r := &ProgramRunner{Service: &monitrc.Service{Name: "leaky", Type: monitrc.TypeProcess,
		PidFile: filepath.Join(dir, "none.pid"),
		Start: &monitrc.Program{Argv: []string{script(t, dir, "leak", "sleep 1000 &\necho $! > "+child+"\nexit 1\n")},
			Timeout: 300 * time.Millisecond}}}
	p, err := r.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, p); ev.Running {
		t.Fatalf("started: %+v", ev)
	}
	b, err := os.ReadFile(child)
	if err != nil {
		t.Fatal(err)
	}
	// The kill is sent before the exit is reported: the child ends now.
	awaitEnd(t, string(b))
}

// TestFailedCheckStartEndsItsSession: a check's start program (a file
// check's mount-style program, run again at every cycle the file is
// missing) that fails has what it started in its session killed as it
// exits, through the engine's own spawner as through Options.Spawn's.
func TestFailedCheckStartEndsItsSession(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "child")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	leak := script(t, dir, "leak", "sleep 1000 &\necho $! > "+fifo+"\nexit 1\n")
	f, err := monitrc.Parse("f", []byte("check file mounter with path "+filepath.Join(dir, "missing")+
		"\n  start program \""+leak+"\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	svc := f.Services[0]
	e := NewEngineWith(&monitrc.Config{Cycle: time.Second, Services: f.Services},
		map[string]Unit{svc.Name: NewCheckUnit(svc, true)}, EngineOptions{Host: "h"})
	t.Cleanup(e.endSpawned)
	e.cycle(context.Background()) // missing: the start program runs
	b, err := os.ReadFile(fifo)   // its child's pid, written just before it fails
	if err != nil {
		t.Fatal(err)
	}
	awaitEnd(t, string(b))
}

// awaitEnd waits (up to testGuard) for the process whose pid is in s to
// end, and fails the test if it does not (killing it then).
func awaitEnd(t *testing.T, s string) {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // gone (and reaped) already
	}
	defer unix.Close(fd)
	n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(testGuard/time.Millisecond))
	for errors.Is(err, unix.EINTR) { // the runtime's signals; the guard starts over, as only a failure waits it out
		n, err = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(testGuard/time.Millisecond))
	}
	if err != nil || n != 1 {
		unix.Kill(pid, unix.SIGKILL)
		t.Fatalf("the failed start's child %d is still running (%v)", pid, err)
	}
}

// testGuard bounds a wait that only a failure makes long.
const testGuard = 20 * time.Second

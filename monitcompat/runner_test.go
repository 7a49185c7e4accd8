package monitcompat

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/monitrc"
	"github.com/vigil-bosh/vigil/supervise"
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
		Start: &monitrc.Program{Argv: []string{script(t, dir, "fail", "exit 3\n")}, Timeout: 10 * time.Second}}}
	p, _ = fail.Start(context.Background())
	if ev := nextEvent(t, p); ev.Exit.Err != "start program: exit status 3" {
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
	if _, _, ok := livePid(filepath.Join(dir, "stale.pid")); ok {
		t.Fatal("stale pid trusted")
	}
}

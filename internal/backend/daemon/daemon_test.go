package daemon

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/pidfile"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/testproc"
	"github.com/vigil-bosh/vigil/internal/testroot"
)

func TestMain(m *testing.M) {
	testproc.Main()
	os.Exit(m.Run())
}

type harness struct {
	t      testing.TB
	root   *testroot.Root
	layout boshpath.Layout
	rep    *testproc.Listener
	d      *Daemon
	c      *control.Client
	done   chan error
	cancel context.CancelFunc
	// leaveRunning starts the next daemon in VM mode (see Config.LeaveRunning).
	leaveRunning bool
	logger       *slog.Logger // the next daemon's Config.Log
}

func newHarness(t testing.TB) *harness {
	r := testroot.New(t, "")
	return &harness{t: t, root: r, layout: r.Layout, rep: r.Rep}
}

// pr is one process entry for writeJob: a name, a testproc behaviour and
// extra environment.
type pr struct {
	name, behaviour string
	env             []string
}

// writeJob writes ROOT/jobs/NAME/config/bpm.yml running the test binary.
func (h *harness) writeJob(name string, procs ...pr) {
	tps := make([]testroot.Proc, len(procs))
	for i, p := range procs {
		tps[i] = testroot.Proc{Name: p.name, Behaviour: p.behaviour, Env: p.env}
	}
	h.root.Job(name, tps...)
}

// writeOne writes a job of one process of the test binary with a
// behaviour, extra environment and more process-level YAML.
func (h *harness) writeOne(job, name, behaviour, yaml string, env ...string) {
	h.root.Job(job, testroot.Proc{Name: name, Behaviour: behaviour, Env: env, YAML: yaml})
}

func (h *harness) writeFile(job, content string) { h.root.Config(job, content) }

func (h *harness) start(timing supervise.Timing) {
	self, _ := os.Executable()
	d, err := New(Config{Layout: h.layout, Init: self, InitEnv: []string{"GORACE=" + testproc.NoRaceExitDelay}, Timing: timing,
		NoIsolation: true, LeaveRunning: h.leaveRunning, Log: h.logger})
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.d, h.cancel, h.done = d, cancel, make(chan error, 1)
	go func() { h.done <- d.Run(ctx) }()
	h.t.Cleanup(func() { h.stop() })
	guard := time.NewTimer(testproc.Guard)
	defer guard.Stop()
	select {
	case <-d.Ready():
	case err := <-h.done:
		h.cancel = nil // nothing left to stop
		h.t.Fatalf("daemon ended early: %v", err)
	case <-guard.C: // a failure guard only
		h.t.Fatalf("the daemon was not ready (supervising) within %s", testproc.Guard)
	}
	h.c = control.NewClient(h.layout.ControlSocket())
}

// stop ends the daemon as SIGTERM would and returns Run's result.
func (h *harness) stop() error {
	if h.cancel == nil {
		return nil
	}
	h.cancel()
	h.cancel = nil
	return <-h.done
}

func (h *harness) status(job, p string) control.ProcessStatus {
	h.t.Helper()
	st, err := h.c.Status(h.t.Context())
	if err != nil {
		h.t.Fatal(err)
	}
	for _, ps := range st.Processes {
		if ps.Job == job && ps.Process == p {
			return ps
		}
	}
	h.t.Fatalf("no process %s/%s in %+v", job, p, st)
	return control.ProcessStatus{}
}

// waitFor blocks on the daemon's change notifications until cond holds.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	guard := time.NewTimer(testproc.Guard)
	defer guard.Stop()
	for {
		changed := h.d.Changes()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-guard.C:
			h.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func alive(pid int) bool { return unix.Kill(pid, 0) == nil }

func TestRestartAfterSIGKILL(t *testing.T) {
	h := newHarness(t)
	h.writeJob("web", pr{"server", "serve", nil})
	h.start(supervise.Timing{})
	first := h.rep.Expect(t, "ready")
	st := h.status("web", "server")
	if pid, _ := pidfile.Read(h.layout.PidFile("web", "server")); st.State != "running" || pid != st.PID || st.ExecPID != first.PID {
		t.Fatalf("status %+v, pid file %d, executable %d", st, pid, first.PID)
	}
	unix.Kill(first.PID, unix.SIGKILL)
	second := h.rep.Expect(t, "ready")
	if second.PID == first.PID {
		t.Fatal("no new process")
	}
	h.waitFor("the restart to show", func() bool { return h.status("web", "server").ExecPID == second.PID })
	st = h.status("web", "server")
	if st.Restarts != 1 || st.LastExit == nil || st.LastExit.Signal != "SIGKILL" {
		t.Fatalf("after the kill: %+v", st)
	}
	if pid, _ := pidfile.Read(h.layout.PidFile("web", "server")); pid != st.PID {
		t.Fatalf("pid file %d, status %d", pid, st.PID)
	}
}

func TestCrashLoopBacksOff(t *testing.T) {
	h := newHarness(t)
	h.writeJob("flaky", pr{"crash", "exit", []string{testproc.EnvCode + "=1"}})
	h.start(supervise.Timing{})
	for range 3 {
		h.rep.Expect(t, "exiting 1")
	}
	h.waitFor("backoff", func() bool { return h.status("flaky", "crash").State == "backoff" })
	st := h.status("flaky", "crash")
	if st.Restarts < 2 || st.LastExit.Code != 1 || st.LastExit.Description != "exited with code 1" {
		t.Fatalf("status %+v", st)
	}
	// A stop during backoff ends the loop at once.
	if _, err := h.c.Act(t.Context(), control.ActionRequest{Action: "stop", Job: "flaky"}); err != nil {
		t.Fatal(err)
	}
	if st := h.status("flaky", "crash"); st.State != "stopped" || st.Wanted != "down" {
		t.Fatalf("after stop: %+v", st)
	}
}

// TestStopLadder stops a process that ignores TERM and QUIT and has a
// grandchild: QUIT follows TERM, then everything is killed.
func TestStopLadder(t *testing.T) {
	h := newHarness(t)
	h.writeJob("stubborn", pr{"main", "grandchild", []string{testproc.EnvIgnore + "=TERM,QUIT"}})
	// QuitTimeout leaves the child the time to report the QUIT it ignores
	// before the kill, even on a loaded machine.
	h.start(supervise.Timing{StopTimeout: 50 * time.Millisecond, QuitTimeout: time.Second})
	grand := h.rep.Expect(t, "grandchild").Fields()[0]
	h.rep.Expect(t, "ready") // both have their handlers installed
	h.rep.Expect(t, "ready")
	pidPath := h.layout.PidFile("stubborn", "main")
	initPID, err := pidfile.Read(pidPath)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := h.c.Act(t.Context(), control.ActionRequest{Action: "stop", Job: "stubborn", Process: "main"})
	if err != nil || ps[0].State != "stopped" {
		t.Fatalf("stop: %+v %v", ps, err)
	}
	h.rep.Expect(t, "signal TERM")
	h.rep.Expect(t, "signal QUIT")
	if e := ps[0].LastExit; e == nil || e.Signal != "SIGKILL" || e.StopStep != control.StepKill || e.StoppedBy != "SIGKILL" ||
		!strings.HasPrefix(e.Description, "stopped by SIGKILL after 1.") {
		t.Fatalf("last exit %+v", ps[0].LastExit)
	}
	// Each escalation is an event, in order, before the exit.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	events, _ := h.d.Events(ctx, 64)
	var seen []string
	for ev := range events {
		if ev.Job == "stubborn" && (ev.Kind == control.EventEscalated || ev.Kind == control.EventExited) {
			seen = append(seen, ev.Kind+" "+strings.Fields(ev.Message)[0])
		}
		if ev.Kind == control.EventStopped {
			cancel()
		}
	}
	if want := []string{"escalated SIGQUIT", "escalated SIGKILL", "exited stopped"}; !slices.Equal(seen, want) {
		t.Fatalf("events %q, want %q", seen, want)
	}
	for _, pid := range []int{initPID, grand} {
		if alive(pid) {
			t.Fatalf("pid %d survived the stop", pid)
		}
	}
	if _, err := os.Stat(pidPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("pid file left: %v", err)
	}
	// Stopping a stopped process succeeds; starting brings it back.
	if _, err := h.c.Act(t.Context(), control.ActionRequest{Action: "stop", Job: "stubborn"}); err != nil {
		t.Fatal(err)
	}
	if ps, err := h.c.Act(t.Context(), control.ActionRequest{Action: "start", Job: "stubborn"}); err != nil || ps[0].State != "running" {
		t.Fatalf("start: %+v %v", ps, err)
	}
}

func TestShutdownStopsEverythingInParallel(t *testing.T) {
	h := newHarness(t)
	h.writeJob("a", pr{"one", "serve", nil}, pr{"two", "serve", nil})
	h.writeJob("b", pr{"b", "serve", []string{testproc.EnvIgnore + "=TERM"}})
	h.start(supervise.Timing{StopTimeout: 50 * time.Millisecond, QuitTimeout: 50 * time.Millisecond})
	var pids []int
	for range 3 {
		pids = append(pids, h.rep.Expect(t, "ready").PID)
	}
	if err := h.stop(); err != nil {
		t.Fatalf("Run returned %v", err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Fatalf("pid %d left after shutdown", pid)
		}
	}
	if _, err := os.Stat(h.layout.ControlSocket()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("control socket left: %v", err)
	}
}

func TestSignalAndErrors(t *testing.T) {
	h := newHarness(t)
	h.writeJob("web", pr{"server", "serve", nil})
	h.start(supervise.Timing{})
	h.rep.Expect(t, "ready")
	if err := h.c.Signal(t.Context(), control.SignalRequest{Job: "web", Process: "server", Signal: "usr1"}); err != nil {
		t.Fatal(err)
	}
	h.rep.Expect(t, "signal USR1")
	tests := []struct {
		req  control.ActionRequest
		kind error
		msg  string
	}{
		{control.ActionRequest{Action: "start", Job: "nope"}, control.ErrNotFound, "no job nope is supervised"},
		{control.ActionRequest{Action: "start", Job: "web", Process: "other"}, control.ErrNotFound, `process "other" not present in job configuration`},
		{control.ActionRequest{Action: "start", Job: "../etc"}, control.ErrBadRequest, "job: name"},
		{control.ActionRequest{Action: "explode", Job: "web"}, control.ErrBadRequest, `unknown action "explode"`},
	}
	for _, tt := range tests {
		_, err := h.c.Act(t.Context(), tt.req)
		if !errors.Is(err, tt.kind) || !strings.HasPrefix(err.Error(), tt.msg) {
			t.Errorf("%+v: got %v, want %v %q", tt.req, err, tt.kind, tt.msg)
		}
	}
	err := h.c.Signal(t.Context(), control.SignalRequest{Job: "web", Process: "server", Signal: "SIGNOPE"})
	if !errors.Is(err, control.ErrBadRequest) {
		t.Fatalf("bad signal: %v", err)
	}
}

func TestParseSignal(t *testing.T) {
	for in, want := range map[string]syscall.Signal{"HUP": syscall.SIGHUP, "sigusr2": syscall.SIGUSR2, "15": syscall.SIGTERM, "SIGQUIT": syscall.SIGQUIT} {
		if got, err := control.ParseSignal(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	for _, in := range []string{"", "0", "99", "FOO"} {
		if _, err := control.ParseSignal(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

// TestStopDuringAStuckStart: a daemon told to stop while a start has not
// settled (its pre_start hook hangs, with a time limit far away) stops at
// once: the first load's wait for the start ends, the hook is stopped with
// its process, and Run returns. It used to wait for the start to settle
// first, ignoring SIGTERM for as long as the start hung.
func TestStopDuringAStuckStart(t *testing.T) {
	h := newHarness(t)
	self := h.root.Self
	hook := h.layout.JobBinDir("web") + "/hang"
	os.MkdirAll(h.layout.JobBinDir("web"), 0o755)
	os.WriteFile(hook, []byte("#!/bin/sh\n"+testproc.EnvBehaviour+"=gate exec "+self+"\n"), 0o755)
	h.writeOne("web", "server", "serve", "  hooks: {pre_start: "+hook+"}\n",
		testproc.EnvGate+"="+h.layout.Root()+"/never")
	d, err := New(Config{Layout: h.layout, Init: self, InitEnv: []string{"GORACE=" + testproc.NoRaceExitDelay},
		HookTimeout: time.Hour, NoIsolation: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	hooked := h.rep.Expect(t, "hook")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(testproc.Guard):
		t.Fatalf("the daemon did not stop within %s of being told to, with a start stuck", testproc.Guard)
	}
	if alive(hooked.PID) {
		t.Errorf("the hook %d outlived the daemon's stop", hooked.PID)
	}
}

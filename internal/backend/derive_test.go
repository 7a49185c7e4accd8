package backend

import (
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

// TestDerive runs sequences of published statuses through derive and
// checks the kinds of the events of each step.
func TestDerive(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	id := supervise.ID{Job: "web", Process: "server"}
	st := func(state supervise.State, gen, restarts int, f ...func(*supervise.Status)) supervise.Status {
		s := supervise.Status{ID: id, State: state, WantUp: true, Gen: gen, Restarts: restarts}
		if state == supervise.Running || state == supervise.Starting || state == supervise.Stopping {
			s.PID = 100 + gen
		}
		for _, fn := range f {
			fn(&s)
		}
		return s
	}
	exit := func(code int, sig syscall.Signal, oom bool, sec int) func(*supervise.Status) {
		return func(s *supervise.Status) {
			s.LastExit = &supervise.Exit{Code: code, Signal: sig, OOM: oom, At: t0.Add(time.Duration(sec) * time.Second)}
		}
	}
	down := func(s *supervise.Status) { s.WantUp = false }
	ladder := func(step supervise.LadderStep, sec int) func(*supervise.Status) {
		return func(s *supervise.Status) {
			s.Stop = &supervise.Ladder{Step: step, Signal: syscall.SIGTERM, Began: t0, StepAt: t0.Add(time.Duration(sec) * time.Second)}
		}
	}
	ready := func(s *supervise.Status) { s.Ready = true }
	health := func(h string) func(*supervise.Status) { return func(s *supervise.Status) { s.Health = h } }
	unmonitored := func(s *supervise.Status) { s.Unmonitored = true }
	probe := func(ok bool, failures, sec int) func(*supervise.Status) {
		return func(s *supervise.Status) {
			s.Probes = []supervise.ProbeResult{{Role: supervise.Liveness, OK: ok, Failures: failures, Message: "503",
				At: t0.Add(time.Duration(sec) * time.Second)}}
		}
	}
	type step struct {
		st    supervise.Status
		kinds []string
	}
	for _, c := range []struct {
		name  string
		from  tracked
		steps []step
	}{
		{name: "start, crash, immediate restart", steps: []step{
			{st(supervise.Starting, 1, 0), nil},
			{st(supervise.Running, 1, 0), []string{"started"}},
			{st(supervise.Starting, 2, 1, exit(1, 0, false, 5)), []string{"exited"}},
			{st(supervise.Running, 2, 1, exit(1, 0, false, 5)), []string{"restarted"}},
		}},
		{name: "killed, backoff, restart", steps: []step{
			{st(supervise.Running, 1, 0), []string{"started"}},
			{st(supervise.Backoff, 1, 1, exit(0, syscall.SIGKILL, false, 1)), []string{"exited", "backoff"}},
			{st(supervise.Starting, 2, 1, exit(0, syscall.SIGKILL, false, 1)), nil},
			{st(supervise.Running, 2, 1, exit(0, syscall.SIGKILL, false, 1)), []string{"restarted"}},
		}},
		{name: "oom, then gave up", steps: []step{
			{st(supervise.Running, 1, 0), []string{"started"}},
			{st(supervise.Failed, 1, 0, exit(0, syscall.SIGKILL, true, 1)), []string{"oom-killed", "gave-up"}},
		}},
		{name: "stop by request", steps: []step{
			{st(supervise.Running, 1, 0), []string{"started"}},
			{st(supervise.Stopping, 1, 0, down), []string{"stopping"}},
			{st(supervise.Stopped, 1, 0, down, exit(0, 0, false, 2)), []string{"exited", "stopped"}},
			{st(supervise.Stopped, 1, 0, down, exit(0, 0, false, 2)), nil},
		}},
		{name: "a stop that escalates", steps: []step{
			{st(supervise.Running, 1, 0), []string{"started"}},
			{st(supervise.Stopping, 1, 0, down, ladder(supervise.StepSignal, 0)), []string{"stopping"}},
			{st(supervise.Stopping, 1, 0, down, ladder(supervise.StepQuit, 15)), []string{"escalated"}},
			{st(supervise.Stopping, 1, 0, down, ladder(supervise.StepQuit, 15)), nil},
			{st(supervise.Stopping, 1, 0, down, ladder(supervise.StepKill, 17)), []string{"escalated"}},
			{st(supervise.Stopped, 1, 0, down, exit(0, syscall.SIGKILL, false, 17)), []string{"exited", "stopped"}},
		}},
		{name: "restart by request is a start", steps: []step{
			{st(supervise.Running, 1, 3), []string{"started"}},
			{st(supervise.Stopping, 1, 3), []string{"stopping"}},
			{st(supervise.Starting, 2, 3, exit(0, 0, false, 2)), []string{"exited"}},
			{st(supervise.Running, 2, 3, exit(0, 0, false, 2)), []string{"started"}},
		}},
		{name: "spawn failure backs off", steps: []step{
			{st(supervise.Starting, 1, 0), nil},
			{st(supervise.Backoff, 1, 1, func(s *supervise.Status) {
				s.LastExit = &supervise.Exit{Err: "no such file", At: t0}
			}), []string{"exited", "backoff"}},
		}},
		{name: "probes, health and readiness", steps: []step{
			{st(supervise.Running, 1, 0, ready, health("healthy")), []string{"started"}},
			{st(supervise.Running, 1, 0, ready, health("healthy"), probe(true, 0, 1)), nil},
			{st(supervise.Running, 1, 0, ready, health("healthy"), probe(false, 1, 2)), []string{"probe-failed"}},
			{st(supervise.Running, 1, 0, ready, health("healthy"), probe(false, 2, 3)), nil},
			{st(supervise.Running, 1, 0, health("unhealthy"), probe(false, 3, 4)), []string{"unhealthy", "not-ready"}},
			{st(supervise.Running, 1, 0, health("unhealthy"), probe(false, 3, 4)), nil},
			{st(supervise.Running, 1, 0, ready, health("healthy"), probe(true, 0, 5)), []string{"probe-recovered", "healthy", "ready"}},
		}},
		{name: "unmonitor and monitor", steps: []step{
			{st(supervise.Running, 1, 0), []string{"started"}},
			{st(supervise.Running, 1, 0, unmonitored), []string{"unmonitored"}},
			{st(supervise.Stopped, 1, 0, unmonitored, exit(1, 0, false, 1)), []string{"exited", "stopped"}},
			{st(supervise.Starting, 2, 0, exit(1, 0, false, 1)), []string{"monitored"}},
		}},
		{name: "a new supervisor after a reload", from: tracked{last: statusOf(st(supervise.Stopped, 7, 6)), inst: 7, upRestarts: 6},
			steps: []step{
				{supervise.Status{ID: id}, nil},
				{st(supervise.Running, 1, 0), []string{"started"}},
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := c.from
			for i, s := range c.steps {
				evs := derive(&tr, statusOf(s.st), s.st.Gen, t0.Add(time.Duration(i)*time.Second))
				var kinds []string
				for _, ev := range evs {
					kinds = append(kinds, ev.Kind)
					if ev.Job != "web" || ev.Process != "server" || ev.Restarts != s.st.Restarts {
						t.Errorf("step %d: event %+v", i, ev)
					}
				}
				if !slices.Equal(kinds, s.kinds) {
					t.Fatalf("step %d (%s gen %d): events %v, want %v", i, s.st.State, s.st.Gen, kinds, s.kinds)
				}
			}
		})
	}
}

// TestDeriveDetails checks what exit and restart events carry.
func TestDeriveDetails(t *testing.T) {
	t0 := time.Now()
	id := supervise.ID{Job: "web", Process: "server"}
	running := supervise.Status{ID: id, State: supervise.Running, WantUp: true, Gen: 1, PID: 41}
	var tr tracked
	derive(&tr, statusOf(running), running.Gen, t0)
	crashed := supervise.Status{ID: id, State: supervise.Starting, WantUp: true, Gen: 2, PID: 42, Restarts: 1,
		LastExit: &supervise.Exit{Code: 3, At: t0}}
	evs := derive(&tr, statusOf(crashed), crashed.Gen, t0.Add(time.Millisecond))
	if len(evs) != 1 || evs[0].PID != 41 || evs[0].Exit == nil || evs[0].Exit.Code != 3 ||
		evs[0].Message != "exited with code 3" || evs[0].Restarts != 1 {
		t.Fatalf("exit event %+v", evs)
	}
	up := crashed
	up.State = supervise.Running
	afterUp := tr
	evs = derive(&afterUp, statusOf(up), up.Gen, t0.Add(6*time.Millisecond))
	if len(evs) != 1 || evs[0].Kind != control.EventRestarted || evs[0].PID != 42 ||
		evs[0].DownSeconds < 0.0049 || evs[0].DownSeconds > 0.0051 {
		t.Fatalf("restart event %+v", evs)
	}
	failed := supervise.Status{ID: id, State: supervise.Failed, Gen: 1, LastExit: &supervise.Exit{Signal: syscall.SIGKILL, OOM: true}}
	afterFail := tr
	evs = derive(&afterFail, statusOf(failed), failed.Gen, t0)
	if len(evs) != 2 || evs[0].Exit == nil || !evs[0].Exit.OOM || evs[0].Exit.Signal != "SIGKILL" ||
		!strings.Contains(evs[1].Message, "OOM") {
		t.Fatalf("oom events %+v", evs)
	}
}

// TestDeriveEscalation checks what a stop's escalation and its end carry:
// the event names the signal and when it was sent, and the exit says how
// the stop ended, apart from a clean one.
func TestDeriveEscalation(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	id := supervise.ID{Job: "web", Process: "server"}
	stopping := supervise.Status{ID: id, State: supervise.Stopping, Gen: 1, PID: 41,
		Stop: &supervise.Ladder{Step: supervise.StepSignal, Signal: syscall.SIGTERM, Began: t0, StepAt: t0}}
	var tr tracked
	derive(&tr, statusOf(stopping), 1, t0)
	if ps := ProcessStatus(stopping); ps.Stop == nil || ps.Stop.Step != control.StepSignal || ps.Stop.Signal != "SIGTERM" {
		t.Fatalf("stopping status %+v", ps.Stop)
	}
	quit := stopping
	quit.Stop = &supervise.Ladder{Step: supervise.StepQuit, Signal: syscall.SIGQUIT, Began: t0, StepAt: t0.Add(15 * time.Second)}
	evs := derive(&tr, statusOf(quit), 1, t0.Add(15*time.Second))
	if len(evs) != 1 || evs[0].Kind != control.EventEscalated || evs[0].Message != "SIGQUIT after 15s (quit)" || evs[0].PID != 41 {
		t.Fatalf("escalation %+v", evs)
	}
	killed := supervise.Status{ID: id, State: supervise.Stopped, Gen: 1, LastExit: &supervise.Exit{Signal: syscall.SIGKILL, At: t0.Add(17 * time.Second),
		Stop: &supervise.Ladder{Step: supervise.StepKill, Signal: syscall.SIGKILL, Began: t0, After: 17 * time.Second}}}
	evs = derive(&tr, statusOf(killed), 1, t0.Add(17*time.Second))
	e := evs[0].Exit
	if evs[0].Kind != control.EventExited || e.StopStep != control.StepKill || e.StoppedBy != "SIGKILL" || e.StopSeconds != 17 ||
		e.Description != "stopped by SIGKILL after 17s (killed by signal SIGKILL)" {
		t.Fatalf("exit after an escalated stop %+v %+v", evs[0], e)
	}
	for i, name := range []string{control.StepSignal, control.StepQuit, control.StepKill, control.StepForceKill} {
		if got := supervise.LadderStep(i + 1).String(); got != name {
			t.Errorf("step %d is %q in supervise, %q on the wire", i+1, got, name)
		}
	}
}

// statusOf is the wire status of st, as the hub keeps it.
func statusOf(st supervise.Status) *control.ProcessStatus {
	ps := ProcessStatus(st)
	return &ps
}

package supervise

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// in returns a machine in state s, as it would be after normal use.
func in(s State) machine {
	m := machine{state: s, gen: 1, startedAt: t0, since: t0}
	switch s {
	case Starting, Running, Backoff:
		m.wantUp = true
	case Stopping:
		m.stage = 1
	case Failed:
		m.wantUp = true
	}
	return m
}

func fxs(kinds ...effectKind) []effectKind { return kinds }

// startsAgain reports whether m's stop leads to a new start.
func startsAgain(m machine) bool { return m.after.then == thenStart || m.after.then == thenRestart }

func kindsOf(fx []effect) []effectKind {
	out := make([]effectKind, len(fx))
	for i, f := range fx {
		out[i] = f.kind
	}
	return out
}

// TestNextEveryPair covers every (state, event) pair with its expected state
// and effects.
func TestNextEveryPair(t *testing.T) {
	ev := func(k eventKind) event { return event{kind: k, exit: Exit{Code: 1}, role: Liveness, gen: 1} }
	later := t0.Add(time.Minute) // long enough after the start to reset backoff
	type want struct {
		state State
		fx    []effectKind
	}
	table := map[State]map[eventKind]want{
		Stopped: {
			evStart: {Starting, fxs(fxSpawn)}, evStop: {Stopped, nil}, evRestart: {Starting, fxs(fxSpawn)},
			evRunning: {Stopped, nil}, evExit: {Stopped, nil}, evTimer: {Stopped, nil},
			evMonitor: {Starting, fxs(fxSpawn)}, evUnmonitor: {Stopped, nil},
			evProbe: {Stopped, nil}, evNotify: {Stopped, nil},
			evReaped: {Stopped, nil}, evAdopt: {Stopped, nil},
		},
		Starting: {
			evStart: {Starting, nil}, evStop: {Stopping, fxs(fxSignal, fxArm)}, evRestart: {Stopping, fxs(fxSignal, fxArm)},
			evRunning: {Running, nil}, evExit: {Starting, fxs(fxSpawn)}, evTimer: {Starting, nil},
			evMonitor: {Starting, nil}, evUnmonitor: {Starting, nil},
			evProbe: {Starting, nil}, evNotify: {Starting, nil},
			evReaped: {Starting, nil}, evAdopt: {Starting, nil},
		},
		Running: {
			evStart: {Running, nil}, evStop: {Stopping, fxs(fxSignal, fxArm)}, evRestart: {Stopping, fxs(fxSignal, fxArm)},
			evRunning: {Running, nil}, evExit: {Starting, fxs(fxSpawn)}, evTimer: {Running, nil},
			evMonitor: {Running, nil}, evUnmonitor: {Running, nil},
			evProbe: {Running, nil}, evNotify: {Running, nil},
			evReaped: {Running, nil}, evAdopt: {Running, nil},
		},
		Backoff: {
			evStart: {Starting, fxs(fxDisarm, fxSpawn)}, evStop: {Stopped, fxs(fxDisarm)}, evRestart: {Starting, fxs(fxDisarm, fxSpawn)},
			evRunning: {Backoff, nil}, evExit: {Backoff, nil}, evTimer: {Starting, fxs(fxSpawn)},
			evMonitor: {Starting, fxs(fxDisarm, fxSpawn)}, evUnmonitor: {Stopped, fxs(fxDisarm)},
			evProbe: {Backoff, nil}, evNotify: {Backoff, nil},
			evReaped: {Backoff, nil}, evAdopt: {Backoff, nil},
		},
		Stopping: {
			evStart: {Stopping, nil}, evStop: {Stopping, nil}, evRestart: {Stopping, nil},
			evRunning: {Stopping, nil}, evExit: {Stopped, fxs(fxDisarm)}, evTimer: {Stopping, fxs(fxSignal, fxArm)},
			evMonitor: {Stopping, nil}, evUnmonitor: {Stopping, nil},
			evProbe: {Stopping, nil}, evNotify: {Stopping, nil},
			evReaped: {Stopping, nil}, evAdopt: {Stopping, nil},
		},
		Failed: {
			evStart: {Starting, fxs(fxSpawn)}, evStop: {Stopped, nil}, evRestart: {Starting, fxs(fxSpawn)},
			evRunning: {Failed, nil}, evExit: {Failed, nil}, evTimer: {Failed, nil},
			evMonitor: {Starting, fxs(fxSpawn)}, evUnmonitor: {Failed, nil},
			evProbe: {Failed, nil}, evNotify: {Failed, nil},
			evReaped: {Failed, nil}, evAdopt: {Failed, nil},
		},
	}
	for s := Stopped; s <= Failed; s++ {
		for k := evStart; k < numEventKinds; k++ {
			w, ok := table[s][k]
			if !ok {
				t.Fatalf("table lacks (%s, %s)", s, k)
			}
			t.Run(fmt.Sprintf("%s/%s", s, k), func(t *testing.T) {
				m, fx := next(in(s), ev(k), later, Timing{})
				if m.state != w.state || !slices.Equal(kindsOf(fx), w.fx) {
					t.Fatalf("got %s %v, want %s %v", m.state, kindsOf(fx), w.state, w.fx)
				}
				if m.state != s && !m.since.Equal(later) {
					t.Fatalf("since not updated on a state change")
				}
			})
		}
	}
}

func TestStopLadder(t *testing.T) {
	tm := Timing{StopSignal: syscall.SIGINT, StopTimeout: 7 * time.Second}
	m, fx := next(in(Running), event{kind: evStop}, t0, tm)
	if fx[0].sig != syscall.SIGINT || fx[1].d != 7*time.Second {
		t.Fatalf("first stage: %+v", fx)
	}
	m, fx = next(m, event{kind: evTimer}, t0, tm)
	if fx[0].kind != fxSignal || fx[0].sig != syscall.SIGQUIT || fx[1].d != 2*time.Second {
		t.Fatalf("second stage: %+v", fx)
	}
	m, fx = next(m, event{kind: evTimer}, t0, tm)
	if !slices.Equal(kindsOf(fx), fxs(fxKill, fxArm)) {
		t.Fatalf("third stage: %+v", fx)
	}
	m, fx = next(m, event{kind: evTimer}, t0, tm)
	if !slices.Equal(kindsOf(fx), fxs(fxForceKill, fxArm)) || m.state != Stopping {
		t.Fatalf("fourth stage: %+v", fx)
	}
	m, _ = next(m, event{kind: evExit, exit: Exit{Signal: syscall.SIGKILL}}, t0, tm)
	if m.state != Stopped || m.wantUp || m.lastExit.Signal != syscall.SIGKILL {
		t.Fatalf("after exit: %+v", m)
	}
}

// TestLadderIsRecorded: each step of a stop is in the machine's ladder as
// it is taken (the status shows it), and the exit that ends the stop keeps
// the last step and how long the stop took, so that a stop by SIGKILL
// after 17 s reads differently from a clean one.
func TestLadderIsRecorded(t *testing.T) {
	tm := Timing{StopSignal: syscall.SIGINT}
	m, _ := next(in(Running), event{kind: evStop}, t0, tm)
	steps := []struct {
		at     time.Duration
		step   LadderStep
		signal syscall.Signal
	}{{0, StepSignal, syscall.SIGINT}, {15 * time.Second, StepQuit, syscall.SIGQUIT}, {17 * time.Second, StepKill, syscall.SIGKILL}}
	for i, want := range steps {
		if i > 0 {
			m, _ = next(m, event{kind: evTimer}, t0.Add(want.at), tm)
		}
		l := m.ladder(m.stageAt)
		if l == nil || l.Step != want.step || l.Signal != want.signal || !l.StepAt.Equal(t0.Add(want.at)) || !l.Began.Equal(t0) || l.After != want.at {
			t.Fatalf("step %d: %+v", i, l)
		}
	}
	m, _ = next(m, event{kind: evExit, exit: Exit{Signal: syscall.SIGKILL}}, t0.Add(17200*time.Millisecond), tm)
	e := m.lastExit
	if e.Stop == nil || e.Stop.Step != StepKill || !e.Stop.Escalated() || e.Stop.Stopped() != "stopped by SIGKILL after 17.2s" {
		t.Fatalf("exit after the kill: %+v %+v", e, e.Stop)
	}
	if m.ladder(t0) != nil {
		t.Fatal("a ladder outside a stop")
	}

	m, _ = next(in(Running), event{kind: evStop}, t0, Timing{})
	m, _ = next(m, event{kind: evExit, exit: Exit{}}, t0.Add(120*time.Millisecond), Timing{})
	if e := m.lastExit; e.Stop.Escalated() || e.Stop.Stopped() != "stopped by SIGTERM after 120ms" {
		t.Fatalf("a clean stop: %+v", e.Stop)
	}
	m, _ = next(in(Running), event{kind: evExit, exit: Exit{Code: 1}}, t0, Timing{})
	if m.lastExit.Stop != nil {
		t.Fatalf("an exit nobody asked for has a ladder: %+v", m.lastExit.Stop)
	}
}

func TestQuickExitsBackOff(t *testing.T) {
	m := in(Running)
	now := t0
	var delays []time.Duration
	for range 4 {
		now = now.Add(time.Millisecond)
		var fx []effect
		m, fx = next(m, event{kind: evExit, exit: Exit{Code: 1}}, now, Timing{})
		if m.state == Backoff {
			delays = append(delays, fx[0].d)
			m, _ = next(m, event{kind: evTimer}, now.Add(fx[0].d), Timing{})
		} else {
			delays = append(delays, 0)
		}
		m, _ = next(m, event{kind: evRunning}, now, Timing{})
	}
	want := []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}
	if !slices.Equal(delays, want) || m.restarts != 4 {
		t.Fatalf("delays %v restarts %d, want %v and 4", delays, m.restarts, want)
	}
}

func TestRestartThenStartAgain(t *testing.T) {
	m, _ := next(in(Running), event{kind: evRestart}, t0, Timing{})
	if !m.wantUp || !startsAgain(m) {
		t.Fatalf("restart must remember to start: %+v", m)
	}
	m, fx := next(m, event{kind: evExit}, t0, Timing{})
	if m.state != Starting || !slices.Equal(kindsOf(fx), fxs(fxDisarm, fxSpawn)) || m.restarts != 0 {
		t.Fatalf("after the stop: %s %v restarts=%d", m.state, kindsOf(fx), m.restarts)
	}
	// A stop during a restart's stop phase cancels the start.
	m, _ = next(in(Running), event{kind: evRestart}, t0, Timing{})
	m, _ = next(m, event{kind: evStop}, t0, Timing{})
	m, _ = next(m, event{kind: evExit}, t0, Timing{})
	if m.state != Stopped {
		t.Fatalf("stop did not cancel the pending start: %s", m.state)
	}
}

func TestExitString(t *testing.T) {
	tests := []struct {
		e    Exit
		want string
	}{
		{Exit{Code: 3}, "exited with code 3"},
		{Exit{Signal: syscall.SIGKILL}, "killed by signal SIGKILL"},
		{Exit{Signal: syscall.SIGKILL, OOM: true}, "killed by the OOM killer"},
		{Exit{Err: "exec: no such file"}, "failed to start: exec: no such file"},
	}
	for _, tt := range tests {
		if got := tt.e.String(); got != tt.want {
			t.Errorf("%+v: got %q, want %q", tt.e, got, tt.want)
		}
	}
}

// TestUnmonitor: an unmonitored process that exits is left down; start and
// monitor supervise it again; stop works while unmonitored.
func TestUnmonitor(t *testing.T) {
	m, fx := next(in(Running), event{kind: evUnmonitor}, t0, Timing{})
	if !m.unmonitored || m.state != Running || fx != nil {
		t.Fatalf("unmonitor touched the process: %+v %v", m, fx)
	}
	m, fx = next(m, event{kind: evExit, exit: Exit{Code: 3}}, t0, Timing{})
	if m.state != Stopped || fx != nil || !m.wantUp || m.lastExit.Code != 3 {
		t.Fatalf("unmonitored exit: %+v %v", m, fx)
	}
	for _, k := range []eventKind{evStart, evMonitor, evRestart} {
		m2, fx := next(m, event{kind: k}, t0, Timing{})
		if m2.unmonitored || m2.state != Starting || !slices.Equal(kindsOf(fx), fxs(fxSpawn)) {
			t.Fatalf("event %s after unmonitor: %+v %v", k, m2, fx)
		}
	}
	m, _ = next(in(Running), event{kind: evUnmonitor}, t0, Timing{})
	m, fx = next(m, event{kind: evStop}, t0, Timing{})
	if m.state != Stopping || !m.unmonitored || !slices.Equal(kindsOf(fx), fxs(fxSignal, fxArm)) {
		t.Fatalf("stop while unmonitored: %+v %v", m, fx)
	}
}

// TestAdoptIsAnEvent: a machine that never ran takes a found process over
// as a spawn would (Running, wanted up, a generation of its own), keeping
// its unmonitored flag; any other machine ignores it.
func TestAdoptIsAnEvent(t *testing.T) {
	for _, unmonitored := range []bool{false, true} {
		m, fx := next(machine{since: t0, unmonitored: unmonitored}, event{kind: evAdopt}, later(t0), Timing{})
		if m.state != Running || !m.wantUp || m.gen != 1 || !m.startedAt.Equal(later(t0)) ||
			m.unmonitored != unmonitored || !slices.Equal(kindsOf(fx), fxs(fxAdopt)) {
			t.Fatalf("adopt (unmonitored %v): %+v %v", unmonitored, m, kindsOf(fx))
		}
	}
	m, fx := next(in(Stopped), event{kind: evAdopt}, t0, Timing{})
	if m.state != Stopped || fx != nil {
		t.Fatalf("adopt after a first run: %s %v", m.state, kindsOf(fx))
	}
}

// TestStopWaitsForTheReap: an exit reported while its process is still
// ending is held by a stopping machine until evReaped; a running one
// restarts at once.
func TestStopWaitsForTheReap(t *testing.T) {
	m, _ := next(in(Running), event{kind: evStop}, t0, Timing{})
	m, fx := next(m, event{kind: evExit, exit: Exit{Code: 7}, ending: true}, t0, Timing{})
	if m.state != Stopping || fx != nil || m.lastExit != nil || m.pending == nil {
		t.Fatalf("exit while ending: %+v %v", m, kindsOf(fx))
	}
	m, fx = next(m, event{kind: evReaped}, t0, Timing{})
	if m.state != Stopped || m.pending != nil || m.lastExit == nil || m.lastExit.Code != 7 ||
		!slices.Equal(kindsOf(fx), fxs(fxDisarm)) {
		t.Fatalf("after the reap: %+v %v", m, kindsOf(fx))
	}
	m, fx = next(in(Running), event{kind: evExit, exit: Exit{Code: 7}, ending: true}, later(t0), Timing{})
	if m.state != Starting || !slices.Equal(kindsOf(fx), fxs(fxSpawn)) {
		t.Fatalf("a running process's exit waited: %s %v", m.state, kindsOf(fx))
	}
}

func later(t time.Time) time.Time { return t.Add(time.Minute) }

// TestStartTimeout: with Timing.StartTimeout, every spawn arms the timer
// just before it (so a spawn that fails at once and backs off keeps the
// backoff's delay), running disarms it, and a start still not running when
// it fires has its tree killed (then the init, if that does not end it);
// its exit is a failed start saying why, restarted as a crash is.
func TestStartTimeout(t *testing.T) {
	tm := Timing{StartTimeout: 90 * time.Second}
	killed := in(Starting)
	killed.startKilled = true
	at := t0.Add(5 * time.Minute)
	rows := []struct {
		name  string
		m     machine
		ev    event
		state State
		fx    []effectKind
		d     time.Duration // of the fxArm, if any
	}{
		{"start", in(Stopped), event{kind: evStart}, Starting, fxs(fxArm, fxSpawn), 90 * time.Second},
		{"backoff over", in(Backoff), event{kind: evTimer}, Starting, fxs(fxArm, fxSpawn), 90 * time.Second},
		{"operator start in backoff", in(Backoff), event{kind: evStart}, Starting, fxs(fxDisarm, fxArm, fxSpawn), 90 * time.Second},
		{"running", in(Starting), event{kind: evRunning}, Running, fxs(fxDisarm), 0},
		{"timed out", in(Starting), event{kind: evTimer}, Starting, fxs(fxKill, fxArm), 5 * time.Second},
		{"kill did not end it", killed, event{kind: evTimer}, Starting, fxs(fxForceKill, fxArm), 5 * time.Second},
		{"running after the kill", killed, event{kind: evRunning}, Starting, nil, 0},
		{"exit after the kill", killed, event{kind: evExit, exit: Exit{Signal: syscall.SIGKILL}}, Starting, fxs(fxArm, fxSpawn), 90 * time.Second},
		{"stop after the kill", killed, event{kind: evStop}, Stopping, fxs(fxSignal, fxArm), 15 * time.Second},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			m, fx := next(r.m, r.ev, at, tm)
			if m.state != r.state || !slices.Equal(kindsOf(fx), r.fx) {
				t.Fatalf("got %s %v, want %s %v", m.state, kindsOf(fx), r.state, r.fx)
			}
			for _, f := range fx {
				if f.kind == fxArm && f.d != r.d {
					t.Errorf("armed for %s, want %s", f.d, r.d)
				}
			}
			if r.name == "exit after the kill" {
				if m.lastExit == nil || m.lastExit.Err != "did not report running within 1m30s" || m.restarts != 1 || m.startKilled {
					t.Errorf("exit after the kill: %+v, %d restarts, killed %v", m.lastExit, m.restarts, m.startKilled)
				}
			}
		})
	}
	// Without StartTimeout a start waits as long as it takes.
	if m, fx := next(in(Starting), event{kind: evTimer}, at, Timing{}); m.state != Starting || fx != nil {
		t.Errorf("no start timeout: %s %v", m.state, kindsOf(fx))
	}
}

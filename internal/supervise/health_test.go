package supervise

import (
	"context"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vigil-bosh/vigil/internal/supervise/restart"
)

func probe(m machine, role ProbeRole, ok bool, tm Timing) (machine, []effect) {
	return next(m, event{kind: evProbe, role: role, ok: ok, gen: m.gen}, t0.Add(time.Hour), tm)
}

func liveTiming(failures int) Timing {
	return Timing{Health: HealthTiming{Liveness: RoleTiming{Enabled: true, Failure: failures}}}
}

func TestLivenessRestartsAfterExactlyThreshold(t *testing.T) {
	tm := liveTiming(3)
	m := in(Running)
	var fx []effect
	for i := 1; i <= 2; i++ {
		m, fx = probe(m, Liveness, false, tm)
		if m.state != Running || fx != nil {
			t.Fatalf("failure %d already acted: %s %v", i, m.state, kindsOf(fx))
		}
	}
	m, _ = probe(m, Liveness, true, tm) // a success resets the count
	for range 2 {
		m, _ = probe(m, Liveness, false, tm)
	}
	if m.state != Running {
		t.Fatal("count not reset by a success")
	}
	m, fx = probe(m, Liveness, false, tm)
	if m.state != Stopping || !slices.Equal(kindsOf(fx), fxs(fxSignal, fxArm)) || !startsAgain(m) || m.restarts != 1 {
		t.Fatalf("third failure: %s %v %+v", m.state, kindsOf(fx), m)
	}
	m, fx = next(m, event{kind: evExit, exit: Exit{Signal: syscall.SIGTERM}}, t0.Add(time.Hour), tm)
	if m.state != Starting || !slices.Equal(kindsOf(fx), fxs(fxDisarm, fxSpawn)) || m.gen != 2 {
		t.Fatalf("after the stop: %s %v", m.state, kindsOf(fx))
	}
	// A result about the previous instance is ignored.
	m, _ = next(m, event{kind: evRunning}, t0, tm)
	m2, fx := next(m, event{kind: evProbe, role: Liveness, gen: 1}, t0, liveTiming(1))
	if m2.state != Running || fx != nil {
		t.Fatal("a stale probe result acted")
	}
}

func TestReadinessNeverRestarts(t *testing.T) {
	tm := Timing{Health: HealthTiming{Readiness: RoleTiming{Enabled: true, Failure: 1, Success: 2}}}
	m := in(Running)
	m, _ = probe(m, Readiness, true, tm)
	if _, ready := healthOf(m, tm.Health); ready {
		t.Fatal("ready before success_threshold")
	}
	m, _ = probe(m, Readiness, true, tm)
	if _, ready := healthOf(m, tm.Health); !ready {
		t.Fatal("not ready after success_threshold")
	}
	for range 10 {
		var fx []effect
		m, fx = probe(m, Readiness, false, tm)
		if m.state != Running || fx != nil {
			t.Fatalf("readiness acted: %s %v", m.state, kindsOf(fx))
		}
	}
	if _, ready := healthOf(m, tm.Health); ready {
		t.Fatal("still ready after failures")
	}
}

func TestStartupHoldsOffLiveness(t *testing.T) {
	tm := Timing{Health: HealthTiming{
		Startup:  RoleTiming{Enabled: true, Failure: 5},
		Liveness: RoleTiming{Enabled: true, Failure: 1},
	}}
	m := in(Running)
	m, _ = probe(m, Liveness, false, tm)
	if m.state != Running {
		t.Fatal("liveness counted before startup passed")
	}
	if h, _ := healthOf(m, tm.Health); h != "starting" {
		t.Fatalf("health %q, want starting", h)
	}
	for range 4 {
		m, _ = probe(m, Startup, false, tm)
	}
	m, _ = probe(m, Startup, true, tm)
	if h, ready := healthOf(m, tm.Health); h != "healthy" || !ready {
		t.Fatalf("after startup: %q %v", h, ready)
	}
	m, _ = probe(m, Liveness, false, tm)
	if m.state != Stopping {
		t.Fatal("liveness not in force after startup")
	}
	// Startup failing period x failure_threshold restarts.
	m = in(Running)
	for range 5 {
		m, _ = probe(m, Startup, false, tm)
	}
	if m.state != Stopping || !startsAgain(m) {
		t.Fatalf("startup failures: %s", m.state)
	}
}

// TestLimitOutcomes: give-up, leave-running and exec once the limit is hit.
func TestLimitOutcomes(t *testing.T) {
	limit := func(then restart.Then) Timing {
		tm := liveTiming(1)
		tm.Restart.Limit = restart.Limit{Count: 1, Within: time.Hour, Then: then, Exec: []string{"/bin/true"}}
		return tm
	}
	// Use up the one allowed restart.
	used := func(tm Timing) machine {
		m, _ := probe(in(Running), Liveness, false, tm)
		m, _ = next(m, event{kind: evExit}, t0.Add(time.Hour), tm)
		m, _ = next(m, event{kind: evRunning}, t0.Add(time.Hour), tm)
		if m.state != Running || m.restarts != 1 {
			t.Fatalf("first restart: %+v", m)
		}
		return m
	}
	tm := limit(restart.GiveUp)
	m, fx := probe(used(tm), Liveness, false, tm)
	if m.state != Stopping || m.after.then != thenFail {
		t.Fatalf("give-up: %s %v", m.state, kindsOf(fx))
	}
	m, _ = next(m, event{kind: evExit}, t0.Add(time.Hour), tm)
	if m.state != Failed {
		t.Fatalf("give-up ends %s, want failed", m.state)
	}
	m, _ = next(used(tm), event{kind: evExit, exit: Exit{Code: 1}}, t0.Add(time.Hour), tm)
	if m.state != Failed {
		t.Fatalf("give-up: a dead process ends %s", m.state)
	}

	tm = limit(restart.LeaveRunning)
	m, fx = probe(used(tm), Liveness, false, tm)
	if m.state != Running || fx != nil || !m.health.leftRunning {
		t.Fatalf("leave-running: %s %v", m.state, kindsOf(fx))
	}
	for range 5 {
		m, fx = probe(m, Liveness, false, tm)
		if m.state != Running || fx != nil {
			t.Fatal("leave-running stopped a running process")
		}
	}
	if h, _ := healthOf(m, tm.Health); h != "unhealthy" {
		t.Fatalf("left running but health %q", h)
	}

	tm = limit(restart.Exec)
	m, fx = probe(used(tm), Liveness, false, tm)
	if m.state != Running || !slices.Equal(kindsOf(fx), fxs(fxLimitExec)) {
		t.Fatalf("exec: %s %v", m.state, kindsOf(fx))
	}
}

func TestPolicyModes(t *testing.T) {
	for _, tt := range []struct {
		mode restart.Mode
		exit Exit
		want State
	}{
		{restart.Always, Exit{}, Starting},
		{restart.OnFailure, Exit{}, Stopped},
		{restart.OnFailure, Exit{Code: 2}, Starting},
		{restart.Never, Exit{Code: 2}, Failed},
		{restart.Never, Exit{}, Stopped},
	} {
		m, _ := next(in(Running), event{kind: evExit, exit: tt.exit}, t0.Add(time.Hour), Timing{Restart: restart.Policy{Mode: tt.mode}})
		if m.state != tt.want {
			t.Errorf("mode %d exit %v: %s, want %s", tt.mode, tt.exit, m.state, tt.want)
		}
	}
	tm := liveTiming(1)
	tm.Restart.Mode = restart.Never
	m, _ := probe(in(Running), Liveness, false, tm)
	m, _ = next(m, event{kind: evExit}, t0.Add(time.Hour), tm)
	if m.state != Failed {
		t.Fatalf("never: a liveness failure ends %s", m.state)
	}
}

// TestProbeRestartBacksOff: repeated quick probe restarts wait the backoff.
func TestProbeRestartBacksOff(t *testing.T) {
	tm := liveTiming(1)
	now := t0.Add(time.Hour)
	m := in(Running)
	m.startedAt = now // quick: fails right after the start
	var fx []effect
	m, _ = probe(m, Liveness, false, tm)
	m, _ = next(m, event{kind: evExit}, now, tm)
	if m.state != Starting {
		t.Fatalf("first probe restart is immediate: %s", m.state)
	}
	m, _ = next(m, event{kind: evRunning}, now, tm)
	m, _ = probe(m, Liveness, false, tm)
	m, fx = next(m, event{kind: evExit}, now, tm)
	if m.state != Backoff || len(fx) != 1 || fx[0].kind != fxArm || fx[0].d != restart.DefaultInitial {
		t.Fatalf("second quick probe restart: %s %+v", m.state, fx)
	}
}

// TestHangingProbeNeverBlocks: a check that ignores its context is bounded
// by its timeout, counts as a failure, and commands are answered meanwhile.
func TestHangingProbeNeverBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &fakeRunner{exitOn: []syscall.Signal{syscall.SIGTERM}}
		hang := make(chan struct{})
		defer close(hang)
		var calls atomic.Int32
		ctx, cancel := context.WithCancel(context.Background())
		s := New(Config{ID: ID{"job", "proc"}, Runner: r, Probes: []Probe{{
			Role: Liveness, Period: time.Second, Timeout: 100 * time.Millisecond, FailureThreshold: 2,
			Check: func(context.Context) ProbeResult { calls.Add(1); <-hang; return ProbeResult{OK: true} },
		}}})
		go s.Run(ctx)
		defer func() { cancel(); <-s.Done() }()
		if st, _ := s.Do(ctx, VerbStart); st.State != Running {
			t.Fatalf("start: %s", st.State)
		}
		time.Sleep(150 * time.Millisecond) // synctest: virtual time
		synctest.Wait()
		st := s.Status()
		if len(st.Probes) != 1 || st.Probes[0].OK || st.Probes[0].Failures != 1 || st.Health != "healthy" {
			t.Fatalf("after one hung check: %s %q %+v", st.State, st.Health, st.Probes)
		}
		if err := s.Signal(ctx, syscall.SIGHUP); err != nil { // the loop still answers
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond) // synctest (virtual time): the second check starts a period after the first result
		synctest.Wait()
		if r.count() != 2 || s.Status().Restarts != 1 {
			t.Fatalf("starts %d restarts %d after two hung checks", r.count(), s.Status().Restarts)
		}
	})
}

// TestLivenessRestartUnderSupervisor runs the prober on a fake clock.
func TestLivenessRestartUnderSupervisor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &fakeRunner{exitOn: []syscall.Signal{syscall.SIGTERM}}
		var sick atomic.Bool
		ctx, cancel := context.WithCancel(context.Background())
		s := New(Config{ID: ID{"job", "proc"}, Runner: r, Probes: []Probe{
			{Role: Liveness, Period: time.Second, FailureThreshold: 3,
				Check: func(context.Context) ProbeResult { return ProbeResult{OK: !sick.Load()} }},
			{Role: Readiness, Period: time.Second,
				Check: func(context.Context) ProbeResult { return ProbeResult{OK: !sick.Load()} }},
		}})
		go s.Run(ctx)
		defer func() { cancel(); <-s.Done() }()
		_, _ = s.Do(ctx, VerbStart)
		time.Sleep(10 * time.Millisecond) // synctest: virtual time
		synctest.Wait()
		if st := s.Status(); !st.Ready || st.Health != "healthy" {
			t.Fatalf("healthy: %+v", st)
		}
		sick.Store(true)
		time.Sleep(2*time.Second + 10*time.Millisecond) // synctest (virtual time): failures 2 and 3 at 1s, 2s after the first
		synctest.Wait()
		if r.count() != 1 {
			t.Fatal("restarted before failure_threshold")
		}
		time.Sleep(time.Second) // synctest: virtual time
		synctest.Wait()
		if r.count() != 2 || !slices.Contains(r.procs[0].signals(), syscall.SIGTERM) {
			t.Fatalf("starts %d after three failures", r.count())
		}
	})
}

// TestProbeBackoffResetsUnderFakeClock: quick liveness restarts back off
// (immediate, then 100ms, then 200ms); a run longer than reset_after makes
// the next one immediate again.
func TestProbeBackoffResetsUnderFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &fakeRunner{exitOn: []syscall.Signal{syscall.SIGTERM}}
		var sick atomic.Bool
		sick.Store(true)
		ctx, cancel := context.WithCancel(context.Background())
		tm := Timing{Restart: restart.Policy{ResetAfter: time.Minute}}
		s := New(Config{ID: ID{"job", "proc"}, Timing: tm, Runner: r, Probes: []Probe{{
			Role: Liveness, Period: time.Second, FailureThreshold: 1,
			Check: func(context.Context) ProbeResult { return ProbeResult{OK: !sick.Load()} },
		}}})
		go s.Run(ctx)
		defer func() { cancel(); <-s.Done() }()
		_, _ = s.Do(ctx, VerbStart)
		synctest.Wait() // the first check fails at once: immediate restart
		synctest.Wait()
		starts := func() []time.Time { r.mu.Lock(); defer r.mu.Unlock(); return slices.Clone(r.starts) }
		for len(starts()) < 4 {
			time.Sleep(time.Millisecond) // synctest: virtual time
			synctest.Wait()
		}
		st := starts()
		gaps := []time.Duration{st[1].Sub(st[0]), st[2].Sub(st[1]), st[3].Sub(st[2])}
		want := []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond}
		if !slices.Equal(gaps, want) {
			t.Fatalf("gaps between starts %v, want %v", gaps, want)
		}
		sick.Store(false)           // a long healthy run
		time.Sleep(2 * time.Minute) // synctest: virtual time
		synctest.Wait()
		n := r.count()
		sick.Store(true)
		time.Sleep(time.Second) // synctest (virtual time): the next check fails
		synctest.Wait()
		st = starts()
		// The sequence starts over: the restart after the long run is
		// immediate, then 100ms and 200ms again (not 800ms, 1.6s ...).
		if len(st) < n+3 || st[n].Sub(st[n-1]) < 2*time.Minute ||
			st[n+1].Sub(st[n]) != 100*time.Millisecond || st[n+2].Sub(st[n+1]) != 200*time.Millisecond {
			t.Fatalf("after a long run: starts %v", st[n-1:])
		}
	})
}

// TestLimitExecCallsOnLimit: under a running supervisor, reaching the limit
// with then: exec calls OnLimit and leaves the process running.
func TestLimitExecCallsOnLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &fakeRunner{exitOn: []syscall.Signal{syscall.SIGTERM}}
		var called atomic.Int32
		ctx, cancel := context.WithCancel(context.Background())
		tm := Timing{Restart: restart.Policy{Limit: restart.Limit{Count: 1, Within: time.Hour, Then: restart.Exec}}}
		s := New(Config{ID: ID{"job", "proc"}, Timing: tm, Runner: r, OnLimit: func() { called.Add(1) },
			Probes: []Probe{{Role: Liveness, Period: time.Second, FailureThreshold: 1,
				Check: func(context.Context) ProbeResult { return ProbeResult{} }}}})
		go s.Run(ctx)
		defer func() { cancel(); <-s.Done() }()
		_, _ = s.Do(ctx, VerbStart)
		time.Sleep(10 * time.Second) // synctest: virtual time
		synctest.Wait()
		st := s.Status()
		if r.count() != 2 || called.Load() != 1 || st.State != Running || st.Health != "unhealthy" {
			t.Fatalf("starts %d, OnLimit called %d times, %s %q", r.count(), called.Load(), st.State, st.Health)
		}
	})
}

package backend

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vigil-bosh/vigil/control"
)

func TestGoalOf(t *testing.T) {
	for _, c := range []struct {
		req  control.ActionRequest
		ok   bool
		goal Goal
		bad  bool
	}{
		{req: control.ActionRequest{Action: "start"}},
		{req: control.ActionRequest{Action: "start", Wait: "none"}},
		{req: control.ActionRequest{Action: "stop", Wait: "ready"}},
		{req: control.ActionRequest{Action: "start", Wait: "running", UptimeSeconds: 1, TimeoutSeconds: 90}, ok: true,
			goal: Goal{Uptime: time.Second, Timeout: 90 * time.Second}},
		{req: control.ActionRequest{Action: "restart", Wait: "ready"}, ok: true, goal: Goal{Ready: true}},
		{req: control.ActionRequest{Action: "start", Wait: "healthy"}, bad: true},
		{req: control.ActionRequest{Action: "start", Wait: "ready", TimeoutSeconds: -1}, bad: true},
	} {
		g, ok, err := GoalOf(c.req)
		if (err != nil) != c.bad || (err != nil && !errors.Is(err, control.ErrBadRequest)) || ok != c.ok || g != c.goal {
			t.Errorf("%+v: %+v %v %v", c.req, g, ok, err)
		}
	}
}

// TestJudge: a start is done once the instance that came up has run for
// the uptime (and is ready, when asked), and fails at any exit after it
// came up, or when it is stopped meanwhile.
func TestJudge(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	exit := &control.Exit{Code: 1, Description: "exited with code 1", At: t0.Add(-time.Hour)}
	base := control.ProcessStatus{Job: "web", Process: "a", State: "running", Wanted: "up", Since: t0, LastExit: exit}
	with := func(f func(*control.ProcessStatus)) control.ProcessStatus {
		p := base
		f(&p)
		return p
	}
	g := Goal{Ready: true, Uptime: time.Second}
	for _, c := range []struct {
		name    string
		cur     control.ProcessStatus
		at      time.Duration
		done    bool
		recheck time.Duration // from t0; -1 none
		failed  string
	}{
		{"up too briefly", with(func(p *control.ProcessStatus) { p.Ready = true }), 500 * time.Millisecond, false, time.Second, ""},
		{"up, ready", with(func(p *control.ProcessStatus) { p.Ready = true }), time.Second, true, -1, ""},
		{"up, not ready", base, 2 * time.Second, false, -1, ""},
		{"the same old exit", with(func(p *control.ProcessStatus) { p.Ready = true }), 2 * time.Second, true, -1, ""},
		{"a new exit", with(func(p *control.ProcessStatus) {
			p.State, p.LastExit = "backoff", &control.Exit{Code: 1, Description: "exited with code 1", At: t0.Add(time.Millisecond)}
		}), time.Second, false, -1, "exited after it started: exited with code 1"},
		{"restarted at once", with(func(p *control.ProcessStatus) {
			p.Since, p.LastExit = t0.Add(time.Millisecond), &control.Exit{Signal: "SIGKILL", Description: "killed", At: t0}
		}), 5 * time.Second, false, -1, "exited after it started: killed"},
		{"stopped meanwhile", with(func(p *control.ProcessStatus) { p.Wanted = "down" }), time.Second, false, -1, "was stopped meanwhile"},
		{"failed", with(func(p *control.ProcessStatus) { p.State = "failed" }), time.Second, false, -1, "is failed"},
	} {
		done, recheck, failed := g.judge(base, c.cur, t0.Add(c.at))
		wantRecheck := time.Time{}
		if c.recheck >= 0 {
			wantRecheck = t0.Add(c.recheck)
		}
		if done != c.done || !recheck.Equal(wantRecheck) || failed != c.failed {
			t.Errorf("%s: done %v recheck %v failed %q", c.name, done, recheck, failed)
		}
	}
	if done, _, _ := (Goal{Uptime: time.Second}).judge(base, base, t0.Add(time.Second)); !done {
		t.Error("running (not ready) is not enough for a wait for running")
	}
}

// statuses is a fake back end: a status that changes, with a Notifier.
type statuses struct {
	mu sync.Mutex
	ps control.ProcessStatus
	n  Notifier
}

func (s *statuses) set(f func(*control.ProcessStatus)) {
	s.mu.Lock()
	f(&s.ps)
	s.mu.Unlock()
	s.n.Notify()
}

func (s *statuses) current(context.Context) ([]control.ProcessStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return []control.ProcessStatus{s.ps}, nil
}

// TestAwait runs waits on a fake clock: one that returns once the uptime
// has passed with nothing else happening, one that returns at readiness,
// one failed by an exit, one timed out with what the process lacked.
func TestAwait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &statuses{ps: control.ProcessStatus{Job: "web", Process: "a", State: "running", Wanted: "up", Since: time.Now(), Ready: true}}
		base, _ := s.current(t.Context())
		start := time.Now()
		if _, err := Await(t.Context(), Goal{Uptime: 3 * time.Second}, base, s.n.Wait, s.current); err != nil || time.Since(start) != 3*time.Second {
			t.Fatalf("uptime: %v after %v", err, time.Since(start))
		}

		s.set(func(p *control.ProcessStatus) { p.Ready, p.Health = false, "starting" })
		go func() {
			time.Sleep(10 * time.Second) // the fake clock: the probe passes 10 s in
			s.set(func(p *control.ProcessStatus) { p.Ready, p.Health = true, "healthy" })
		}()
		start = time.Now()
		if _, err := Await(t.Context(), Goal{Ready: true, Timeout: time.Minute}, base, s.n.Wait, s.current); err != nil || time.Since(start) != 10*time.Second {
			t.Fatalf("ready: %v after %v", err, time.Since(start))
		}

		go func() {
			time.Sleep(time.Second)
			s.set(func(p *control.ProcessStatus) {
				p.State, p.LastExit = "backoff", &control.Exit{Code: 3, Description: "exited with code 3"}
			})
		}()
		ps, err := Await(t.Context(), Goal{Uptime: time.Minute}, base, s.n.Wait, s.current)
		if !errors.Is(err, control.ErrFailed) || err.Error() != "web/a exited after it started: exited with code 3" || ps[0].State != "backoff" {
			t.Fatalf("exit: %v %+v", err, ps)
		}

		s.set(func(p *control.ProcessStatus) {
			p.State, p.LastExit, p.Ready, p.Health = "running", nil, false, "starting"
			p.Probes = []control.ProbeResult{{Role: "startup", Failures: 4, Message: "connection refused"}}
		})
		base, _ = s.current(t.Context())
		start = time.Now()
		_, err = Await(t.Context(), Goal{Ready: true, Timeout: 90 * time.Second}, base, s.n.Wait, s.current)
		if !errors.Is(err, control.ErrTimeout) || time.Since(start) != 90*time.Second ||
			!strings.Contains(err.Error(), "web/a not ready (its startup probe has not passed yet); startup probe failing (4 in a row): connection refused after 1m30s") {
			t.Fatalf("timeout: %v", err)
		}
	})
}

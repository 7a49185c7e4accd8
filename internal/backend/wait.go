package backend

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/control"
)

// Goal is what a start or restart waits for once its processes have
// settled (control.WaitRunning, control.WaitReady): each process must run
// and stay up for Uptime, and be ready too when Ready is set, without an
// exit on the way.
type Goal struct {
	Ready   bool
	Uptime  time.Duration
	Timeout time.Duration // 0: no limit
}

// GoalOf reads what req waits for beyond settling; ok is false when it
// waits no further (a stop, WaitSettled, WaitNone). An unknown wait is
// ErrBadRequest.
func GoalOf(req control.ActionRequest) (g Goal, ok bool, err error) {
	switch req.Wait {
	case "", control.WaitSettled, control.WaitNone:
		return Goal{}, false, nil
	case control.WaitRunning, control.WaitReady:
	default:
		return Goal{}, false, control.Errorf(control.ErrBadRequest, "unknown wait %q: want none, settled, running or ready", req.Wait)
	}
	if req.TimeoutSeconds < 0 || req.UptimeSeconds < 0 {
		return Goal{}, false, control.Errorf(control.ErrBadRequest, "timeout_seconds and uptime_seconds must not be negative")
	}
	if req.Action != control.ActionStart && req.Action != control.ActionRestart {
		return Goal{}, false, nil
	}
	return Goal{Ready: req.Wait == control.WaitReady, Uptime: seconds(req.UptimeSeconds), Timeout: seconds(req.TimeoutSeconds)}, true, nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// judge is the pure test of one process against g: base is its status
// when the action settled (the instance the wait is about), cur its status
// at now. It says whether the process has reached g, why it never will
// (failed), or, when it may yet, the time at which the uptime alone would
// get it there (zero when only a change can).
func (g Goal) judge(base, cur control.ProcessStatus, now time.Time) (done bool, recheck time.Time, failed string) {
	switch {
	case cur.LastExit != nil && (base.LastExit == nil || *cur.LastExit != *base.LastExit):
		return false, time.Time{}, "exited after it started: " + cur.LastExit.Description
	case cur.Wanted == "down":
		return false, time.Time{}, "was stopped meanwhile"
	case cur.State != "running":
		return false, time.Time{}, "is " + cur.State
	}
	upAt := cur.Since.Add(g.Uptime)
	if now.Before(upAt) {
		return false, upAt, ""
	}
	return !g.Ready || cur.Ready, time.Time{}, ""
}

// short says what cur still lacks to reach g, for a wait that timed out.
func (g Goal) short(cur control.ProcessStatus, now time.Time) string {
	if up := now.Sub(cur.Since); up < g.Uptime {
		return fmt.Sprintf("up for %s of %s", up.Round(time.Millisecond), g.Uptime)
	}
	why := "not ready"
	if cur.Health == "starting" {
		why += " (its startup probe has not passed yet)"
	}
	for _, p := range cur.Probes {
		if !p.OK {
			why += fmt.Sprintf("; %s probe failing (%d in a row): %s", p.Role, p.Failures, p.Message)
		}
	}
	return why
}

// Await blocks until every process of base (their statuses when the
// action settled) has reached g. It reads the statuses again with current
// at each change (changes returns a channel closed at the next one) and
// when an uptime comes due: no polling. It returns the latest statuses of
// base's processes and nil, an ErrFailed naming each process that will
// not get there and why, an ErrTimeout once g.Timeout has passed, or
// ctx's error.
func Await(ctx context.Context, g Goal, base []control.ProcessStatus, changes func() <-chan struct{},
	current func(context.Context) ([]control.ProcessStatus, error)) ([]control.ProcessStatus, error) {
	var deadline <-chan time.Time
	if g.Timeout > 0 {
		t := time.NewTimer(g.Timeout)
		defer t.Stop()
		deadline = t.C
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	latest := base
	for {
		changed := changes() // before reading, so that no change is missed
		all, err := current(ctx)
		if err != nil {
			return latest, err
		}
		latest = pick(base, all)
		now := time.Now()
		var failed, pending []string
		var next time.Time
		for i, b := range base {
			done, at, why := g.judge(b, latest[i], now)
			switch {
			case why != "":
				failed = append(failed, b.Job+"/"+b.Process+" "+why)
			case !done:
				pending = append(pending, b.Job+"/"+b.Process+" "+g.short(latest[i], now))
				if !at.IsZero() && (next.IsZero() || at.Before(next)) {
					next = at
				}
			}
		}
		if len(failed) > 0 {
			return latest, control.Errorf(control.ErrFailed, "%s", strings.Join(failed, "; "))
		}
		if len(pending) == 0 {
			return latest, nil
		}
		if !next.IsZero() {
			timer.Reset(next.Sub(now))
		}
		select {
		case <-changed:
		case <-timer.C:
		case <-deadline:
			return latest, control.Errorf(control.ErrTimeout, "%s after %s", strings.Join(pending, "; "), g.Timeout)
		case <-ctx.Done():
			return latest, ctx.Err()
		}
		timer.Stop() // since Go 1.23 a stopped timer delivers nothing stale
	}
}

// pick returns the statuses in all of base's processes, in base's order;
// a process gone from all keeps a status saying so.
func pick(base, all []control.ProcessStatus) []control.ProcessStatus {
	out := make([]control.ProcessStatus, len(base))
	for i, b := range base {
		out[i] = control.ProcessStatus{Job: b.Job, Process: b.Process, State: "removed", Wanted: "down"}
		for _, p := range all {
			if p.Job == b.Job && p.Process == b.Process {
				out[i] = p
				break
			}
		}
	}
	return out
}

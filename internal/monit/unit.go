package monit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vigil-bosh/vigil/internal/supervise"
)

// SupervisorUnit drives a supervised process as a monit service.
type SupervisorUnit struct {
	Sup          *supervise.Supervisor
	StartTimeout time.Duration // how long a start may take; zero means 30s
	StopTimeout  time.Duration // how long a stop may take; zero means 60s
	// Stats, if set, fills in memory and cpu figures for a running pid.
	Stats func(pid int, st *UnitStatus)
	// Passive: the supervisor never restarts the process (monit's mode
	// passive, or an "if not exist" test whose action is not a restart):
	// it is monitored until stopped or unmonitored, and a process that is
	// not running does not exist (rather than failed to start).
	Passive bool

	stopped atomic.Bool // stopped on request (Passive: no longer monitored)
}

var _ Unit = (*SupervisorUnit)(nil)

func (u *SupervisorUnit) do(ctx context.Context, v supervise.Verb, d time.Duration) (supervise.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	st, err := u.Sup.Do(ctx, v)
	if errors.Is(err, context.DeadlineExceeded) {
		return st, fmt.Errorf("'%s' timed out after %s", u.Sup.ID().Process, d)
	}
	return st, err
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Start starts the process and waits until it runs (or failed to).
func (u *SupervisorUnit) Start(ctx context.Context) error {
	return u.up(ctx, supervise.VerbStart)
}

// Monitor supervises again, starting the process when it is not up.
func (u *SupervisorUnit) Monitor(ctx context.Context) error {
	return u.up(ctx, supervise.VerbMonitor)
}

func (u *SupervisorUnit) up(ctx context.Context, v supervise.Verb) error {
	u.stopped.Store(false)
	st, err := u.do(ctx, v, orDefault(u.StartTimeout, 30*time.Second))
	if err != nil {
		return err
	}
	if st.State != supervise.Running {
		why := st.State.String()
		if st.LastExit != nil {
			why = st.LastExit.String()
		}
		return fmt.Errorf("'%s' failed to start: %s", st.ID.Process, why)
	}
	return nil
}

// Stop stops the process and waits until it is gone.
func (u *SupervisorUnit) Stop(ctx context.Context) error {
	u.stopped.Store(true)
	st, err := u.do(ctx, supervise.VerbStop, orDefault(u.StopTimeout, 60*time.Second))
	if err != nil {
		return err
	}
	if st.State != supervise.Stopped {
		return fmt.Errorf("'%s' failed to stop: %s", st.ID.Process, st.State)
	}
	return nil
}

// Unmonitor stops supervising and leaves the process as it is.
func (u *SupervisorUnit) Unmonitor(ctx context.Context) error {
	_, err := u.Sup.Do(ctx, supervise.VerbUnmonitor)
	return err
}

// Status maps the supervisor's snapshot onto monit's fields.
func (u *SupervisorUnit) Status() UnitStatus {
	s := u.Sup.Status()
	st := MapStatus(s, time.Now(), u.Stats)
	if u.Passive && !s.Unmonitored && !u.stopped.Load() {
		st.Monitor = Monitored
		if !st.Running {
			st.Events, st.Message = EventNonexist, "process is not running"
		}
	}
	return st
}

// MapStatus maps a supervisor's status onto monit's fields.
func MapStatus(s supervise.Status, now time.Time, stats func(int, *UnitStatus)) UnitStatus {
	var st UnitStatus
	st.Running = (s.PID != 0 || s.ExecPID != 0) && (s.State == supervise.Running || s.State == supervise.Stopping)
	// A start that failed (the process never ran) is monit's "Execution
	// failed" until a start succeeds, through the retries.
	startFailed := s.LastExit != nil && s.LastExit.Err != "" && (s.State == supervise.Starting || s.State == supervise.Backoff)
	switch {
	case s.Unmonitored || !s.WantUp:
		st.Monitor = NotMonitored
	case s.State == supervise.Starting && !startFailed:
		st.Monitor = Initializing
	default:
		st.Monitor = Monitored
	}
	if st.Monitor != NotMonitored {
		switch {
		case startFailed:
			st.Events, st.Message = EventExec|EventNonexist, "failed to start"
		case s.State == supervise.Backoff:
			st.Events, st.Message = EventNonexist, "process is not running"
			if s.LastExit != nil && s.LastExit.OOM { // the agent's logs say why
				st.Message += ": " + s.LastExit.String()
			}
		case s.State == supervise.Failed:
			st.Events, st.Message = EventExec, "failed to start"
			if s.LastExit != nil {
				st.Message = s.LastExit.String()
			}
		case s.State == supervise.Running:
			st.Events, st.Message = probeEvents(s.Probes)
		}
	}
	if st.Running {
		st.PID = s.ExecPID
		if st.PID == 0 {
			st.PID = s.PID
		}
		st.PPID = s.PID
		st.Uptime = now.Sub(s.Since)
		if stats != nil {
			stats(st.PID, &st)
		}
	}
	st.Starts = s.Gen
	st.Collected = now
	return st
}

// ResourceFailure starts the message of a failed resource test, so that
// the status reports it as a resource event rather than a connection one.
const ResourceFailure = "resource limit matched: "

// probeEvents maps failing probes onto monit's event bits: a failed
// connection test (or any probe), or a matched resource limit (a message
// starting with ResourceFailure).
func probeEvents(probes []supervise.ProbeResult) (int, string) {
	ev, msgs := 0, []string(nil)
	for _, p := range probes {
		if p.OK {
			continue
		}
		if strings.HasPrefix(p.Message, ResourceFailure) {
			ev |= EventResource
		} else {
			ev |= EventConnection
		}
		msgs = append(msgs, p.Message)
	}
	return ev, strings.Join(msgs, "; ")
}

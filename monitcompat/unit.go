package monitcompat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/supervise"
)

// SupervisorUnit drives a supervised process as a monit service.
type SupervisorUnit struct {
	Sup          *supervise.Supervisor
	StartTimeout time.Duration // how long a start may take; zero means 30s
	StopTimeout  time.Duration // how long a stop may take; zero means 60s
	// Stats, if set, fills in memory and cpu figures for a running pid.
	Stats func(pid int, st *UnitStatus)
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
	return MapStatus(u.Sup.Status(), time.Now(), u.Stats)
}

// MapStatus maps a supervisor's status onto monit's fields.
func MapStatus(s supervise.Status, now time.Time, stats func(int, *UnitStatus)) UnitStatus {
	var st UnitStatus
	st.Running = (s.PID != 0 || s.ExecPID != 0) && (s.State == supervise.Running || s.State == supervise.Stopping)
	switch {
	case s.Unmonitored || !s.WantUp:
		st.Monitor = NotMonitored
	case s.State == supervise.Starting:
		st.Monitor = Initializing
	default:
		st.Monitor = Monitored
	}
	if st.Monitor != NotMonitored {
		switch s.State {
		case supervise.Backoff:
			st.Events, st.Message = EventNonexist, "process is not running"
			if s.LastExit != nil && s.LastExit.OOM { // the agent's logs say why
				st.Message += ": " + s.LastExit.String()
			}
		case supervise.Failed:
			st.Events, st.Message = EventExec, "failed to start"
			if s.LastExit != nil {
				st.Message = s.LastExit.String()
			}
		case supervise.Running:
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

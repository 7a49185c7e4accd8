package backend

import (
	"fmt"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

// tracked is what the event derivation remembers of one process.
type tracked struct {
	last *control.ProcessStatus // the status events were last derived from; nil at first
	inst int                    // the instance it described
	// upRestarts is the restart count when an instance last came up: a
	// higher count at the next one means an automatic restart.
	upRestarts int
	// downAt is when the instance to be restarted exited (monotonic), zero
	// when no automatic restart is pending.
	downAt time.Time
}

// derive is the event derivation: from what is remembered of a process
// (*t) and its new status at now (of instance inst: a number that grows
// with each new instance of the process), the events that happened in
// between, in order (the exit first). It updates *t to what to remember
// next, which keeps cur: the caller leaves *cur as it is. A back
// end publishes every change it sees, so only changes within one step are
// collapsed (an exit and the immediate respawn show as one status).
func derive(t *tracked, cur *control.ProcessStatus, inst int, now time.Time) []control.Event {
	prev := t.last
	// First sight, or a new supervisor for the same name (after a reload):
	// restarts counted before are not this one's.
	if prev == nil || inst < t.inst {
		*t = tracked{upRestarts: cur.Restarts}
		prev = &control.ProcessStatus{Job: cur.Job, Process: cur.Process, State: supervise.Stopped.String()}
	}
	t.last = cur
	var out []control.Event
	add := func(kind, msg string, pid int) *control.Event {
		out = append(out, control.Event{})
		ev := &out[len(out)-1]
		ev.Time, ev.Job, ev.Process, ev.Kind = now, cur.Job, cur.Process, kind
		ev.PID, ev.Restarts, ev.Message = pid, cur.Restarts, msg
		return ev
	}
	state, was := stateOf(cur), stateOf(prev)

	if e := cur.LastExit; e != nil && (prev.LastExit == nil || *e != *prev.LastExit) {
		kind := control.EventExited
		if e.OOM {
			kind = control.EventOOMKilled
		}
		ev := add(kind, e.Description, prev.PID)
		exit := *e
		ev.Exit = &exit
		if cur.Wanted == "up" && (state == supervise.Starting || state == supervise.Backoff) {
			t.downAt = now
		}
	}
	if cur.Unmonitored != prev.Unmonitored {
		if cur.Unmonitored {
			add(control.EventUnmonitored, "an exit will not be restarted", cur.PID)
		} else {
			add(control.EventMonitored, "supervised again", cur.PID)
		}
	}
	newInstance := inst != t.inst
	t.inst = inst
	if state != was || newInstance {
		switch state {
		case supervise.Running:
			if cur.Restarts > t.upRestarts {
				ev := add(control.EventRestarted, fmt.Sprintf("restart %d", cur.Restarts), cur.PID)
				if !t.downAt.IsZero() {
					ev.DownSeconds = now.Sub(t.downAt).Seconds()
				}
			} else {
				add(control.EventStarted, "", cur.PID)
			}
			t.upRestarts, t.downAt = cur.Restarts, time.Time{}
		case supervise.Backoff:
			add(control.EventBackoff, "restart pending", 0)
		case supervise.Stopping:
			add(control.EventStopping, "", cur.PID)
		case supervise.Stopped:
			if was != supervise.Stopped {
				add(control.EventStopped, "", 0)
			}
			t.downAt = time.Time{}
		case supervise.Failed:
			add(control.EventGaveUp, gaveUpWhy(*cur), 0)
			t.downAt = time.Time{}
		}
	}
	if ev, ok := escalation(prev, cur, now); ok {
		out = append(out, ev)
	}
	out = append(out, probeEvents(prev, cur, now)...)
	// Health and readiness within one running instance (its start says the rest).
	if state == supervise.Running && was == supervise.Running && !newInstance {
		out = append(out, healthEvents(prev, cur, now)...)
	}
	return out
}

// escalation is the event of a stop that went on to a step past the
// shutdown signal between prev and cur, e.g. "SIGQUIT after 15s".
func escalation(prev, cur *control.ProcessStatus, now time.Time) (control.Event, bool) {
	s := cur.Stop
	if s == nil || s.Step == control.StepSignal || (prev.Stop != nil && prev.Stop.Step == s.Step) {
		return control.Event{}, false
	}
	after := s.StepAt.Sub(s.Began).Round(100 * time.Millisecond)
	return control.Event{Time: now, Job: cur.Job, Process: cur.Process, Kind: control.EventEscalated,
		PID: cur.PID, Restarts: cur.Restarts, Message: fmt.Sprintf("%s after %s (%s)", s.Signal, after, s.Step)}, true
}

// stateOf is the state a status names (Stopped when it names none).
func stateOf(ps *control.ProcessStatus) supervise.State {
	s, _ := supervise.ParseState(ps.State)
	return s
}

// healthEvents reports a change of health or readiness.
func healthEvents(prev, cur *control.ProcessStatus, now time.Time) []control.Event {
	var kinds []string
	if cur.Health != prev.Health {
		switch cur.Health {
		case "healthy":
			kinds = append(kinds, control.EventHealthy)
		case "unhealthy":
			kinds = append(kinds, control.EventUnhealthy)
		}
	}
	if cur.Ready != prev.Ready {
		if cur.Ready {
			kinds = append(kinds, control.EventReady)
		} else {
			kinds = append(kinds, control.EventNotReady)
		}
	}
	out := make([]control.Event, len(kinds))
	for i, k := range kinds {
		out[i] = control.Event{Time: now, Job: cur.Job, Process: cur.Process, Kind: k, PID: cur.PID, Restarts: cur.Restarts}
	}
	return out
}

// probeEvents reports each probe whose latest result turned from passing
// (or none) to failing, or back.
func probeEvents(prev, cur *control.ProcessStatus, now time.Time) []control.Event {
	var out []control.Event
	for _, r := range cur.Probes {
		var was *control.ProbeResult
		for i := range prev.Probes {
			if prev.Probes[i].Role == r.Role {
				was = &prev.Probes[i]
			}
		}
		if was != nil && was.At.Equal(r.At) {
			continue // no new result for this role
		}
		kind, msg := "", ""
		switch {
		case !r.OK && (was == nil || was.OK || r.Failures == 1):
			kind, msg = control.EventProbeFailed, fmt.Sprintf("%s probe failed: %s", r.Role, r.Message)
		case r.OK && was != nil && !was.OK:
			kind, msg = control.EventProbeRecovered, fmt.Sprintf("%s probe passed after %d failures", r.Role, was.Failures)
		default:
			continue
		}
		out = append(out, control.Event{Time: now, Job: cur.Job, Process: cur.Process, Kind: kind,
			PID: cur.PID, Restarts: cur.Restarts, Message: msg})
	}
	return out
}

func gaveUpWhy(st control.ProcessStatus) string {
	if st.LastExit == nil {
		return "failed"
	}
	return "not restarted (last exit: " + st.LastExit.Description + ")"
}

package backend

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/job"
)

// ProcessStatus is a supervisor's status as the control API shows it.
func ProcessStatus(s supervise.Status) control.ProcessStatus {
	ps := control.ProcessStatus{
		Job: s.ID.Job, Process: s.ID.Process, State: s.State.String(), Wanted: "down",
		PID: s.PID, ExecPID: s.ExecPID, Restarts: s.Restarts, Since: s.Since.UTC().Truncate(time.Millisecond),
		Unmonitored: s.Unmonitored, Warnings: s.Warnings, Health: s.Health, Ready: s.Ready,
	}
	for _, r := range s.Probes {
		ps.Probes = append(ps.Probes, control.ProbeResult{Role: r.Role.String(), OK: r.OK,
			LatencyMS: float64(r.Latency.Microseconds()) / 1000, Message: r.Message,
			At: r.At.UTC().Truncate(time.Millisecond), Failures: r.Failures})
	}
	if s.WantUp {
		ps.Wanted = "up"
	}
	if !s.RetryAt.IsZero() {
		ps.RetryAt = s.RetryAt.UTC().Truncate(time.Millisecond)
	}
	if e := s.LastExit; e != nil {
		ps.LastExit = &control.Exit{
			Code: e.Code, OOM: e.OOM, Error: e.Err, At: e.At.UTC().Truncate(time.Millisecond),
			Description: e.String(),
		}
		if e.Signal != 0 {
			ps.LastExit.Signal = unix.SignalName(e.Signal)
		}
		if l := e.Stop; l != nil {
			ps.LastExit.Description = l.Stopped() + " (" + e.String() + ")"
			ps.LastExit.StopStep, ps.LastExit.StoppedBy = l.Step.String(), unix.SignalName(l.Signal)
			ps.LastExit.StopSeconds = l.After.Seconds()
		}
	}
	if l := s.Stop; l != nil {
		ps.Stop = &control.StopProgress{Step: l.Step.String(), Signal: unix.SignalName(l.Signal),
			Began: l.Began.UTC().Truncate(time.Millisecond), StepAt: l.StepAt.UTC().Truncate(time.Millisecond)}
	}
	return ps
}

// Configured fills the parts of ps that the configuration of its process
// in j says: its limits.memory in bytes (0 without one) and its isolation
// ("sandbox" or "host"). A j without the process leaves them empty.
func Configured(ps *control.ProcessStatus, j *job.Job) {
	if j == nil {
		return
	}
	p, ok := j.Process(ps.Process)
	if !ok {
		return
	}
	if p.Limits.Memory != nil {
		ps.MemoryLimitBytes = int64(min(*p.Limits.Memory, 1<<63-1))
	}
	ps.Isolation = job.IsolationSandbox
	if p.Unisolated() {
		ps.Isolation = job.IsolationHost
	}
}

package daemon

import (
	"errors"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/job"
	"github.com/vigil-bosh/vigil/supervise"
)

func processStatus(s supervise.Status) control.ProcessStatus {
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
	if e := s.LastExit; e != nil {
		ps.LastExit = &control.Exit{
			Code: e.Code, OOM: e.OOM, Error: e.Err, At: e.At.UTC().Truncate(time.Millisecond),
			Description: e.String(),
		}
		if e.Signal != 0 {
			ps.LastExit.Signal = unix.SignalName(e.Signal)
		}
	}
	return ps
}

// Problems turns load errors and warnings into control.Problems, one per
// configuration error so that each names its file, line and field (both
// back ends report them so).
func Problems(errs []error, warns []job.Warning) []control.Problem {
	var out []control.Problem
	for _, err := range errs {
		name := ""
		var le *job.LoadError
		if errors.As(err, &le) {
			name = le.Job
		}
		var list job.ErrorList
		if errors.As(err, &list) {
			for _, ce := range list {
				out = append(out, control.Problem{Severity: "error", Job: name, File: ce.File,
					Line: ce.Line, Field: ce.Field, Message: ce.Msg})
			}
			continue
		}
		msg := err.Error()
		if le != nil {
			msg = le.Err.Error()
		}
		out = append(out, control.Problem{Severity: "error", Job: name, Message: msg})
	}
	for _, w := range warns {
		out = append(out, control.Problem{Severity: "warning", Job: jobOfFile(w.File), File: w.File,
			Line: w.Line, Field: w.Field, Message: w.Msg})
	}
	return out
}

// jobOfFile recovers the job name from ROOT/jobs/JOB/config/bpm.yml.
func jobOfFile(path string) string { return filepath.Base(filepath.Dir(filepath.Dir(path))) }

package launch

import (
	"log/slog"
	"sync/atomic"

	"github.com/vigil-bosh/vigil/internal/launch/procinit"
	"github.com/vigil-bosh/vigil/job"
)

// drops counts the output a runner's instances could not log (a full disk,
// a removed log directory), across restarts, for the runner's life.
type drops struct {
	stdout, stderr atomic.Int64
	log            *slog.Logger // nil: no log
	label          string
}

// outputSeen is what one init last reported: its counts are cumulative for
// that init, and only their increase is added to the runner's.
type outputSeen struct {
	stdout, stderr int64
	dropping       bool
}

// note adds the increase reported by r over seen and returns the new seen.
// It logs when writes start failing and when they succeed again; the log
// holds counts only, never output. A nil d ignores reports.
func (d *drops) note(seen outputSeen, r procinit.Report) outputSeen {
	if d == nil {
		return seen
	}
	d.stdout.Add(max(r.DroppedStdout-seen.stdout, 0))
	d.stderr.Add(max(r.DroppedStderr-seen.stderr, 0))
	now := outputSeen{stdout: max(r.DroppedStdout, seen.stdout), stderr: max(r.DroppedStderr, seen.stderr),
		dropping: r.Event == procinit.EventOutput && r.Dropping}
	if d.log != nil && now.dropping && !seen.dropping {
		d.log.Warn("log writes failing: dropping output", "process", d.label,
			"dropped_stdout_bytes", r.DroppedStdout, "dropped_stderr_bytes", r.DroppedStderr)
	}
	if d.log != nil && !now.dropping && seen.dropping && r.Event == procinit.EventOutput {
		d.log.Info("log writes succeed again", "process", d.label,
			"dropped_stdout_bytes", r.DroppedStdout, "dropped_stderr_bytes", r.DroppedStderr)
	}
	return now
}

// Dropped returns the bytes of stdout and stderr that the runner's
// instances have lost to failing log writes, in total since it was made.
// Counts come from the inits' reports: live while a process runs (when
// dropping starts, doubles and ends) and complete at each exit.
func (r *Runner) Dropped() (stdout, stderr int64) {
	return r.drops.stdout.Load(), r.drops.stderr.Load()
}

// logRotation turns the logs key into the init's rotation settings.
func logRotation(l job.LogRotation) *procinit.LogRotation {
	if l.MaxSize == 0 {
		return nil
	}
	return &procinit.LogRotation{MaxSize: int64(min(l.MaxSize, 1<<62)), Keep: l.Keep}
}

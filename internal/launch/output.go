package launch

import (
	"log/slog"
	"sync/atomic"

	"github.com/vigil-bosh/vigil/internal/launch/procinit"
	"github.com/vigil-bosh/vigil/job"
)

// drops counts the output a runner's instances could not log (a full disk,
// a removed log directory), and the log rotations they could not make,
// across restarts, for the runner's life.
type drops struct {
	stdout, stderr atomic.Int64
	rotations      atomic.Int64 // failed rotations
	log            *slog.Logger // nil: no log
	label          string
}

// outputSeen is what one init last reported: its counts are cumulative for
// that init, and only their increase is added to the runner's.
type outputSeen struct {
	stdout, stderr int64
	dropping       bool
	rotations      int64
	rotating       bool // rotations were failing
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
	now.rotations, now.rotating = d.noteRotations(seen, r)
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

// noteRotations adds the failed rotations r reports over seen and logs
// them: each report of a failing rotation (the first, then at each doubling
// of the count) with its error, and a rotation that works again.
func (d *drops) noteRotations(seen outputSeen, r procinit.Report) (int64, bool) {
	d.rotations.Add(max(r.RotationFailures-seen.rotations, 0))
	total := max(r.RotationFailures, seen.rotations)
	failing := r.Event == procinit.EventOutput && r.RotationFailing
	if d.log != nil && r.RotationFailures > seen.rotations {
		d.log.Warn("log rotation failed: the output goes on into the file it had", "process", d.label,
			"failures", r.RotationFailures, "error", r.RotationError)
	}
	if d.log != nil && !failing && seen.rotating && r.Event == procinit.EventOutput {
		d.log.Info("log rotation succeeds again", "process", d.label, "failures", r.RotationFailures)
	}
	return total, failing
}

// RotationFailures returns the log rotations the runner's instances could
// not make (the output went on into the file they had), in total since it
// was made; reported as for Dropped, when failures start and double, and
// complete at each exit.
func (r *Runner) RotationFailures() int64 { return r.drops.rotations.Load() }

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

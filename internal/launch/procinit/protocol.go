// Package procinit is vigil's per-process init: the small program (the vigil
// binary re-executed as "vigil init") whose pid goes into the pid file. It
// keeps bpm's tini contract: the executable is its direct child, every signal
// it receives is forwarded to the executable, orphans below it are reaped
// (it is a subreaper), and it exits with the executable's exit status. When
// the executable ends, nothing it started outlives it.
//
// The supervisor talks to the init over a socket on fd 3: it sends one
// Launch, then Commands; the init answers with Reports, the last one being
// "exit" or "failed". The init also inherits its stdout and stderr log files
// on fds 1 and 2 and copies the executable's output into them.
package procinit

import (
	"fmt"
	"strconv"
	"time"

	"github.com/vigil-bosh/vigil/internal/jsonwire"
	"github.com/vigil-bosh/vigil/internal/sandbox"
)

// ControlFD is the descriptor of the control socket in the init.
const ControlFD = 3

// EnterArg, after "init", makes the binary the sandbox helper instead of an
// init: "vigil init --enter" reads a sandbox.Spec on fd 3, reports on fd 4
// and execs the confined executable (see sandbox.Exec).
const EnterArg = "--enter"

// Launch is the first message from the supervisor: what to run and how.
type Launch struct {
	Label       string        `json:"label"`        // JOB/PROC, for messages
	Path        string        `json:"path"`         // executable to run, absolute
	Args        []string      `json:"args"`         // full argv, argv[0] included
	Env         []string      `json:"env"`          // the complete environment
	Dir         string        `json:"dir"`          // working directory
	Stdout      string        `json:"stdout"`       // log path that fd 1 was opened from (for reopening)
	Stderr      string        `json:"stderr"`       // log path that fd 2 was opened from
	PreStart    string        `json:"pre_start"`    // hook run before the executable, if set
	HookTimeout time.Duration `json:"hook_timeout"` // zero means no limit
	// PidFile, if set, is written by the init itself with its own pid once
	// the executable runs, and removed once everything has ended. A detached
	// init (no supervisor holds its socket) keeps bpm's pid file this way.
	PidFile string `json:"pid_file,omitempty"`
	// ExitFile, if set, receives the exit report (JSON, with the init's host
	// pid) when the executable ends while no supervisor holds the init's
	// socket and one that adopted the init has claimed the record there
	// (ExitClaim): a daemon that adopts the init after a restart, or bpm's
	// stop without a daemon, reads it there, since the init is not its
	// child and its wait status is not its to see.
	ExitFile string `json:"exit_file,omitempty"`
	// Sandbox, if set, confines the executable (see package sandbox): the
	// init starts it through a helper created in fresh namespaces, which
	// assembles its root and drops its privileges before the exec. The hook
	// is not confined. Nil runs the executable as the init's plain child.
	Sandbox *sandbox.Spec `json:"sandbox,omitempty"`
	// InitCaps, set for a privileged process (unsafe.privileged), are the
	// capabilities its init holds, in every set and effective, once the
	// executable runs: the executable's own, as bpm's tini holds them in a
	// privileged container (holdPrivileged). Unset, the init keeps
	// keptCaps alone, permitted only (dropCapabilities).
	InitCaps []int `json:"init_caps,omitempty"`
	// Warnings are what the supervisor could not enforce; the init passes
	// them on, with its own, in the running report.
	Warnings []string `json:"warnings,omitempty"`
	// NotifyFD, if set, is s6's readiness notification: the executable gets
	// the write end of a pipe as this fd, and each line written to it is
	// reported as EventReady.
	NotifyFD int `json:"notify_fd,omitempty"`
	// Logs, if set, has the init rotate the log files opened by path
	// (Stdout, Stderr) by size; see LogRotation.
	Logs *LogRotation `json:"logs,omitempty"`
	// Timestamps has the init begin each line of output it writes to the
	// logs with the time it read it (RFC 3339, UTC, milliseconds) and a
	// space.
	Timestamps bool `json:"timestamps,omitempty"`
	// Console, if set, also copies the output to the console descriptors
	// the init inherited after its control socket (fd 4 for stdout, 5 for
	// stderr: the container's own), each line prefixed with Console and
	// " | ". A console that cannot keep up loses output, the logs never.
	Console string `json:"console,omitempty"`
}

// ExitRecord is what an init leaves in Launch.ExitFile.
type ExitRecord struct {
	PID    int    `json:"pid"` // the init's host pid, to tell records apart
	Report Report `json:"report"`
}

// Command is a request from the supervisor after the launch.
type Command struct {
	Cmd string `json:"cmd"` // CmdKill or CmdReopen
}

// The commands.
const (
	CmdKill   = "kill"   // kill the executable and everything below it, then exit
	CmdReopen = "reopen" // reopen the log files by path (after a rotation)
)

// Report is a message from the init to the supervisor.
type Report struct {
	Event   string `json:"event"`             // one of the Event* constants
	PID     int    `json:"pid,omitempty"`     // running: the executable's pid
	Code    int    `json:"code,omitempty"`    // exit: exit code
	Signal  int    `json:"signal,omitempty"`  // exit: the signal that killed it
	Error   string `json:"error,omitempty"`   // failed: why it never ran
	Dropped int64  `json:"dropped,omitempty"` // exit: output bytes lost to write errors
	// OOM (exit): the executable's cgroup recorded an OOM kill.
	OOM bool `json:"oom,omitempty"`
	// Warnings (running) name the isolation and limits not enforced.
	Warnings []string `json:"warnings,omitempty"`
	// DroppedStdout and DroppedStderr (output, exit) count the bytes of each
	// stream lost to write errors since the init started. Dropping (output)
	// says whether writes are failing now.
	DroppedStdout int64 `json:"dropped_stdout,omitempty"`
	DroppedStderr int64 `json:"dropped_stderr,omitempty"`
	Dropping      bool  `json:"dropping,omitempty"`
	// RotationFailures (output, exit) counts the log rotations of both
	// streams that failed since the init started (the output went on into
	// the file it had); RotationFailing (output) says whether the last one
	// tried failed, and RotationError is the latest failure's error.
	RotationFailures int64  `json:"rotation_failures,omitempty"`
	RotationFailing  bool   `json:"rotation_failing,omitempty"`
	RotationError    string `json:"rotation_error,omitempty"`
}

// The report events.
const (
	EventRunning = "running" // the executable was started
	EventExit    = "exit"    // the executable ended; the init exits next
	EventFailed  = "failed"  // the hook or the exec failed; the init exits next
	EventReopen  = "reopen"  // CmdReopen took effect: later output goes to the reopened files
	EventReady   = "ready"   // the executable wrote a line to its notification fd
	// EventOutput reports the dropped output and the failed rotations:
	// when writes (rotations) start failing, each time the count doubles
	// while they fail, and when they succeed again. It is event-driven: a
	// log that never fails never sends one.
	EventOutput = "output"
)

// Exit codes of the init when the executable never ran.
const (
	ExitHookFailed = 125
	ExitExecFailed = 127
	ExitBadLaunch  = 126
)

// encode is r as one line of JSON, exactly as encoding/json writes it (a
// test holds the two to that), but without the reflection: the init sends
// few reports, and json's encoder for the type alone was a fifth of the
// init's own allocations.
func encode(r Report) []byte {
	return append(appendReport(make([]byte, 0, 64), r), '\n')
}

// ExitClaim is what the adopter of the init with host pid pid leaves in
// Launch.ExitFile to have the init record its executable's exit there
// ({"pid":N}, an ExitRecord without a report): an init writes its record
// only over a claim that names it.
func ExitClaim(pid int) []byte {
	return append(strconv.AppendInt(append(make([]byte, 0, 24), `{"pid":`...), int64(pid), 10), '}')
}

// claimant is the pid a claim or an exit record names, 0 if b is neither.
func claimant(b []byte) int {
	r := jsonwire.NewReader(b)
	pid := 0
	r.Object(func(key string) {
		if key == "pid" {
			pid = int(r.Int())
		} else {
			r.Skip()
		}
	})
	if r.End() != nil {
		return 0
	}
	return pid
}

// encodeExitRecord is rec as encoding/json writes it.
func encodeExitRecord(rec ExitRecord) []byte {
	b := strconv.AppendInt(append(make([]byte, 0, 80), `{"pid":`...), int64(rec.PID), 10)
	return append(appendReport(append(b, `,"report":`...), rec.Report), '}')
}

// appendReport appends r as encoding/json encodes it.
func appendReport(b []byte, r Report) []byte {
	b = append(b, `{"event":`...)
	b = jsonwire.AppendString(b, r.Event)
	b = appendInt(b, "pid", int64(r.PID))
	b = appendInt(b, "code", int64(r.Code))
	b = appendInt(b, "signal", int64(r.Signal))
	if r.Error != "" {
		b = jsonwire.AppendString(append(b, `,"error":`...), r.Error)
	}
	b = appendInt(b, "dropped", r.Dropped)
	if r.OOM {
		b = append(b, `,"oom":true`...)
	}
	if len(r.Warnings) > 0 {
		b = jsonwire.AppendStrings(append(b, `,"warnings":`...), r.Warnings)
	}
	b = appendInt(b, "dropped_stdout", r.DroppedStdout)
	b = appendInt(b, "dropped_stderr", r.DroppedStderr)
	if r.Dropping {
		b = append(b, `,"dropping":true`...)
	}
	b = appendInt(b, "rotation_failures", r.RotationFailures)
	if r.RotationFailing {
		b = append(b, `,"rotation_failing":true`...)
	}
	if r.RotationError != "" {
		b = jsonwire.AppendString(append(b, `,"rotation_error":`...), r.RotationError)
	}
	return append(b, '}')
}

// appendInt appends ,"key":v unless v is zero (omitempty).
func appendInt(b []byte, key string, v int64) []byte {
	if v == 0 {
		return b
	}
	b = append(append(append(b, `,"`...), key...), `":`...)
	return strconv.AppendInt(b, v, 10)
}

// DecodeReport decodes one report line as encoding/json decodes it into a
// Report (unknown keys skipped), without the reflection: the daemon reads
// each init's reports on a goroutine of its own, whose stack the
// reflection's depth would keep large (1 MiB less of the daemon's memory
// at N=100, measured).
func DecodeReport(line []byte) (Report, error) {
	var rep Report
	r := jsonwire.NewReader(line)
	if r.Null() {
		return rep, fmt.Errorf("report: null")
	}
	r.Object(func(key string) { rep.member(r, key) })
	if err := r.End(); err != nil {
		return Report{}, fmt.Errorf("report: %w", err)
	}
	return rep, nil
}

// member reads the value of the member key into rep.
func (rep *Report) member(r *jsonwire.Reader, key string) {
	switch key {
	case "event":
		rep.Event = r.String()
	case "pid":
		rep.PID = int(r.Int())
	case "code":
		rep.Code = int(r.Int())
	case "signal":
		rep.Signal = int(r.Int())
	case "error":
		rep.Error = r.String()
	case "dropped":
		rep.Dropped = r.Int()
	case "oom":
		rep.OOM = r.Bool()
	case "warnings":
		rep.Warnings = r.Strings()
	case "dropped_stdout":
		rep.DroppedStdout = r.Int()
	case "dropped_stderr":
		rep.DroppedStderr = r.Int()
	case "dropping":
		rep.Dropping = r.Bool()
	case "rotation_failures":
		rep.RotationFailures = r.Int()
	case "rotation_failing":
		rep.RotationFailing = r.Bool()
	case "rotation_error":
		rep.RotationError = r.String()
	default:
		r.Skip()
	}
}

// Package control is the daemon's local API: the wire types, a Manager
// interface that the daemon implements, an HTTP server for it on a unix
// socket, and a Client that implements Manager over that socket. The vigil,
// bpm and monit command lines are thin users of Manager.
package control

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Manager is what the server serves and the client provides.
type Manager interface {
	// Status returns a snapshot of every supervised process and every
	// configuration problem.
	Status(ctx context.Context) (Status, error)
	// Act starts, stops or restarts the processes a request names and
	// blocks until each has settled. The returned statuses are those of the
	// processes named; the error says which did not reach the wanted state.
	Act(ctx context.Context, req ActionRequest) ([]ProcessStatus, error)
	// Signal sends a signal to one running process.
	Signal(ctx context.Context, req SignalRequest) error
	// Reload re-reads the jobs: added processes start, removed ones stop,
	// changed ones restart, unchanged ones keep running untouched.
	Reload(ctx context.Context) (ReloadResult, error)
}

// Errors a Manager returns; the server maps them to HTTP statuses and the
// client back to these values, so errors.Is works across the socket.
var (
	ErrNotFound   = errors.New("not found")
	ErrBadRequest = errors.New("bad request")
	ErrFailed     = errors.New("action failed")
	ErrNoDaemon   = errors.New("the vigil daemon is not running")
)

// Error is an error of one of the kinds above whose text is its message
// alone, so that "process x not present" does not end in ": not found".
type Error struct {
	Kind error // ErrNotFound, ErrBadRequest or ErrFailed
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Is reports whether target is e's kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

// Errorf returns an *Error of kind with a formatted message.
func Errorf(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// Actions for ActionRequest.
const (
	ActionStart   = "start"
	ActionStop    = "stop"
	ActionRestart = "restart"
	// ActionMonitor supervises again (and starts what is not up);
	// ActionUnmonitor stops supervising and leaves the processes as they are.
	ActionMonitor   = "monitor"
	ActionUnmonitor = "unmonitor"
)

// ActionRequest names an action and its target: every process of Job, or
// just Process when it is set.
type ActionRequest struct {
	Action  string `json:"action"`
	Job     string `json:"job"`
	Process string `json:"process,omitempty"`
}

// SignalRequest sends Signal (a name such as "HUP" or "SIGUSR1") to one process.
type SignalRequest struct {
	Job     string `json:"job"`
	Process string `json:"process"`
	Signal  string `json:"signal"`
}

// Status is the whole daemon at one moment.
type Status struct {
	Daemon    DaemonInfo      `json:"daemon"`
	Processes []ProcessStatus `json:"processes"`
	Problems  []Problem       `json:"problems,omitempty"`
}

// DaemonInfo describes the daemon itself.
type DaemonInfo struct {
	PID     int       `json:"pid"`
	Version string    `json:"version"`
	Root    string    `json:"root"`
	Backend string    `json:"backend"`
	Started time.Time `json:"started"`
}

// ProcessStatus is one supervised process.
type ProcessStatus struct {
	Job     string `json:"job"`
	Process string `json:"process"`
	State   string `json:"state"` // starting, running, backoff, stopping, stopped, failed
	Wanted  string `json:"wanted"`
	// Unmonitored: an exit is not restarted (monit's unmonitor).
	Unmonitored bool      `json:"unmonitored,omitempty"`
	PID         int       `json:"pid,omitempty"`      // the pid-file pid
	ExecPID     int       `json:"exec_pid,omitempty"` // the executable's pid
	Restarts    int       `json:"restarts"`
	Since       time.Time `json:"since"`
	LastExit    *Exit     `json:"last_exit,omitempty"`
	// Warnings name the isolation and limits not enforced for the latest
	// instance (e.g. not running as root, a missing cgroup controller).
	Warnings []string `json:"warnings,omitempty"`
	// Health is "" without startup or liveness probes (or when not
	// running), else "starting", "healthy" or "unhealthy".
	Health string `json:"health,omitempty"`
	// Ready: running, past its startup probe, and ready by its readiness
	// probe or notification when it has one.
	Ready bool `json:"ready"`
	// Probes are the latest result of each probe, with its latency.
	Probes []ProbeResult `json:"probes,omitempty"`
	// Usage is what the running process and its descendants use now; nil
	// when nothing runs.
	Usage *Usage `json:"usage,omitempty"`
	// Output counts what the process wrote that could not be logged.
	Output Output `json:"output"`
	// RetryAt, in backoff, is when the next start is due (zero when the
	// back end cannot tell: systemd's units).
	RetryAt time.Time `json:"retry_at,omitzero"`
	// MemoryLimitBytes is the configured limits.memory; 0 for none.
	MemoryLimitBytes int64 `json:"memory_limit_bytes,omitempty"`
}

// Usage is a running process's resource use, its descendants included,
// read from /proc when the status is taken.
type Usage struct {
	CPUSeconds float64 `json:"cpu_seconds"` // user+system since the executable started
	RSSBytes   int64   `json:"rss_bytes"`   // resident memory
	OpenFDs    int     `json:"open_fds"`    // descriptors open in the executable
	Processes  int     `json:"processes"`   // the executable and its descendants
}

// Output counts bytes of a process's stdout and stderr dropped because
// the log could not take them (a full disk, a vanished directory), over
// the life of the supervisor: the process never blocks on its log.
type Output struct {
	DroppedStdout int64 `json:"dropped_stdout_bytes"`
	DroppedStderr int64 `json:"dropped_stderr_bytes"`
}

// ProbeResult is the latest outcome of one of a process's probes.
type ProbeResult struct {
	Role      string    `json:"role"` // startup, liveness or readiness
	OK        bool      `json:"ok"`
	LatencyMS float64   `json:"latency_ms"`
	Message   string    `json:"message,omitempty"`
	At        time.Time `json:"at"`
	Failures  int       `json:"consecutive_failures"`
}

// Exit describes how a process last ended.
type Exit struct {
	Code        int       `json:"code"`
	Signal      string    `json:"signal,omitempty"`
	OOM         bool      `json:"oom,omitempty"`
	Error       string    `json:"error,omitempty"`
	At          time.Time `json:"at"`
	Description string    `json:"description"`
}

// Problem is a configuration error (the job does not run, or keeps its
// previous configuration) or a warning (the job runs).
type Problem struct {
	Severity string `json:"severity"` // "error" or "warning"
	Job      string `json:"job,omitempty"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Field    string `json:"field,omitempty"`
	Message  string `json:"message"`
}

// ReloadResult says what a reload did, by "JOB/PROC" names.
type ReloadResult struct {
	Started   []string  `json:"started,omitempty"`
	Stopped   []string  `json:"stopped,omitempty"`
	Restarted []string  `json:"restarted,omitempty"`
	Unchanged []string  `json:"unchanged,omitempty"`
	Problems  []Problem `json:"problems,omitempty"`
}

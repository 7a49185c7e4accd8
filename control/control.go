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
	ErrNotFound = errors.New("not found")
	// ErrConfig is a target that cannot run because its job's
	// configuration has errors (the message gives them). It is also
	// ErrNotFound: no supervised process answers to the name.
	ErrConfig     = errors.New("configuration invalid")
	ErrBadRequest = errors.New("bad request")
	ErrFailed     = errors.New("action failed")
	// ErrTimeout is a wait that ran out of time: the action goes on in
	// the daemon, and the statuses at that moment come with the error.
	ErrTimeout  = errors.New("timed out")
	ErrNoDaemon = errors.New("the vigil daemon is not running")
)

// Error is an error of one of the kinds above whose text is its message
// alone, so that "process x not present" does not end in ": not found".
type Error struct {
	Kind error // ErrNotFound, ErrConfig, ErrBadRequest or ErrFailed
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Is reports whether target is e's kind (ErrConfig is ErrNotFound too).
func (e *Error) Is(target error) bool {
	return target == e.Kind || e.Kind == ErrConfig && target == ErrNotFound
}

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
// just Process when it is set, and what the reply waits for.
type ActionRequest struct {
	Action  string `json:"action"`
	Job     string `json:"job"`
	Process string `json:"process,omitempty"`
	// Wait is what the reply waits for (one of the Wait constants); ""
	// is WaitSettled.
	Wait string `json:"wait,omitempty"`
	// TimeoutSeconds bounds a WaitRunning or WaitReady wait (0: none).
	// When it runs out the reply is ErrTimeout with the statuses at that
	// moment; the action goes on.
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	// UptimeSeconds is how long a started process must stay up for a
	// WaitRunning or WaitReady wait to succeed (0: at once).
	UptimeSeconds float64 `json:"uptime_seconds,omitempty"`
}

// What an action's reply waits for.
const (
	// WaitSettled (the default): start and restart reply once the process
	// has been exec'd (or failed, or backed off after an attempt); stop
	// once nothing of it is left; monitor and unmonitor at once.
	WaitSettled = "settled"
	// WaitNone replies as soon as the command is given.
	WaitNone = "none"
	// WaitRunning (start, restart): the new instance runs and has stayed
	// up for UptimeSeconds. An exit on the way fails the wait. For stop it
	// is WaitSettled.
	WaitRunning = "running"
	// WaitReady is WaitRunning and ready too: past its startup probe and
	// ready by its readiness probe or notification (a process without
	// them is ready once it runs).
	WaitReady = "ready"
)

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
	// Drain, in container mode once a drain has begun, is where it
	// stands (see Drainer).
	Drain *DrainState `json:"drain,omitempty"`
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
	// Stop, while the process is stopping, is where the stop ladder
	// stands; nil in the other states.
	Stop *StopProgress `json:"stop,omitempty"`
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
	// Isolation is what bpm.yml's isolation key asks for a bpm process:
	// "sandbox" (bpm's, the default) or "host" (unisolated, in the host's
	// namespaces); "" for what is not a bpm process (a monit check's
	// program). Warnings say what of it this machine does not enforce.
	Isolation string `json:"isolation,omitempty"`
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
// the life of the supervisor: the process never blocks on its log. It
// also counts the rotations of its logs (the logs key) that failed, after
// which the output went on into the file it had.
type Output struct {
	DroppedStdout    int64 `json:"dropped_stdout_bytes"`
	DroppedStderr    int64 `json:"dropped_stderr_bytes"`
	RotationFailures int64 `json:"rotation_failures"`
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
	// StopStep, for an exit that ended a stop, is the last step of the
	// stop ladder taken (as in StopProgress), StoppedBy that step's
	// signal and StopSeconds how long the stop took: "kill", "SIGKILL",
	// 17 is a process that ignored both SIGTERM and SIGQUIT.
	StopStep    string  `json:"stop_step,omitempty"`
	StoppedBy   string  `json:"stopped_by,omitempty"`
	StopSeconds float64 `json:"stop_seconds,omitempty"`
}

// The steps of the stop ladder, in order, for StopProgress.Step and
// Exit.StopStep.
const (
	StepSignal    = "signal"     // the shutdown signal (SIGTERM or SIGINT)
	StepQuit      = "quit"       // SIGQUIT, after 15 s
	StepKill      = "kill"       // SIGKILL to the whole tree, 2 s later
	StepForceKill = "force-kill" // SIGKILL to the init itself, 5 s later
)

// StopProgress is where a stop stands: the ladder's latest step (one of
// the Step constants) and its signal, when the stop began and when the
// step was taken.
type StopProgress struct {
	Step   string    `json:"step"`
	Signal string    `json:"signal"`
	Began  time.Time `json:"began"`
	StepAt time.Time `json:"step_at"`
}

// Problem is a configuration error (the job does not run, or keeps its
// previous configuration) or a warning (the job runs).
type Problem struct {
	Severity string `json:"severity"` // "error" or "warning"
	Job      string `json:"job,omitempty"`
	Process  string `json:"process,omitempty"` // when it concerns one process of Job
	// Kind, when set, says what the problem is for a program to act on:
	// ProblemUnsupervised.
	Kind    string `json:"kind,omitempty"`
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// ProblemUnsupervised is the kind of a warning about a job (or one of its
// processes) that a bpm.yml defines but nothing supervises: once monit
// control files exist, only the processes their checks start run, as
// under monit.
const ProblemUnsupervised = "unsupervised"

// ReloadResult says what a reload did, by "JOB/PROC" names.
type ReloadResult struct {
	Started   []string `json:"started,omitempty"`
	Stopped   []string `json:"stopped,omitempty"`
	Restarted []string `json:"restarted,omitempty"`
	Unchanged []string `json:"unchanged,omitempty"`
	// Rejected names the jobs whose configuration failed to load: each
	// keeps what it runs (its previous configuration, or nothing).
	Rejected []string  `json:"rejected,omitempty"`
	Problems []Problem `json:"problems,omitempty"`
	// DryRun: nothing was done; the lists say what a reload would do.
	DryRun bool `json:"dry_run,omitempty"`
}

// ReloadPlanner is a Manager that can say what a reload would do without
// doing it (GET /v1/reload/plan); the server answers ErrNotSupported for
// one that cannot.
type ReloadPlanner interface {
	// PlanReload reads the configuration as Reload does and returns what
	// Reload would start, stop, restart and keep, and the problems it would
	// find, with DryRun set. It changes nothing.
	PlanReload(ctx context.Context) (ReloadResult, error)
}

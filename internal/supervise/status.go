package supervise

import "time"

// ProcessEvent is a report from a Process.
type ProcessEvent struct {
	Running bool // the executable runs (else: the process exited)
	ExecPID int  // with Running: the executable's pid
	Exit    Exit // without Running: how it ended
	// Warnings (with Running) name what isolation or limits are not
	// enforced for this instance.
	Warnings []string
	// Reaped, if not nil, is closed once the process itself (the pid-file
	// process) is gone: an exit may be reported while it is still ending.
	// A restart does not wait for it; a stop settles only after it.
	Reaped <-chan struct{}
}

// ID names a supervised process.
type ID struct{ Job, Process string }

func (id ID) String() string { return id.Job + "/" + id.Process }

// Status is an immutable snapshot of one supervised process.
type Status struct {
	ID
	State  State
	WantUp bool
	// Unmonitored: the process is left alone (an exit is not restarted).
	Unmonitored bool
	PID         int // pid-file pid while a process exists, else 0
	ExecPID     int // the executable's pid while running, else 0
	Restarts    int // automatic restarts so far
	Gen         int // spawns so far
	Since       time.Time
	LastExit    *Exit
	// Stop, while Stopping, is where the stop ladder stands (its latest
	// step, with when it was taken); nil in the other states.
	Stop     *Ladder
	Warnings []string // of the latest instance to run: isolation or limits not enforced
	// Health is "" without probes (or when not running), else "starting"
	// (the startup probe has not passed yet), "healthy" or "unhealthy".
	Health string
	// Ready: running, past its startup probe, and ready by its readiness
	// probe or notification (when it has one).
	Ready bool
	// Probes holds the latest result of each role's probe, with latency.
	Probes []ProbeResult
	// RetryAt, while in Backoff, is when the next start is due.
	RetryAt time.Time
}

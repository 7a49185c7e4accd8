// Package supervise keeps supervised processes in their wanted state. One
// goroutine (a Supervisor) owns each process; its transitions are the pure
// function next, and it talks to the operating system only through the
// Runner and Process interfaces declared here.
package supervise

import (
	"fmt"
	"syscall"
	"time"
)

// State is where a supervised process is in its life.
type State int

// The states. Stopped is the zero value.
const (
	Stopped  State = iota // no process, none wanted (or not yet started)
	Starting              // spawned; pre-start hook or exec under way
	Running               // the executable runs
	Backoff               // exited; a restart is pending on the timer
	Stopping              // stop signal sent; waiting for the exit
	Failed                // exited and given up on; no restart pending
)

var stateNames = [...]string{"stopped", "starting", "running", "backoff", "stopping", "failed"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", int(s))
}

// ParseState is the inverse of State.String.
func ParseState(s string) (State, bool) {
	for i, n := range stateNames {
		if n == s {
			return State(i), true
		}
	}
	return 0, false
}

// Exit is how a process ended.
type Exit struct {
	Code   int            // exit code when the executable exited by itself
	Signal syscall.Signal // non-zero when it was killed by a signal
	OOM    bool           // the kernel's OOM killer ended it
	Err    string         // non-empty when it never ran (spawn, hook or exec failure)
	At     time.Time
	// Stop, for an exit that ended a stop, is how far the stop ladder
	// had gone; nil for an exit nobody asked for.
	Stop *Ladder
}

// LadderStep is a step of the stop ladder.
type LadderStep int

// The steps, in the order the ladder takes them.
const (
	StepSignal    LadderStep = iota + 1 // the shutdown signal (TERM or INT) was sent
	StepQuit                            // SIGQUIT: the process outlived the shutdown signal's stage
	StepKill                            // the whole tree was killed
	StepForceKill                       // the init itself was killed: the tree kill did not end it
)

var stepNames = [...]string{"", "signal", "quit", "kill", "force-kill"}

func (s LadderStep) String() string {
	if s > 0 && int(s) < len(stepNames) {
		return stepNames[s]
	}
	return fmt.Sprintf("step(%d)", int(s))
}

// Ladder is where a stop stands: its latest step, that step's signal and
// when it was taken, when the stop began and (in an Exit) how long it
// lasted until the exit.
type Ladder struct {
	Step   LadderStep
	Signal syscall.Signal // the step's signal: the shutdown signal, SIGQUIT or SIGKILL
	Began  time.Time      // the shutdown signal was sent
	StepAt time.Time      // the step was taken
	After  time.Duration  // in an Exit: from Began to the exit
}

// Escalated reports whether the stop went past the shutdown signal.
func (l *Ladder) Escalated() bool { return l != nil && l.Step > StepSignal }

// Stopped describes a stop's end for people: "stopped by SIGTERM after
// 120ms", "stopped by SIGKILL after 17s".
func (l *Ladder) Stopped() string {
	return "stopped by " + signalName(l.Signal) + " after " + roundDuration(l.After).String()
}

// roundDuration keeps a duration readable: milliseconds below a second,
// tenths below a minute, seconds above.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond)
	case d < time.Minute:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// Success reports a clean exit with code 0.
func (e Exit) Success() bool { return e.Err == "" && e.Signal == 0 && e.Code == 0 }

func (e Exit) String() string {
	switch {
	case e.Err != "":
		return "failed to start: " + e.Err
	case e.OOM:
		return "killed by the OOM killer"
	case e.Signal != 0:
		return "killed by signal " + signalName(e.Signal)
	default:
		return fmt.Sprintf("exited with code %d", e.Code)
	}
}

func signalName(s syscall.Signal) string {
	if n := unixSignalName(s); n != "" {
		return n
	}
	return fmt.Sprintf("%d", int(s))
}

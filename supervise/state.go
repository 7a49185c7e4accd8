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

package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/vigil-bosh/vigil/control"
)

// The exit statuses of vigil's own commands, after systemctl and the LSB
// init-script conventions where they have one. bpm and monit keep theirs.
const (
	exitOK          = 0
	exitFailed      = 1   // generic failure (LSB 1)
	exitUsage       = 2   // invalid or excess arguments (LSB 2)
	exitNotRunning  = 3   // status: a process that should run does not (LSB status 3, systemctl status)
	exitUnknown     = 4   // status: no such job or process (LSB status 4, systemctl status of a missing unit)
	exitNotFound    = 5   // an action on a job or process that does not exist (LSB 5, systemctl start of a missing unit)
	exitNoDaemon    = 7   // no daemon answers on the control socket (LSB 7, "program is not running")
	exitTimeout     = 124 // a wait ran out of time (as timeout(1)); the action goes on
	exitInterrupted = 130 // interrupted (Ctrl-C) while waiting; the action goes on (128+SIGINT)
)

// exitStatus is one exit status and what it means.
type exitStatus struct {
	code    int
	meaning string
}

// exitTable says what each status means, for help, the man page and the
// docs (README and docs/COMPATIBILITY.md hold the same table; a test
// compares them).
func exitTable() []exitStatus {
	return []exitStatus{
		{exitOK, "success; for status: every process that should run runs, and the configuration has no errors"},
		{exitFailed, "failure: an action did not reach its state, a reload rejected a configuration, check found errors, the daemon answered with an error"},
		{exitUsage, "usage error: unknown command or flag, wrong arguments"},
		{exitNotRunning, "status, probe: a process that should run does not run (or is not ready), or the configuration has errors"},
		{exitUnknown, "status, logs: no such job or process"},
		{exitNotFound, "start, stop, restart, signal: no such job or process"},
		{exitNoDaemon, "no daemon answers on the control socket"},
		{exitTimeout, "a wait (--timeout) ran out; the daemon goes on with the action"},
		{exitInterrupted, "interrupted (Ctrl-C) while waiting; the daemon goes on with the action"},
	}
}

// exitsOf lists the statuses s gives: 0, 2 and its own, in table order.
func exitsOf(s *spec) []exitStatus {
	var out []exitStatus
	for _, e := range exitTable() {
		if e.code == exitOK || e.code == exitUsage || slices.Contains(s.exits, e.code) {
			out = append(out, e)
		}
	}
	return out
}

// exitError carries an exit status through error wrapping to main.
type exitError struct {
	code int
	err  error // printed when not nil
	bare bool  // printed as it is, without the "vigil: " prefix
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitWith gives err the status code, keeping its text.
func exitWith(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// statusOf is the exit status and the message main prints for err: an
// exitError's own, else by kind (no daemon, a timeout, an interrupt).
// notFound is the status of ErrNotFound (it differs between status and the
// actions).
func statusOf(err error, notFound int) (int, string) {
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		if ee.err == nil {
			return ee.code, ""
		}
		if ee.bare {
			return ee.code, ee.err.Error()
		}
		return ee.code, "vigil: " + ee.err.Error()
	case errors.Is(err, control.ErrNoDaemon):
		return exitNoDaemon, "vigil: " + err.Error()
	case errors.Is(err, control.ErrTimeout):
		return exitTimeout, "vigil: " + err.Error() + " (the daemon goes on)"
	case errors.Is(err, context.Canceled):
		return exitInterrupted, "vigil: interrupted: the daemon goes on with what was asked (see vigil status)"
	case errors.Is(err, control.ErrNotFound):
		return notFound, "vigil: " + err.Error()
	}
	return exitFailed, "vigil: " + err.Error()
}

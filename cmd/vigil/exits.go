package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

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
	exitConfig      = 6   // an action on a job whose configuration has errors (LSB 6, "program is not configured")
	exitNoDaemon    = 7   // no daemon answers on the control socket (LSB 7, "program is not running")
	exitTimeout     = 124 // a wait ran out of time (as timeout(1)); the action goes on
	exitInterrupted = 130 // interrupted (Ctrl-C) while waiting; the action goes on (128+SIGINT)
)

// exitStatus is one exit status and what it means: for every command in
// exitTable, for one command in its spec.
type exitStatus struct {
	code    int
	meaning string
}

// exitTable says what each status means whichever command gives it, for
// the man page's EXIT STATUS and the docs' table (exitDocTable).
func exitTable() []exitStatus {
	return []exitStatus{
		{exitOK, "success"},
		{exitFailed, "failure: what was asked did not happen (each command's help says what)"},
		{exitUsage, "usage error: an unknown command, flag or value, wrong arguments"},
		{exitNotRunning, "a process that should run does not run (or is not ready), a job named is not supervised, or the configuration has errors"},
		{exitUnknown, "no such job or process, for a command that reports"},
		{exitNotFound, "no such job or process, for an action"},
		{exitConfig, "the job's configuration has errors, so it cannot run"},
		{exitNoDaemon, "no daemon answers on the control socket"},
		{exitTimeout, "a wait (--timeout) ran out; the daemon goes on with the action"},
		{exitInterrupted, "interrupted (Ctrl-C) while waiting; the daemon goes on with the action"},
	}
}

// common is the wording of a status several commands give alike.
func common(code int) exitStatus {
	meaning := map[int]string{
		exitNoDaemon:    "no daemon answers on the control socket",
		exitInterrupted: "interrupted (Ctrl-C) while waiting: the daemon goes on with the action",
		exitNotFound:    "no such job or process (the closest name is suggested, or the names listed)",
		exitConfig:      "the job's configuration has errors, which are printed: it cannot run",
	}[code]
	return exitStatus{code, meaning}
}

// exitsOf lists the statuses s gives, in order: 0, 2 and its own.
func exitsOf(s *spec) []exitStatus {
	ok := s.ok
	if ok == "" {
		ok = "success"
	}
	out := []exitStatus{{exitOK, ok}, {exitUsage, "usage error: an unknown flag or value, wrong arguments"}}
	out = append(out, s.exits...)
	slices.SortStableFunc(out, func(a, b exitStatus) int { return a.code - b.code })
	return out
}

// gives reports whether s documents code.
func (s *spec) gives(code int) bool {
	return slices.ContainsFunc(exitsOf(s), func(e exitStatus) bool { return e.code == code })
}

// exitDocTable is the table of exit statuses README and
// docs/COMPATIBILITY.md hold (a test compares them): each status, what it
// means, and the commands that give it.
func exitDocTable() string {
	var b strings.Builder
	b.WriteString("| status | meaning | given by |\n|---|---|---|\n")
	cmds := visibleCommands()
	for _, e := range exitTable() {
		var by []string
		for i := range cmds {
			if cmds[i].own == nil && cmds[i].gives(e.code) {
				by = append(by, "`"+cmds[i].name+"`")
			}
		}
		who := strings.Join(by, ", ")
		if len(by) == len(slices.DeleteFunc(slices.Clone(cmds), func(s spec) bool { return s.own != nil })) {
			who = "every command"
		}
		b.WriteString("| " + strconv.Itoa(e.code) + " | " + e.meaning + " | " + who + " |\n")
	}
	return b.String()
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
// exitError's own, else by kind (no daemon, a timeout, an interrupt, a
// bad configuration, no such target). notFound is the status of
// ErrNotFound (it differs between status and the actions).
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
	case errors.Is(err, control.ErrConfig):
		return exitConfig, "vigil: " + err.Error()
	case errors.Is(err, control.ErrNotFound):
		return notFound, "vigil: " + err.Error()
	}
	return exitFailed, "vigil: " + err.Error()
}

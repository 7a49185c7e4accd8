package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// variant selects the behaviour of the supervised children.
type variant int

const (
	plain      variant = iota // every child runs quietly
	ignoreLast                // the last child ignores TERM and other catchable signals
	crashLoop                 // every child exits 1 right after reporting
)

// spec is what a driver needs to lay out one supervisor instance.
type spec struct {
	Dir     string // fresh, empty, owned by this instance
	N       int    // number of supervised processes
	Child   string // absolute path of the child binary
	Report  string // the harness's report socket
	Variant variant
}

// name is the process name of child i (0-based): p0001, p0002, ...
func (s spec) name(i int) string { return fmt.Sprintf("p%04d", i+1) }

// env is the complete environment child i must get, as KEY=VALUE pairs.
func (s spec) env(i int) []string {
	e := []string{"BENCH_REPORT=" + s.Report}
	switch {
	case s.Variant == crashLoop:
		e = append(e, "BENCH_EXIT=1")
	case s.Variant == ignoreLast && i == s.N-1:
		e = append(e, "BENCH_IGNORE_TERM=1")
	}
	return e
}

// driver knows how to configure, query and stop one kind of supervisor. A
// driver value serves exactly one instance.
type driver interface {
	// Setup writes the configuration for spec under spec.Dir.
	Setup(s spec) error
	// Command is the supervisor itself, to be run in the foreground; the
	// harness adds the process group, environment and log files.
	Command() *exec.Cmd
	// Status runs the status query over all processes once and returns
	// how long its command took, from its start until it exited (the
	// driver's check of the output is not counted).
	Status(ctx context.Context) (time.Duration, error)
	// StopAll asks the supervisor to stop every process and returns when
	// its stop command returns (which may be before the processes are gone).
	StopAll(ctx context.Context) error
	// Shutdown asks the running daemon (pid) to exit.
	Shutdown(ctx context.Context, pid int) error
	// StopNote says what the stop command does on escalation, for the report.
	StopNote() string
	// Paced reports whether the supervisor works on its own fixed cycle and
	// sleeps between steps (monit), so its timings are set by those sleeps
	// rather than by CPU; the harness then runs it alongside the others
	// instead of making everybody wait for it.
	Paced() bool
}

// peerOrder is the order supervisors run and appear in the report.
func peerOrder() []string {
	return []string{"vigil", vigilIsolated, "monit", "supervisor", "runit", "s6", "daemontools"}
}

// newDriver returns a fresh driver for the named supervisor.
func newDriver(name, vigilBin string) (driver, error) {
	switch name {
	case "monit":
		return &monitDriver{}, nil
	case "supervisor":
		return &supervisorDriver{}, nil
	case "runit":
		return &runitDriver{}, nil
	case "s6":
		return &s6Driver{}, nil
	case "daemontools":
		return &daemontoolsDriver{}, nil
	case "vigil":
		return &vigilDriver{bin: vigilBin}, nil
	case vigilIsolated:
		return &vigilDriver{bin: vigilBin, isolated: true}, nil
	}
	return nil, fmt.Errorf("unknown supervisor %q", name)
}

// terminate sends SIGTERM to the daemon pid, named what in the error.
func terminate(pid int, what string) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("signal %s: %w", what, err)
	}
	return nil
}

// baseEnv is the environment every supervisor starts with: nothing of the
// harness leaks into the children except a PATH.
func baseEnv() []string {
	return []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"}
}

// run executes a command to completion and wraps a failure with the tail of
// its output.
func run(ctx context.Context, timeout time.Duration, name string, args ...string) error {
	_, _, err := timed(ctx, timeout, name, args...)
	return err
}

// timed runs a command to completion like run, and returns its standard
// output and how long it took from its start until it exited.
func timed(ctx context.Context, timeout time.Duration, name string, args ...string) (string, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = baseEnv()
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	t0 := monoNow()
	err := cmd.Run()
	took := time.Duration(monoNow() - t0)
	if err != nil {
		return "", took, fmt.Errorf("%s: %w: %s", name, err, tail(out.String()+errs.String(), 160))
	}
	return out.String(), took, nil
}

// tail keeps the last n bytes of s on one line.
func tail(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// writeFile writes a file, creating its directory.
func writeFile(path, content string, mode os.FileMode) error {
	if err := os.MkdirAll(dirOf(path), 0o755); err != nil {
		return fmt.Errorf("mkdir for %s: %w", path, err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func dirOf(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/"
	}
	return path[:i]
}

// shQuote quotes s for /bin/sh.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// runScript is the run file used by runit and s6: the child gets exactly the
// environment of spec.env.
func runScript(s spec, i int) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\nexec env -i")
	for _, kv := range s.env(i) {
		b.WriteString(" " + shQuote(kv))
	}
	b.WriteString(" " + shQuote(s.Child) + "\n")
	return b.String()
}

package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// monitDriver runs monit in the foreground with a 1 s cycle (its minimum;
// BOSH uses 10 s) and one "check process" block per child. monit is not the
// parent of its processes: each start program backgrounds the child and
// writes its pid file, the way BOSH job monit files do.
type monitDriver struct {
	rc string
}

func (d *monitDriver) Setup(s spec) error {
	d.rc = filepath.Join(s.Dir, "monitrc")
	var b strings.Builder
	fmt.Fprintf(&b, "set daemon 1\n")
	for _, kv := range [][2]string{{"logfile", "monit.log"}, {"pidfile", "monit.pid"},
		{"idfile", "monit.id"}, {"statefile", "monit.state"}} {
		fmt.Fprintf(&b, "set %s %s\n", kv[0], filepath.Join(s.Dir, kv[1]))
	}
	fmt.Fprintf(&b, "set httpd unixsocket %s\n  allow admin:bench\n\n", filepath.Join(s.Dir, "monit.sock"))
	for i := range s.N {
		pidfile := filepath.Join(s.Dir, "pids", s.name(i)+".pid")
		cmd := "env -i"
		for _, kv := range s.env(i) {
			cmd += " " + kv
		}
		cmd += " " + s.Child
		fmt.Fprintf(&b, "check process %s with pidfile %s\n", s.name(i), pidfile)
		fmt.Fprintf(&b, "  start program = \"/bin/sh -c '%s </dev/null >/dev/null 2>&1 & echo $! > %s'\"\n", cmd, pidfile)
		fmt.Fprintf(&b, "  stop program = \"/bin/sh -c 'kill $(cat %s)'\"\n\n", pidfile)
	}
	if err := writeFile(filepath.Join(s.Dir, "pids", ".keep"), "", 0o644); err != nil {
		return err
	}
	// monit refuses a control file readable by others.
	return writeFile(d.rc, b.String(), 0o600)
}

func (d *monitDriver) Command() *exec.Cmd { return exec.Command("monit", "-I", "-c", d.rc) }

func (d *monitDriver) Status(ctx context.Context) (time.Duration, error) {
	_, took, err := timed(ctx, 30*time.Second, "monit", "-c", d.rc, "summary")
	return took, err
}

func (d *monitDriver) StopAll(ctx context.Context) error {
	return run(ctx, 30*time.Second, "monit", "-c", d.rc, "stop", "all")
}

func (d *monitDriver) Shutdown(ctx context.Context, pid int) error {
	if err := run(ctx, 10*time.Second, "monit", "-c", d.rc, "quit"); err != nil {
		return fmt.Errorf("monit quit: %w; %w", err, syscall.Kill(pid, syscall.SIGTERM))
	}
	return nil
}

func (d *monitDriver) StopNote() string {
	return "`monit stop all` returns at once; monit then runs each stop program in turn and waits up to 30 s for the pid to vanish; it never sends KILL itself"
}

func (d *monitDriver) Paced() bool { return true }

package bpmcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/vigil-bosh/vigil/proc"
)

// logs runs tail over the process's log files, as bpm does: the stdout log
// by default, the stderr log with -e, both with -a. Signals go to tail, and
// a blank line follows its end.
func (c *cli) logs(t target, fl parsed) error {
	var files []string
	if !fl.bool("err") || fl.bool("all") {
		files = append(files, c.layout.StdoutLog(t.job, t.proc))
	}
	if fl.bool("err") || fl.bool("all") {
		files = append(files, c.layout.StderrLog(t.job, t.proc))
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return errors.New("logs not found")
		}
	}
	var args []string
	if fl.bool("follow") {
		args = append(args, "-f")
	}
	if fl.bool("quiet") {
		args = append(args, "-q")
	}
	args = append(append(args, "-n", strconv.Itoa(fl.int("lines"))), files...)
	cmd := exec.Command("tail", args...)
	if err := c.runTool(cmd, nil); err != nil && !killedBySignal(err) {
		return err
	}
	fmt.Fprintln(c.env.Stdout)
	return nil
}

// shell runs an interactive bash in the process's environment and working
// directory, as the user running bpm.
//
// There are no namespaces yet, so the shell sees the host: the isolation
// issue will make it enter the process's namespaces (mounts, pid, user), as
// bpm's runc exec does.
func (c *cli) shell(t target, _ parsed) error {
	pid, err := c.runningPID(context.Background(), t)
	if err != nil {
		return err
	}
	p, err := c.loadProcess(t)
	if err != nil {
		return err
	}
	// As bpm's runc exec: into the executable's confinement, as its user.
	argv := append(proc.EnterArgs(proc.ExecutableOf(pid)), "/bin/bash")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = p.Workdir
	cmd.Env = append(p.Environ(c.layout), "TERM="+c.env.Getenv("TERM"))
	return c.runTool(cmd, c.env.Stdin)
}

// trace runs strace on the process's init and everything below it. strace
// ending by a signal (the operator's ^C) is a success.
func (c *cli) trace(t target, _ parsed) error {
	pid, err := c.runningPID(context.Background(), t)
	if err != nil {
		return err
	}
	cmd := exec.Command("strace", "-s", "100", "-f", "-y", "-yy", "-p", strconv.Itoa(pid))
	if err := c.runTool(cmd, nil); err != nil && !killedBySignal(err) {
		return err
	}
	return nil
}

// runTool runs cmd on bpm's terminal and passes on the signals bpm gets
// until it ends.
func (c *cli) runTool(cmd *exec.Cmd, stdin io.Reader) error {
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, c.env.Stdout, c.env.Stderr
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwardedSignals()...)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			_ = cmd.Process.Signal(s)
		case err := <-done:
			return err
		}
	}
}

func killedBySignal(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}

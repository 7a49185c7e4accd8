package bpmcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/vigil-bosh/vigil/internal/launch"
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
	tail, err := lookTool("tail", c.env.Getenv("PATH"))
	if err != nil {
		return err
	}
	cmd := exec.Command(tail, args...)
	if err := c.runTool(cmd, nil, (*exec.Cmd).Start); err != nil && !killedBySignal(err) {
		return err
	}
	fmt.Fprintln(c.env.Stdout)
	return nil
}

// shell runs an interactive bash where bpm's runc exec runs it: inside the
// executable's confinement (its namespaces, root and user), with the
// process's environment as it sees it plus TERM, in its working directory.
// The namespaces are entered from Go (setns), so no helper program such as
// nsenter is needed. Without isolation (not root), the shell runs on the
// host with the process's environment and working directory.
func (c *cli) shell(t target, _ parsed) error {
	pid, err := c.runningPID(context.Background(), t)
	if err != nil {
		return err
	}
	p, err := c.loadProcess(t)
	if err != nil {
		return err
	}
	exe := launch.ExecutableOf(pid)
	if exe == 0 {
		return errNotRunning
	}
	cf, err := launch.ConfinementOf(exe)
	if err != nil {
		return err
	}
	defer cf.Close()
	env, dir := p.Environ(c.layout), p.Workdir
	if cf.Confined() {
		env, dir = p.EnvironInside(), p.WorkdirInside(c.layout)
	}
	cmd := &exec.Cmd{Path: "/bin/bash", Args: []string{"/bin/bash"}, Dir: dir,
		Env: append(env, "TERM="+c.env.Getenv("TERM"))}
	return c.runTool(cmd, c.env.Stdin, cf.Start)
}

// trace runs strace on the process's executable and everything it starts
// from then on (bpm traces its container's tini, whose child the executable
// is; vigil's init is not the job's, so its executable is what is traced).
// strace ending by a signal (the operator's ^C) is a success.
func (c *cli) trace(t target, _ parsed) error {
	pid, err := c.runningPID(context.Background(), t)
	if err != nil {
		return err
	}
	exe := launch.ExecutableOf(pid)
	if exe == 0 {
		return errNotRunning
	}
	strace, err := lookTool("strace", c.env.Getenv("PATH"))
	if err != nil {
		return err
	}
	cmd := exec.Command(strace, "-s", "100", "-f", "-y", "-yy", "-p", strconv.Itoa(exe))
	if err := c.runTool(cmd, nil, (*exec.Cmd).Start); err != nil && !killedBySignal(err) {
		return err
	}
	return nil
}

// lookTool finds a program bpm runs (strace, tail) in PATH as bpm does, and
// where the stemcell has it when PATH lacks it (a bare environment, such as
// a monit start program's).
func lookTool(name, path string) (string, error) {
	for _, dir := range append(filepath.SplitList(path), "/usr/bin", "/bin", "/usr/sbin", "/sbin") {
		if p := filepath.Join(dir, name); filepath.IsAbs(p) {
			if _, err := exec.LookPath(p); err == nil {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}

// runTool starts cmd on bpm's terminal with start and passes on the
// signals bpm gets until it ends.
func (c *cli) runTool(cmd *exec.Cmd, stdin io.Reader, start func(*exec.Cmd) error) error {
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, c.env.Stdout, c.env.Stderr
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwardedSignals()...)
	defer signal.Stop(sigs)
	if err := start(cmd); err != nil {
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

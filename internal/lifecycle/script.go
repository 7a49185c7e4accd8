// Package lifecycle runs BOSH job lifecycle scripts as the BOSH agent does:
// the hooks (pre-start, post-start, post-deploy, pre-stop, post-stop) of all
// jobs in parallel, and the drain scripts with their protocol. It adds what
// the agent lacks: a time limit per script that ends a hung one (TERM, then
// KILL to its whole process group) and a report that names it.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/regfile"
)

// scriptPath is the agent's PATH for hook and drain scripts.
const scriptPath = "PATH=/usr/sbin:/usr/bin:/sbin:/bin"

// killGrace is how long a script that is being ended has between TERM and
// KILL, as the agent's TerminateNicely.
const killGrace = 10 * time.Second

// script is one run of ROOT/jobs/JOB/bin/NAME.
type script struct {
	layout boshpath.Layout
	job    string
	name   string   // hook name, or "drain"
	args   []string // arguments
	env    []string // added to the environment
	stdout io.Writer
}

// ErrTimedOut marks a script ended because its time ran out.
var ErrTimedOut = errors.New("timed out")

// run runs the script with its output appended to ROOT/sys/log/JOB/NAME.
// {stdout,stderr}.log (and stdout also to s.stdout when set). When ctx ends
// first, the script's process group gets SIGTERM, then SIGKILL after
// killGrace, and the error wraps ErrTimedOut. A non-zero exit is an
// *exec.ExitError. The state is how the script ended, nil when it did not
// start.
func (s script) run(ctx context.Context) (*os.ProcessState, error) {
	logDir := s.layout.LogDir(s.job)
	if err := os.MkdirAll(logDir, 0o750); err != nil {
		return nil, fmt.Errorf("log directory: %w", err)
	}
	out, err := openAppend(filepath.Join(logDir, s.name+".stdout.log"))
	if err != nil {
		return nil, err
	}
	defer out.Close()
	errf, err := openAppend(filepath.Join(logDir, s.name+".stderr.log"))
	if err != nil {
		return nil, err
	}
	defer errf.Close()

	cmd := exec.Command(filepath.Join(s.layout.JobBinDir(s.job), s.name), s.args...)
	cmd.Env = append(environ(), s.env...)
	cmd.Stdout, cmd.Stderr = out, errf
	if s.stdout != nil {
		cmd.Stdout = io.MultiWriter(out, s.stdout)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("run %s: %w", s.name, err)
	}
	// Scripts run at a lower priority than the supervisor, as the agent's.
	_ = unix.Setpriority(unix.PRIO_PROCESS, cmd.Process.Pid, 5)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return cmd.ProcessState, err
	case <-ctx.Done():
	}
	pgid := cmd.Process.Pid
	_ = unix.Kill(-pgid, unix.SIGTERM)
	t := time.NewTimer(killGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		_ = unix.Kill(-pgid, unix.SIGKILL)
		<-done
	}
	_ = unix.Kill(-pgid, unix.SIGKILL) // whatever it left behind
	return cmd.ProcessState, fmt.Errorf("%w: %w", ErrTimedOut, context.Cause(ctx))
}

// exitOf says how a script ended: "exit status N", "signal: NAME", or ""
// when it did not start.
func exitOf(st *os.ProcessState) string {
	if st == nil {
		return ""
	}
	return st.String()
}

// environ is vigil's environment with the agent's PATH in place of its own.
func environ() []string {
	return append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "PATH=")
	}), scriptPath)
}

// openAppend opens a script's log: the job's user owns the directory, so
// a symlink or a FIFO may be waiting there; both are refused at once.
func openAppend(path string) (*os.File, error) {
	f, err := regfile.Append(path, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	return f, nil
}

// jobsWith lists the jobs (sorted) that have bin/NAME, limited to only when
// it is not empty.
func jobsWith(l boshpath.Layout, name string, only []string) ([]string, error) {
	entries, err := os.ReadDir(l.JobsDir())
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	var out []string
	for _, e := range entries {
		if len(only) > 0 && !slices.Contains(only, e.Name()) {
			continue
		}
		if fi, err := os.Stat(filepath.Join(l.JobBinDir(e.Name()), name)); err == nil && !fi.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

package bpmcli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/launch"
	"github.com/vigil-bosh/vigil/internal/regfile"
	"github.com/vigil-bosh/vigil/job"
)

// cli is one command's run.
type cli struct {
	env    Env
	layout boshpath.Layout
}

// target is the process a command is about.
type target struct{ job, proc string }

// name is how bpm shows a process: the job alone when the process has the
// job's name, else JOB.PROC.
func (t target) name() string {
	if t.job == t.proc {
		return t.job
	}
	return t.job + "." + t.proc
}

// encodeID is bpm's container-id encoding: [A-Za-z0-9_-] stay as they are,
// every other byte becomes '.' and two lower-case hex digits.
func encodeID(s string) string {
	const hex = "0123456789abcdef"
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9', b == '_', b == '-':
			out = append(out, b)
		default:
			out = append(out, '.', hex[b>>4], hex[b&0xf])
		}
	}
	return string(out)
}

// lockPath is bpm's lifecycle lock of a process. Its name is always built
// from JOB.PROC, even when the two are the same.
func (c *cli) lockPath(t target) string {
	return filepath.Join(c.layout.Root(), "data", "bpm", "locks", "job-"+encodeID(t.job+"."+t.proc)+".lock")
}

// lockFDEnv names the descriptor on which term hands its held lock to the
// stop it leaves running in the background.
const lockFDEnv = "VIGIL_BPM_LOCK_FD"

// lock takes the process's lifecycle lock, waiting for as long as another
// start, stop or run holds it (bpm has no timeout either), and returns the
// open lock file: closing it releases the lock.
func (c *cli) lock(t target) (*os.File, error) {
	path := c.lockPath(t)
	if f := c.inheritedLock(path); f != nil {
		return f, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create lock directory: %w", err)
	}
	f, err := regfile.Open(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("acquire lock %s: %w", path, err)
	}
	return f, nil
}

// inheritedLock returns the lock that term passed down, if the descriptor
// named by lockFDEnv is the lock file at path. Taking a lock again on the
// same open file description succeeds at once.
func (c *cli) inheritedLock(path string) *os.File {
	fd, err := strconv.Atoi(c.env.Getenv(lockFDEnv))
	if err != nil || fd < 3 {
		return nil
	}
	var have, want unix.Stat_t
	if unix.Fstat(fd, &have) != nil || unix.Stat(path, &want) != nil || have.Dev != want.Dev || have.Ino != want.Ino {
		return nil
	}
	f := os.NewFile(uintptr(fd), path)
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return nil
	}
	return f
}

func (c *cli) client() *control.Client { return control.NewClient(c.layout.ControlSocket()) }

// daemonAct asks the daemon, if one runs, to start or stop the process and
// waits until it has. handled is false when no daemon runs or the daemon
// does not supervise the process: the caller then acts on its own.
func (c *cli) daemonAct(ctx context.Context, action string, t target) (handled bool, err error) {
	_, err = c.client().Act(ctx, control.ActionRequest{Action: action, Job: t.job, Process: t.proc})
	if errors.Is(err, control.ErrNoDaemon) || errors.Is(err, control.ErrNotFound) {
		return false, nil
	}
	return true, err
}

// loadProcess reads the job's configuration as bpm does before start and
// run, with bpm's error texts.
func (c *cli) loadProcess(t target) (job.Process, error) {
	j, _, err := job.Load(c.layout, t.job)
	if err != nil {
		return job.Process{}, fmt.Errorf("failed to parse job configuration: %w", err)
	}
	p, ok := j.Process(t.proc)
	if !ok {
		return job.Process{}, &notPresentError{proc: t.proc, config: j.ConfigPath}
	}
	return p, nil
}

// notPresentError is bpm's error for a process its job does not define.
type notPresentError struct{ proc, config string }

func (e *notPresentError) Error() string {
	return fmt.Sprintf("process %q not present in job configuration (%s)", e.proc, e.config)
}

// runner is the Runner of p, as bpm starts it without a daemon: with the
// isolation on, where systemd is PID 1, its init goes into its own scope as
// runc puts bpm's container. The returned func releases what it holds,
// once the start is made.
func (c *cli) runner(p job.Process) (*launch.Runner, func()) {
	init := c.env.Self
	if c.env.Init != nil {
		init = c.env.Init()
	}
	opts := launch.Options{Layout: c.layout, Init: init, InitEnv: c.env.InitEnv,
		NoIsolation: c.env.Getenv(launch.IsolationEnv) == "off"}
	if opts.NoIsolation {
		return launch.NewRunner(p, opts), func() {}
	}
	opts.Scopes = launch.SystemdScopes()
	return launch.NewRunner(p, opts), func() {
		if opts.Scopes != nil {
			_ = opts.Scopes.Close()
		}
	}
}

// state is what a process is doing, as bpm list shows it.
type state struct {
	status string // running, failed, stopped, or created (starting)
	pid    int    // the pid-file pid; 0 when none
}

// stateOf finds the process's state: from the daemon when it supervises
// the process and has a live instance, else from the pid file (a live init
// for JOB/PROC counts as running).
func (c *cli) stateOf(ctx context.Context, t target) (state, error) {
	st, err := c.client().Status(ctx)
	if err != nil && !errors.Is(err, control.ErrNoDaemon) {
		return state{}, fmt.Errorf("failed to get job: %w", err)
	}
	s := state{status: "stopped"}
	for _, ps := range st.Processes {
		if ps.Job == t.job && ps.Process == t.proc {
			s = fromDaemon(ps)
		}
	}
	if s.pid == 0 {
		if it, err := launch.FindInit(c.layout, t.job, t.proc); err == nil {
			s = state{status: "running", pid: it.PID}
			it.Close()
		}
	}
	return s, nil
}

// fromDaemon maps the daemon's states onto bpm's words: a process on its
// way down still runs, one whose init has not started the executable yet is
// "created" (runc's word for that), one that exited is "failed".
func fromDaemon(ps control.ProcessStatus) state {
	switch ps.State {
	case "running", "stopping":
		return state{status: "running", pid: ps.PID}
	case "starting":
		return state{status: "created", pid: ps.PID}
	case "backoff", "failed":
		return state{status: "failed"}
	}
	return state{status: "stopped"}
}

// runningPID returns the pid of a running process, or bpm's error.
func (c *cli) runningPID(ctx context.Context, t target) (int, error) {
	s, err := c.stateOf(ctx, t)
	if err != nil {
		return 0, err
	}
	if s.status != "running" || s.pid == 0 {
		return 0, errNotRunning
	}
	return s.pid, nil
}

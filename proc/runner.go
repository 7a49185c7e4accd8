// Package proc runs one bpm process natively: it prepares the job's
// directories, starts vigil's per-process init with the process's launch
// description, writes and removes the pid file, and turns the init's reports
// into supervise events. A Runner is owned by one supervisor.
package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/job"
	"github.com/vigil-bosh/vigil/procinit"
	"github.com/vigil-bosh/vigil/supervise"
)

// Options are shared by the runners of one daemon.
type Options struct {
	Layout boshpath.Layout
	// Init is the path of the binary re-executed as "Init init LABEL": the
	// vigil binary itself in production, the test binary in tests.
	Init string
	// InitEnv is added to the init's own (otherwise empty) environment, e.g.
	// to make a test binary act as the init. The executable never sees it.
	InitEnv []string
	// HookTimeout bounds hooks.pre_start; zero means DefaultHookTimeout.
	HookTimeout time.Duration
}

// DefaultHookTimeout bounds a pre_start hook. bpm has none of its own; monit's
// default start timeout of 30 s was its bound, and many jobs raise that.
const DefaultHookTimeout = 60 * time.Second

// Runner starts instances of one process. It implements supervise.Runner.
type Runner struct {
	opts    Options
	p       job.Process
	current atomic.Pointer[Process] // the latest instance, for Reopen
}

// NewRunner returns a runner for p.
func NewRunner(p job.Process, opts Options) *Runner {
	if opts.HookTimeout <= 0 {
		opts.HookTimeout = DefaultHookTimeout
	}
	return &Runner{opts: opts, p: p}
}

// Start prepares the directories and log files, spawns the init and sends
// it the launch. It returns once the init runs; the executable's start is
// reported through the Process's events.
func (r *Runner) Start(context.Context) (supervise.Process, error) {
	l, p := r.opts.Layout, r.p
	if err := prepare(l, p); err != nil {
		return nil, err
	}
	stdout, err := openLog(l.StdoutLog(p.Job, p.Name))
	if err != nil {
		return nil, err
	}
	defer stdout.Close()
	stderr, err := openLog(l.StderrLog(p.Job, p.Name))
	if err != nil {
		return nil, err
	}
	defer stderr.Close()

	// Our end is non-blocking so that its reader waits in the poller, not
	// in a thread of its own; the init's end blocks.
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err == nil {
		err = unix.SetNonblock(fds[1], false)
	}
	if err != nil {
		return nil, fmt.Errorf("start %s/%s: control socket: %w", p.Job, p.Name, err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "control"), os.NewFile(uintptr(fds[1]), "control")
	defer theirs.Close()

	label := p.Job + "/" + p.Name
	cmd := &exec.Cmd{
		Path:        r.opts.Init,
		Args:        []string{r.opts.Init, "init", label},
		Env:         append([]string{"GOMAXPROCS=1", "GODEBUG=asyncpreemptoff=1", "GOGC=50"}, r.opts.InitEnv...),
		Dir:         "/",
		Stdout:      stdout,
		Stderr:      stderr,
		ExtraFiles:  []*os.File{theirs},
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if err := cmd.Start(); err != nil {
		ours.Close()
		return nil, fmt.Errorf("start %s: init: %w", label, err)
	}
	launch := procinit.Launch{
		Label: label, Path: p.ResolvedExecutable, Args: append([]string{p.Executable}, p.Args...),
		Env: p.Environ(l), Dir: p.Workdir,
		Stdout: l.StdoutLog(p.Job, p.Name), Stderr: l.StderrLog(p.Job, p.Name),
		PreStart: p.Hooks.PreStart, HookTimeout: r.opts.HookTimeout,
	}
	pr := newProcess(cmd, ours, l.PidFile(p.Job, p.Name))
	if err := pr.send(launch); err != nil {
		_ = cmd.Process.Kill() // the init cannot run without its launch
	}
	r.current.Store(pr)
	go pr.watch()
	return pr, nil
}

// Reopen asks the latest instance, if it runs, to reopen its log files,
// and returns once later output goes to the reopened files.
func (r *Runner) Reopen(ctx context.Context) error {
	if pr := r.current.Load(); pr != nil {
		return pr.Reopen(ctx)
	}
	return nil
}

// prepare creates what bpm creates before a start: the log, pid, run and
// tmp directories, the data directory with ephemeral_disk and the store
// directory with persistent_disk.
func prepare(l boshpath.Layout, p job.Process) error {
	dirs := []struct {
		path string
		mode os.FileMode
	}{
		{l.LogDir(p.Job), 0o750}, {l.PidDir(p.Job), 0o700}, {l.JobRunDir(p.Job), 0o700},
		{l.DataDir(p.Job), 0o700}, {l.TmpDir(p.Job), 0o700},
	}
	if p.PersistentDisk {
		if _, err := os.Stat(l.StoreRoot()); err != nil {
			return errors.New("requested persistent disk does not exist")
		}
		dirs = append(dirs, struct {
			path string
			mode os.FileMode
		}{l.StoreDir(p.Job), 0o700})
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d.path, d.mode); err != nil {
			return fmt.Errorf("failed to create system files: %w", err)
		}
	}
	return nil
}

// openLog opens a log file for appending, refusing to follow a symlink
// planted in its place (bpm's safeio rule).
func openLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("refusing to open symlink at %s: %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	return f, nil
}

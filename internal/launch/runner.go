// Package launch runs one bpm process natively: it prepares the job's
// directories, starts vigil's per-process init with the process's launch
// description, writes and removes the pid file, and turns the init's reports
// into supervise events. A Runner is owned by one supervisor.
package launch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/health"
	"github.com/vigil-bosh/vigil/internal/launch/procinit"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/job"
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
	// Pool, if set, supplies spare inits so that a start does not wait for
	// one to start up. Nil starts a fresh init every time.
	Pool *Pool
	// NoIsolation runs processes as plain children of their init, with no
	// namespaces, root, user, capabilities, seccomp, limits or cgroup (tests
	// whose executables live outside the BOSH root). Otherwise a process is
	// isolated as bpm's are when vigil runs as root, and runs with a warning
	// when it does not.
	NoIsolation bool
	// NoCgroup leaves the process in the cgroup it was started in, with no
	// cgroup of its own: the service manager (systemd, for a unit run by
	// `vigil exec`) owns that cgroup and enforces the limits there.
	NoCgroup bool
	// Scopes, when set (SystemdScopes), puts each isolated process's init,
	// and so everything it starts, in a scope of its own named as bpm's
	// (see scopeName), with the process's limits, instead of a cgroup
	// below vigil/.
	Scopes Placer
	// User replaces vcap as the default identity (tests on machines
	// without a vcap user); "" means vcap.
	User string
	// Log, if set, receives the warnings of each start.
	Log *slog.Logger
	// Console, if set (stdout, stderr), also gets the process's output,
	// each line prefixed with JOB/PROC, through its init (vigil container
	// --console). The Pool's spares must have been given the same.
	Console []*os.File
}

// DefaultHookTimeout bounds a pre_start hook. bpm has none of its own; monit's
// default start timeout of 30 s was its bound, and many jobs raise that.
const DefaultHookTimeout = 60 * time.Second

// Runner starts instances of one process. It implements supervise.Runner.
type Runner struct {
	opts         Options
	p            job.Process
	current      atomic.Pointer[Process] // the latest instance, for Reopen
	lastInstance atomic.Uint64           // the last instance id given out (cgroup names)
	drops        drops                   // output dropped by all instances
	// warned is the isolation warnings last logged: a process that
	// restarts is not warned about again unless they change. Only Start
	// touches it, on the process's supervisor goroutine.
	warned string
}

// NewRunner returns a runner for p.
func NewRunner(p job.Process, opts Options) *Runner {
	if opts.HookTimeout <= 0 {
		opts.HookTimeout = DefaultHookTimeout
	}
	r := &Runner{opts: opts, p: p}
	r.drops.log, r.drops.label = opts.Log, p.Job+"/"+p.Name
	return r
}

// Start prepares the directories, takes a spare init from the pool (or
// starts a fresh one), puts it in its scope (with Options.Scopes) and
// sends it the launch; the init opens the log files. It returns once the
// init runs; the executable's start is reported through the Process's
// events.
func (r *Runner) Start(ctx context.Context) (supervise.Process, error) {
	launch, iso, ns, err := r.prepareStart()
	if err != nil {
		return nil, err
	}
	if pr, err := r.startOnSpare(ctx, launch, &iso, ns); pr != nil || err != nil {
		return pr, err
	}
	return r.startFresh(ctx, launch, &iso, ns)
}

// prepareStart makes the directories, the launch (on the heap: the
// supervisor's goroutine calls Start, and its stack stays small), the
// isolation and the notify socket, and logs what isolation is not
// enforced (once, until it changes).
func (r *Runner) prepareStart() (*procinit.Launch, isolation, *health.NotifySocket, error) {
	if err := prepare(r.opts.Layout, r.p); err != nil {
		return nil, isolation{}, nil, err
	}
	launch := r.launch()
	iso, err := r.isolate(launch)
	if err != nil {
		return nil, isolation{}, nil, err
	}
	ns, err := r.prepareNotify(launch)
	if err != nil {
		_ = iso.group.Remove()
		return nil, isolation{}, nil, err
	}
	if warned := strings.Join(launch.Warnings, "; "); warned != r.warned && r.opts.Log != nil {
		r.warned = warned
		if warned != "" {
			// One string, not a list: slog formats a list through fmt,
			// whose frames would double the supervisor goroutine's stack.
			r.opts.Log.Warn("isolation not enforced", "process", launch.Label, "warnings", warned)
		}
	}
	return launch, iso, ns, nil
}

// startOnSpare puts a spare init from the pool in its scope, if it has
// one, and sends it the launch; nil and no error when there is no spare,
// or it died waiting (it is discarded). A spare that cannot be placed is
// discarded, and the start fails.
func (r *Runner) startOnSpare(ctx context.Context, launch *procinit.Launch, iso *isolation, ns *health.NotifySocket) (*Process, error) {
	s := r.opts.Pool.take(iso.cloneFlags, len(r.opts.Console) > 0)
	if s == nil {
		return nil, nil
	}
	if err := r.place(ctx, iso, launch, s.cmd.Process.Pid); err != nil {
		s.discard()
		_ = ns.Close()
		return nil, err
	}
	pr := r.instance(s, *iso)
	if s.recordAs(r.opts.Layout.InitRecord(r.p.Job, r.p.Name)) != nil || pr.send(launch) != nil {
		s.discard() // a spare that died waiting: start a fresh one
		return nil, nil
	}
	r.begin(pr, ns)
	return pr, nil
}

// startFresh starts a new init for the launch.
func (r *Runner) startFresh(ctx context.Context, launch *procinit.Launch, iso *isolation, ns *health.NotifySocket) (*Process, error) {
	s, err := startInit(r.opts.Init, r.opts.InitEnv, launch.Label, nil, nil, iso.cloneFlags, r.opts.Console...)
	if err != nil {
		_ = iso.group.Remove()
		_ = ns.Close()
		return nil, fmt.Errorf("start %s: %w", launch.Label, err)
	}
	if err := r.place(ctx, iso, launch, s.cmd.Process.Pid); err != nil {
		s.discard()
		_ = ns.Close()
		return nil, err
	}
	if err := recordInit(r.opts.Layout.InitRecord(r.p.Job, r.p.Name), s.cmd.Process.Pid, s.cmd.Path); err != nil {
		// Unrecorded, the init could never be found again through its pid
		// file: a later daemon would start the process a second time.
		s.discard()
		_ = iso.group.Remove()
		_ = ns.Close()
		return nil, err
	}
	pr := r.instance(s, *iso)
	if err := pr.send(launch); err != nil {
		_ = s.cmd.Process.Kill() // the init cannot run without its launch: its exit is reported
	}
	r.begin(pr, ns)
	return pr, nil
}

// instance is the Process of the init s, in the isolation iso.
func (r *Runner) instance(s *spare, iso isolation) *Process {
	pr := newProcess(s.cmd, s.ctrl, r.opts.Layout.PidFile(r.p.Job, r.p.Name))
	pr.group, pr.drops = iso.group, &r.drops
	return pr
}

// begin attaches the notify socket to pr, makes it the latest instance and
// starts its watch, which reads the init's reports and ends once the init
// has exited.
func (r *Runner) begin(pr *Process, ns *health.NotifySocket) {
	pr.attachNotify(r.p.Health.Notify, ns, r.p.Health.Watchdog)
	r.current.Store(pr)
	go pr.watch()
}

// launch describes the process to its init.
func (r *Runner) launch() *procinit.Launch {
	l, p := r.opts.Layout, r.p
	return &procinit.Launch{
		Label: p.Job + "/" + p.Name, Path: p.ResolvedExecutable, Args: append([]string{p.Executable}, p.Args...),
		Env: p.Environ(l), Dir: p.Workdir,
		Stdout: l.StdoutLog(p.Job, p.Name), Stderr: l.StderrLog(p.Job, p.Name),
		PreStart: p.Hooks.PreStart, HookTimeout: r.opts.HookTimeout,
		PidFile: l.PidFile(p.Job, p.Name), ExitFile: l.ExitFile(p.Job, p.Name),
		Logs: logRotation(p.Logs), Timestamps: p.Logs.Timestamps,
		Console: r.consolePrefix(),
	}
}

// consolePrefix is what the init prefixes the lines it copies to the
// console with: JOB/PROC, or "" without a console.
func (r *Runner) consolePrefix() string {
	if len(r.opts.Console) == 0 {
		return ""
	}
	return r.p.Job + "/" + r.p.Name
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

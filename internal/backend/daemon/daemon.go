// Package daemon is the native back end: it loads the jobs (backend), runs
// a supervisor per process through the native runner (proc), serves the
// control API and its event stream, applies each reload's plan, hosts the
// monit personality as an extension (monitext), and stops everything on
// the way out. It implements control.Manager and control.EventSource.
package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend"
	"github.com/vigil-bosh/vigil/internal/initimage"
	"github.com/vigil-bosh/vigil/internal/launch"
	"github.com/vigil-bosh/vigil/internal/monit/monitext"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/job"
)

// Config configures a Daemon. Zero values pick the defaults noted.
type Config struct {
	Layout      boshpath.Layout
	Jobs        []string         // supervise only these jobs; empty means all
	Init        string           // the program executed as the per-process init; empty means the embedded vigil-init
	InitEnv     []string         // extra environment for the init (tests)
	Timing      supervise.Timing // stop ladder and restart policy; zero means bpm's ladder
	HookTimeout time.Duration    // bound on hooks.pre_start; zero means launch.DefaultHookTimeout
	Version     string
	// LeaveRunning makes the end of Run leave every process running (VM
	// mode: the next daemon adopts them), instead of stopping them all.
	LeaveRunning bool
	// LeaveRunningIf, when set, is asked once as Run ends whether to leave
	// every process running as LeaveRunning does (the stemcell's unit: yes
	// when systemd restarts the daemon, no when it stops it).
	LeaveRunningIf func() bool
	Log            *slog.Logger // nil means discard
	// NoIsolation runs processes without bpm's isolation (see
	// launch.Options.NoIsolation); each process then carries a warning.
	NoIsolation bool
	// ControlOptions are passed to the control server (e.g. a request
	// observer for the metrics).
	ControlOptions []control.ServeOption
	// Console also copies each process's output to the daemon's own stdout
	// and stderr, each line prefixed with JOB/PROC (vigil container
	// --console: the container's output, for kubectl logs).
	Console bool
}

// spareInits is how many inits the daemon keeps started ahead of need: a
// restart takes one instead of waiting for a new init to start up.
const spareInits = 2

// Daemon supervises the jobs of one BOSH root.
type Daemon struct {
	cfg   Config
	log   *slog.Logger
	init  string        // the program each init executes (set by Run)
	ready chan struct{} // closed once the first load has settled
	tree  *supervise.Tree
	// treeCtx lives as long as the supervisors (set by Run); commands are
	// the restart-limit commands running, bounded by it and waited for.
	treeCtx context.Context
	// stopping is done once the daemon is told to stop (Run's context):
	// the waits for starts to settle end then, so that no start, however
	// stuck, holds the shutdown.
	stopping context.Context
	commands sync.WaitGroup
	pool     *launch.Pool  // spare inits for fast restarts; set by Run
	scopes   launch.Placer // systemd's scopes for the processes where systemd is PID 1; set by Run
	started  time.Time
	// serveCtx lives as long as Run serves (set by Run): the extension's
	// API serves until it is done.
	serveCtx context.Context
	changes  backend.Notifier
	events   backend.Hub        // status changes as events
	usage    backend.UsageCache // the latest pass over /proc, for statuses and monit
	stopped  stoppedState       // what operators stopped, across restarts: see stopped.go
	ext      extension          // the monit personality: see extension.go

	// mu orders configuration changes against actions: Reload and shutdown
	// hold it to write, Act holds it to read while it sends its commands.
	mu      sync.RWMutex
	closing bool
	cur     atomic.Pointer[loaded]
}

// loaded is the configuration in force. It is never modified; Reload
// replaces it.
type loaded struct {
	jobs     map[string]*job.Job // by name (an invalid job keeps its last good config)
	specs    map[supervise.ID]spec
	runners  map[supervise.ID]*launch.Runner
	problems []control.Problem
	rejected []string // the jobs whose configuration failed to load
	extended bool     // the extension decides what runs, and persists operators' stops
	deps     depGraph // depends_on: start levels of the wanted processes
}

// New returns a daemon for cfg. Nothing runs until Run.
func New(cfg Config) (*Daemon, error) {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Daemon{cfg: cfg, log: log, ready: make(chan struct{})}
	d.ext = monitext.New(monitext.Host{Layout: cfg.Layout, Log: log, Supervisor: d.supervisor, Usage: &d.usage,
		Command: d.command, Changed: d.changes.Notify, Started: func() time.Time { return d.started },
		Asked: func(id supervise.ID, what string) {
			d.events.Asked(control.WithRequester(context.Background(), "monit's HTTP API (the BOSH agent, monit's command line)"),
				id.Job, id.Process, what)
		}})
	d.cur.Store(&loaded{jobs: map[string]*job.Job{}, runners: map[supervise.ID]*launch.Runner{}})
	return d, nil
}

// Run listens on the control socket, starts every process, and serves until
// ctx is done. Then it stops every process in parallel (each through its
// stop ladder), closes the socket, and returns nil once nothing is left.
// Configuration errors never stop Run; they show in Status.
func (d *Daemon) Run(ctx context.Context) error {
	ln, err := control.Listen(d.cfg.Layout.ControlSocket())
	if err != nil {
		return err
	}
	d.started = time.Now()
	d.stopping = ctx
	if !d.cfg.NoIsolation && os.Geteuid() == 0 {
		n, err := launch.SweepCgroups(d.cfg.Layout)
		if err != nil {
			d.log.Warn("cgroups left behind", "error", err)
		}
		if n > 0 {
			d.log.Info("removed empty cgroups left behind", "count", n)
		}
		if d.scopes = launch.SystemdScopes(); d.scopes != nil {
			defer d.scopes.Close()
		}
	}
	closeInit, err := d.resolveInit()
	if err != nil {
		ln.Close()
		return err
	}
	defer closeInit()
	d.pool = launch.NewPool(launch.PoolConfig{Init: d.init, Env: d.cfg.InitEnv, Size: spareInits,
		Isolated: !d.cfg.NoIsolation, Console: d.console(), Records: d.cfg.Layout.SpareRecords()})
	defer d.pool.Close()
	treeCtx, cancelTree := context.WithCancel(context.Background())
	defer cancelTree()
	d.treeCtx = treeCtx
	d.tree = supervise.NewTree(treeCtx)

	serveCtx, stopServing := context.WithCancel(context.Background())
	d.serveCtx = serveCtx
	served := make(chan error, 1)
	go func() { served <- control.Serve(serveCtx, ln, d, 5*time.Second, d.cfg.ControlOptions...) }()

	if _, err := d.Reload(ctx); err != nil {
		d.log.Error("initial load", "error", err)
	}

	d.log.Info("supervising", "root", d.cfg.Layout.Root(), "processes", len(d.tree.List()))
	close(d.ready)
	<-ctx.Done()

	leave := d.cfg.LeaveRunning || d.cfg.LeaveRunningIf != nil && d.cfg.LeaveRunningIf()
	if !leave {
		d.log.Info("stopping every process")
	}
	d.mu.Lock()
	d.closing = true
	d.mu.Unlock()
	d.ext.Stop()
	if leave {
		d.log.Info("leaving every process running")
		d.tree.Abandon()
	} else {
		d.stopWaves(context.Background(), d.cur.Load().deps) // dependents first
		err = d.tree.Shutdown(context.Background())
	}
	cancelTree() // ends restart-limit commands still running
	d.commands.Wait()
	stopServing()
	if serr := <-served; err == nil {
		err = serr
	}
	if xerr := d.ext.Wait(); err == nil {
		err = xerr
	}
	if err != nil {
		d.log.Error("stopped", "error", err)
	} else {
		d.log.Info("stopped")
	}
	return err
}

// resolveInit sets the program every init executes: Config.Init, or the
// embedded vigil-init (vigil itself where there is none). The returned
// func releases it; Run calls it once nothing will start an init again.
func (d *Daemon) resolveInit() (func(), error) {
	if d.cfg.Init != "" {
		d.init = d.cfg.Init
		return func() {}, nil
	}
	prog, err := initimage.Resolve()
	if err != nil {
		return nil, err
	}
	if prog.Fallback != nil {
		d.log.Info("running vigil itself as the per-process init", "reason", prog.Fallback)
	}
	d.init = prog.Path
	return func() { _ = prog.Close() }, nil
}

// console is where processes' output is copied besides their logs: the
// daemon's own stdout and stderr with Config.Console, else nothing.
func (d *Daemon) console() []*os.File {
	if !d.cfg.Console {
		return nil
	}
	return []*os.File{os.Stdout, os.Stderr}
}

// Ready is closed once Run has started every process of the first load and
// each has settled (running, or backing off after a failed start), or,
// with an active extension (monit's control files), once its engine has
// run its first cycle, whatever starts it still has in flight.
func (d *Daemon) Ready() <-chan struct{} { return d.ready }

// Changes returns a channel that is closed at the next change of any
// process's status. Call it again after each close.
func (d *Daemon) Changes() <-chan struct{} { return d.changes.Wait() }

// ReopenLogs makes every running process reopen its log files (after a
// rotation), and returns once all have.
func (d *Daemon) ReopenLogs(ctx context.Context) error {
	var first error
	for id, r := range d.cur.Load().runners {
		if err := r.Reopen(ctx); err != nil && first == nil {
			first = fmt.Errorf("reopen logs of %s: %w", id, err)
		}
	}
	return first
}

// supervisor returns the supervisor of id, once Run has begun.
func (d *Daemon) supervisor(id supervise.ID) (*supervise.Supervisor, bool) {
	if d.tree == nil {
		return nil, false
	}
	return d.tree.Get(id)
}

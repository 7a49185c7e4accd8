// Package daemon wires vigil together: it loads the jobs, runs a supervisor
// per process through the native runner, serves the control API, reloads on
// request, and stops everything on the way out. It implements
// control.Manager.
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
	"github.com/vigil-bosh/vigil/job"
	"github.com/vigil-bosh/vigil/monitcompat"
	"github.com/vigil-bosh/vigil/proc"
	"github.com/vigil-bosh/vigil/supervise"
)

// Config configures a Daemon. Zero values pick the defaults noted.
type Config struct {
	Layout      boshpath.Layout
	Jobs        []string         // supervise only these jobs; empty means all
	Init        string           // binary re-executed as the per-process init; empty means this one
	InitEnv     []string         // extra environment for the init (tests)
	Timing      supervise.Timing // stop ladder and restart policy; zero means bpm's ladder
	HookTimeout time.Duration    // bound on hooks.pre_start; zero means proc.DefaultHookTimeout
	Version     string
	// LeaveRunning makes the end of Run leave every process running (VM
	// mode: the next daemon adopts them), instead of stopping them all.
	LeaveRunning bool
	Log          *slog.Logger // nil means discard
	// NoIsolation runs processes without bpm's isolation (see
	// proc.Options.NoIsolation); each process then carries a warning.
	NoIsolation bool
	// ControlOptions are passed to the control server (e.g. a request
	// observer for the metrics).
	ControlOptions []control.ServeOption
}

// spareInits is how many inits the daemon keeps started ahead of need: a
// restart takes one instead of waiting for a new init to start up.
const spareInits = 2

// Daemon supervises the jobs of one BOSH root.
type Daemon struct {
	cfg   Config
	log   *slog.Logger
	ready chan struct{} // closed once the first load has settled
	tree  *supervise.Tree
	// treeCtx lives as long as the supervisors (set by Run); commands are
	// the restart-limit commands running, bounded by it and waited for.
	treeCtx  context.Context
	commands sync.WaitGroup
	pool     *proc.Pool // spare inits for fast restarts; set by Run
	started  time.Time
	changes  notifier
	events   eventHub     // status changes as events: see events.go
	usage    UsageCache   // the latest pass over /proc: see usage.go
	stopped  stoppedState // what operators stopped, across restarts: see stopped.go

	// mu orders configuration changes against actions: Reload and shutdown
	// hold it to write, Act holds it to read while it sends its commands.
	mu      sync.RWMutex
	closing bool
	cur     atomic.Pointer[loaded]

	// The monit personality, when control files exist: the engine in
	// force (replaced by each reload) and its HTTP server. engineStop ends
	// the engine in force and waits for its loop, so two engines never act
	// at once. engineStop and monitSrv are guarded by mu; monitCtx lives as
	// long as Run serves.
	engine     atomic.Pointer[monitcompat.Engine]
	engineStop func()
	monitSrv   *monitcompat.Server
	monitCtx   context.Context
	monitDone  chan error
	alerts     alertState
}

// loaded is the configuration in force. It is never modified; Reload
// replaces it.
type loaded struct {
	jobs     map[string]*job.Job // what runs, per job (an invalid job keeps its last good config)
	runners  map[supervise.ID]*proc.Runner
	problems []control.Problem
	monit    *monitLoad // nil without monit control files
	deps     depGraph   // depends_on: start levels of the wanted processes
}

// New returns a daemon for cfg. Nothing runs until Run.
func New(cfg Config) (*Daemon, error) {
	if cfg.Init == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find own binary for the per-process init: %w", err)
		}
		cfg.Init = self
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Daemon{cfg: cfg, log: log, changes: newNotifier(), ready: make(chan struct{})}
	d.cur.Store(&loaded{jobs: map[string]*job.Job{}, runners: map[supervise.ID]*proc.Runner{}})
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
	d.pool = proc.NewPool(d.cfg.Init, d.cfg.InitEnv, spareInits, !d.cfg.NoIsolation)
	defer d.pool.Close()
	treeCtx, cancelTree := context.WithCancel(context.Background())
	defer cancelTree()
	d.treeCtx = treeCtx
	d.tree = supervise.NewTree(treeCtx)

	serveCtx, stopServing := context.WithCancel(context.Background())
	d.monitCtx = serveCtx
	served := make(chan error, 1)
	go func() { served <- control.Serve(serveCtx, ln, d, 5*time.Second, d.cfg.ControlOptions...) }()

	if _, err := d.Reload(ctx); err != nil {
		d.log.Error("initial load", "error", err)
	}
	if e := d.engine.Load(); e != nil { // and the monit engine has looked at them once
		select {
		case <-e.Checked():
		case <-ctx.Done():
		}
	}
	d.log.Info("supervising", "root", d.cfg.Layout.Root(), "processes", len(d.tree.List()))
	close(d.ready)
	<-ctx.Done()

	if !d.cfg.LeaveRunning {
		d.log.Info("stopping every process")
	}
	d.mu.Lock()
	d.closing = true
	d.mu.Unlock()
	if d.engineStop != nil {
		d.engineStop()
	}
	if d.cfg.LeaveRunning {
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
	if d.monitDone != nil {
		if merr := <-d.monitDone; err == nil {
			err = merr
		}
	}
	d.log.Info("stopped", "error", err)
	return err
}

// Ready is closed once Run has started every process of the first load and
// each has settled (running, or backing off after a failed start), and
// the monit engine (with control files) has run its first cycle.
func (d *Daemon) Ready() <-chan struct{} { return d.ready }

// Changes returns a channel that is closed at the next change of any
// process's status. Call it again after each close.
func (d *Daemon) Changes() <-chan struct{} { return d.changes.wait() }

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

// notifier wakes any number of waiters at each change without ever
// blocking the notifying goroutine.
type notifier struct {
	mu *sync.Mutex
	ch *chan struct{}
}

func newNotifier() notifier {
	ch := make(chan struct{})
	return notifier{mu: &sync.Mutex{}, ch: &ch}
}

func (n notifier) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return *n.ch
}

func (n notifier) notify() {
	n.mu.Lock()
	defer n.mu.Unlock()
	close(*n.ch)
	*n.ch = make(chan struct{})
}

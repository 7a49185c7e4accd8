// Package monit makes vigil answer as monit 5.2.5 does: the engine
// that runs monit's actions with their dependency cascades and pending
// states, the HTTP API the BOSH agent and the monit command line use, the
// status XML and the summary and status texts.
package monit

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
)

// Unit is one service as the engine drives it. Its methods block until
// the change has settled (or failed); Status never blocks.
type Unit interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	Monitor(ctx context.Context) error
	Unmonitor(ctx context.Context) error
	Status() UnitStatus
}

// Monitoring states, as monit's XML numbers them.
const (
	NotMonitored = 0
	Monitored    = 1
	Initializing = 2
)

// UnitStatus is one service at one moment.
type UnitStatus struct {
	Running bool // the process (or file, host) exists
	Monitor int  // NotMonitored, Monitored or Initializing
	Events  int  // failed event bits; 0 is healthy
	Hints   int  // of Events, those that are changes (monit's status_hint)
	Message string
	// Starts counts the processes started so far, automatic restarts
	// included: the engine tells a restart after a crash from its own.
	Starts      int
	PID, PPID   int
	Uptime      time.Duration
	Children    int
	MemKB       int64
	MemKBTotal  int64
	MemPct      float64
	MemPctTotal float64
	CPUPct      float64
	CPUPctTotal float64
	// CPUTicks (the process) and CPUTicksTotal (with its descendants) are
	// the CPU time used so far, for the cycle's percentages.
	CPUTicks, CPUTicksTotal uint64
	Collected               time.Time
	// What the cycle last saw of the service's object: a file's, a
	// directory's ... attributes; a system's figures; each connection
	// test's result.
	File   *FileInfo
	System *SystemInfo
	Ports  []PortResult
	Pings  []PortResult // a remote host's ICMP tests
}

// Pending actions, as monit's XML numbers them.
const (
	PendingNone      = 0
	PendingRestart   = 2
	PendingStop      = 3
	PendingUnmonitor = 5
	PendingStart     = 6
	PendingMonitor   = 7
)

// actions are monit's action names, by their pending codes.
var actions = [...]struct {
	name string
	code int
}{{"start", PendingStart}, {"stop", PendingStop}, {"restart", PendingRestart},
	{"monitor", PendingMonitor}, {"unmonitor", PendingUnmonitor}}

// actionCode is the pending code of action name, false for none.
func actionCode(name string) (int, bool) {
	for _, a := range actions {
		if a.name == name {
			return a.code, true
		}
	}
	return 0, false
}

// actionName is the name of the action with pending code code.
func actionName(code int) string {
	for _, a := range actions {
		if a.code == code {
			return a.name
		}
	}
	return ""
}

// The errors Post returns, with monit's texts.
var (
	ErrNoService = errors.New("There is no service by that name")
	ErrAction    = errors.New("Invalid action")
	ErrPending   = errors.New("Other action already in progress -- please try again later")
)

// Engine is monit's daemon loop over a set of units: a cycle checks every
// service (its tests, restart-rate rules, files and hosts), as monit
// 5.2.5's validate does, every set daemon interval and at once when an
// action is posted; actions posted through the HTTP API run as soon as
// they are posted, each with its dependency cascade, and independently of
// each other unless their cascades overlap (jobs.go). Status reads never
// wait for it.
type Engine struct {
	cfg         *monitrc.Config
	units       map[string]Unit // by lower-cased name
	opts        EngineOptions
	started     time.Time
	incarnation int64
	wake        chan struct{} // a token when a cycle is due at once (an action was posted)
	posted      chan struct{} // a token when an action was posted
	// onDone, if set, is called after each action with its outcome.
	onDone  func(service, action string, err error)
	spawned sync.WaitGroup             // the programs started without Options.Spawn
	work    sync.WaitGroup             // the jobs' goroutines (actions, boot starts)
	checked chan struct{}              // closed once the first cycle has checked what no boot start holds
	cycles  int                        // the cycles begun, counted by Run's goroutine
	boots   map[string]*job            // the boot starts by lower-cased name, set by boot before the first cycle
	reach   map[string]map[string]bool // by lower-cased name: what a check of it may act on

	mu         sync.Mutex
	ended      bool                 // Run has returned: no action is taken any more
	pending    map[string]int       // lower-cased name → pending action (one at a time, as monit's)
	dispatched map[string]bool      // the pending actions that run (or wait for their turn) as jobs
	jobs       []*job               // the unfinished jobs, in the order claimed
	intents    map[string]intent    // lower-cased name → what a posted action not yet done means for it
	stopping   map[string]bool      // lower-cased name → its stop was asked for; its process may still run
	states     map[string]*svcState // lower-cased name → what the cycles keep
	sysCPU     cpuTimes             // the machine's CPU times at the last cycle that read them
	running    map[int]bool         // the sessions of the programs spawned without Options.Spawn
}

// EngineOptions are the engine's settings beside its configuration and
// units. The zero value is usable.
type EngineOptions struct {
	Started     time.Time // when the daemon started
	Incarnation int64     // when the configuration was read (epoch seconds)
	// OnDone, if set, is called after each posted action with its outcome.
	OnDone func(service, action string, err error)
	// Alert, if set, receives each event a cycle handles (a test's
	// failure or recovery, a restart-rate rule), as monit mails them. It
	// must not block.
	Alert func(Alert)
	// Spawn, if set, runs an exec action's program (or a check's start or
	// stop program) without waiting for it, and owns it; endOnFailure (a
	// check's start program) asks that the session of a program that
	// fails be ended (Running.Wait). Without it the engine spawns the
	// program itself in a session of its own and Run waits for it before
	// returning.
	Spawn func(p *monitrc.Program, env []string, endOnFailure bool)
	// Booting names the services to start now because they do not run,
	// as monit's first cycle starts them: the engine starts each once the
	// boot starts of its prerequisites have ended, never waiting for an
	// unrelated one, and that first start counts as a restart for the
	// restart-rate rules, as it does in monit (boot.go).
	Booting []string
	// After, if set, names more services whose boot starts a service's
	// waits for, besides those it depends on.
	After func(service string) []string
	// Adopted names the services whose process was found running when
	// the engine began (a daemon that died left it): taking it over is
	// not a restart.
	Adopted []string
	// Stopping names the services whose stop a daemon that died had not
	// finished: the engine stops them again if they run.
	Stopping []string
	// Host is the host name programs see in MONIT_HOST.
	Host string
	// OnChange, if set, is called after a cycle that changed what a
	// service's status shows (its events, whether it is initializing),
	// and after a boot start has ended, without a lock held; it must not
	// block.
	OnChange func()
	// OnPosted, if set, is called once an action has been posted and
	// before Post returns, so that what it means (Persisted) is saved
	// before it runs. It must not block for long.
	OnPosted func()
	// Stats, if set, fills a process's resource figures for a pid (for
	// resource tests on a unit that does not fill them itself).
	Stats func(pid int, st *UnitStatus)
}

// NewEngine returns an engine for cfg with a unit per service of cfg.
// incarnation is when the configuration was read (seconds since the
// epoch): it changes on every start and reload.
func NewEngine(cfg *monitrc.Config, units map[string]Unit, started time.Time, incarnation int64,
	onDone func(service, action string, err error)) *Engine {
	return NewEngineWith(cfg, units, EngineOptions{Started: started, Incarnation: incarnation, OnDone: onDone})
}

// NewEngineWith returns an engine for cfg with a unit per service of cfg.
func NewEngineWith(cfg *monitrc.Config, units map[string]Unit, o EngineOptions) *Engine {
	if o.Host == "" {
		o.Host = hostname()
	}
	cfg = cfg.WithSystem(o.Host)
	low := map[string]Unit{}
	for k, u := range units {
		low[strings.ToLower(k)] = u
	}
	for _, s := range cfg.Services {
		if k := strings.ToLower(s.Name); low[k] == nil && s.Type == monitrc.TypeSystem {
			low[k] = NewCheckUnit(s, true) // monit's own system service, when none is declared
		}
	}
	e := &Engine{cfg: cfg, units: low, opts: o, started: o.Started, incarnation: o.Incarnation,
		wake: make(chan struct{}, 1), posted: make(chan struct{}, 1), pending: map[string]int{},
		dispatched: map[string]bool{}, intents: map[string]intent{}, stopping: map[string]bool{},
		onDone: o.OnDone, states: map[string]*svcState{}, running: map[int]bool{}, checked: make(chan struct{}),
		reach: map[string]map[string]bool{}, boots: map[string]*job{}}
	for _, u := range low {
		if cu, ok := u.(*CheckUnit); ok {
			cu.mu.Lock()
			cu.spawn = e.spawn
			cu.mu.Unlock()
		}
	}
	for _, s := range cfg.Services {
		st := &svcState{init: true, events: map[string]*eventState{}}
		if u := low[strings.ToLower(s.Name)]; u != nil {
			st.lastStarts = u.Status().Starts
		}
		if s.Path != "" {
			beginPath(s, st)
		}
		e.states[strings.ToLower(s.Name)] = st
	}
	for _, s := range cfg.Services {
		e.reach[strings.ToLower(s.Name)] = e.reachOf(s)
	}
	for _, n := range o.Booting {
		if st := e.states[strings.ToLower(n)]; st != nil {
			st.booting = true
		}
	}
	for _, n := range o.Adopted {
		if st := e.states[strings.ToLower(n)]; st != nil {
			st.lastStarts = max(st.lastStarts, 1) // its supervisor may not have taken it over yet
		}
	}
	for _, n := range o.Stopping {
		e.stopping[strings.ToLower(n)] = true
	}
	return e
}

// Checked is closed once the first cycle has checked every service that
// no boot start holds (the services that run read running then); the
// first cycle goes on to check the others as their starts end.
func (e *Engine) Checked() <-chan struct{} { return e.checked }

// Config is the configuration the engine runs.
func (e *Engine) Config() *monitrc.Config { return e.cfg }

// Incarnation is when the configuration was read.
func (e *Engine) Incarnation() int64 { return e.incarnation }

// Started is when the daemon started.
func (e *Engine) Started() time.Time { return e.started }

// Pending returns the pending action of a service.
func (e *Engine) Pending(name string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.pending[strings.ToLower(name)]
}

// Unit returns the unit of a service.
func (e *Engine) Unit(name string) (Unit, bool) {
	u, ok := e.units[strings.ToLower(name)]
	return u, ok
}

// Post marks action pending for the service and returns at once; the
// action runs as soon as the work on the services its cascade covers
// allows (at once, unless an earlier action or a check acts on one of
// them), and a cycle runs at once, as monit's daemon wakes up for a
// scheduled action. Before Post returns, what the action means for the
// next daemon is recorded (OnPosted). It fails with ErrNoService,
// ErrAction or ErrPending (for a service with an action pending, or
// once Run has returned: a reload's engine takes the action when it is
// asked again).
func (e *Engine) Post(name, action string) error {
	svc, ok := e.cfg.Lookup(name)
	if !ok {
		return ErrNoService
	}
	code, ok := actionCode(action)
	if !ok {
		return ErrAction
	}
	key := strings.ToLower(svc.Name)
	scope := e.scope(svc, action, true)
	e.mu.Lock()
	if e.pending[key] != PendingNone || e.ended {
		e.mu.Unlock()
		return ErrPending // an ended engine's: the next one (a reload's) takes it, asked again
	}
	e.pending[key] = code
	e.intend(svc, action, scope)
	e.mu.Unlock()
	if e.opts.OnPosted != nil {
		e.opts.OnPosted()
	}
	e.kick()
	return nil
}

// Do runs an action with monit's dependency cascade and returns once it is
// done. The first failure is returned; the cascade goes on where monit's
// does. The caller holds the work on the services it covers (a job).
func (e *Engine) Do(ctx context.Context, name, action string) error {
	svc, ok := e.cfg.Lookup(name)
	if !ok {
		return ErrNoService
	}
	c := &cascade{e: e, ctx: ctx, done: map[*monitrc.Service]bool{}, verb: action, exact: true}
	if !c.run(svc, action) {
		return ErrAction
	}
	return c.err
}

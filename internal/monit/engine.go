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

// Engine is monit's daemon loop over a set of units: actions posted
// through the HTTP API run one after another, then a cycle checks every
// service (its tests, restart-rate rules, files and hosts), as monit
// 5.2.5's validate does, every set daemon interval. Status reads never
// wait for it.
type Engine struct {
	cfg         *monitrc.Config
	units       map[string]Unit // by lower-cased name
	opts        EngineOptions
	started     time.Time
	incarnation int64
	wake        chan struct{} // a token when an action was posted
	// onDone, if set, is called after each action with its outcome.
	onDone  func(service, action string, err error)
	spawned sync.WaitGroup // the programs started without Options.Spawn
	checked chan struct{}  // closed after the first cycle

	mu      sync.Mutex
	pending map[string]int       // lower-cased name → pending action (one at a time, as monit's)
	states  map[string]*svcState // lower-cased name → what the cycles keep
	sysCPU  cpuTimes             // the machine's CPU times at the last cycle that read them
	running map[int]bool         // the sessions of the programs spawned without Options.Spawn
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
	// Booting names the services the daemon starts now because they do
	// not run, as monit's first cycle starts them: that first start counts
	// as a restart for the restart-rate rules, as it does in monit.
	Booting []string
	// Host is the host name programs see in MONIT_HOST.
	Host string
	// OnChange, if set, is called after a cycle that changed what a
	// service's status shows (its events, whether it is initializing),
	// without a lock held; it must not block.
	OnChange func()
	// Booted, if set, holds the first cycle (and the actions posted
	// meanwhile) until it is closed: the daemon closes it once it has
	// started what it starts, so that the first cycle sees those starts,
	// as monit's first cycle makes them.
	Booted <-chan struct{}
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
		wake: make(chan struct{}, 1), pending: map[string]int{}, onDone: o.OnDone,
		states: map[string]*svcState{}, running: map[int]bool{}, checked: make(chan struct{})}
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
	for _, n := range o.Booting {
		if st := e.states[strings.ToLower(n)]; st != nil {
			st.booting = true
		}
	}
	return e
}

// Checked is closed once the first cycle has checked every service.
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

// Post marks action pending for the service and returns at once: Run
// wakes for it and runs it in its next cycle, at the service's turn (or at
// once if it is asleep), as monit's daemon runs a scheduled action. It
// fails with ErrNoService, ErrAction or ErrPending.
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
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pending[key] != PendingNone {
		return ErrPending
	}
	e.pending[key] = code
	select {
	case e.wake <- struct{}{}:
	default: // woken already
	}
	return nil
}

// Do runs an action with monit's dependency cascade and returns once it is
// done. The first failure is returned; the cascade goes on where monit's
// does.
func (e *Engine) Do(ctx context.Context, name, action string) error {
	svc, ok := e.cfg.Lookup(name)
	if !ok {
		return ErrNoService
	}
	c := &cascade{e: e, ctx: ctx, done: map[*monitrc.Service]bool{}, verb: action}
	switch action {
	case "start":
		if u := e.units[strings.ToLower(svc.Name)]; u != nil && u.Status().Running && svc.Type == monitrc.TypeProcess {
			c.unit(svc, func(u Unit) error { return u.Monitor(ctx) }) // running: only monitor it again
			break
		}
		c.depend(svc, "stop")
		c.start(svc)
		c.depend(svc, "start")
	case "stop":
		c.depend(svc, "stop")
		c.stop(svc)
	case "restart":
		c.depend(svc, "stop")
		if c.stop(svc) {
			c.start(svc)
			c.depend(svc, "start")
		}
	case "monitor":
		c.monitor(svc)
	case "unmonitor":
		c.depend(svc, "unmonitor")
		c.unit(svc, func(u Unit) error { return u.Unmonitor(ctx) })
	default:
		return ErrAction
	}
	return c.err
}

type cascade struct {
	e    *Engine
	ctx  context.Context
	err  error
	done map[*monitrc.Service]bool // started or monitored once already
	verb string                    // the action the cascade runs
}

func (c *cascade) note(err error) bool {
	if err != nil && c.err == nil {
		c.err = err
	}
	return err == nil
}

// unit applies f to s's unit, then brings what the cycles keep about s in
// line: its starts are the engine's own (not a crash's restart), a service
// no longer monitored forgets its events and counts (monit's
// Util_monitorUnset), one monitored again is initializing until its next
// check.
func (c *cascade) unit(s *monitrc.Service, f func(Unit) error) bool {
	u := c.e.units[strings.ToLower(s.Name)]
	if u == nil {
		return true
	}
	before := u.Status().Monitor
	ok := c.note(f(u))
	st := u.Status()
	// A restart's stop keeps the events (monit's soft unmonitor); a stop
	// or unmonitor forgets them.
	forget := st.Monitor == NotMonitored && (c.verb == "stop" || c.verb == "unmonitor")
	c.e.settle(s, st.Starts, before == NotMonitored && st.Monitor != NotMonitored, forget)
	return ok
}

// up starts or monitors (verb) the prerequisites of s, then s, each service
// once per action.
func (c *cascade) up(s *monitrc.Service, verb func(Unit) error) {
	if c.done[s] {
		return
	}
	c.done[s] = true
	for _, d := range s.DependsOn {
		if p, ok := c.e.cfg.Lookup(d); ok {
			c.up(p, verb)
		}
	}
	c.unit(s, verb)
}

func (c *cascade) start(s *monitrc.Service) { c.up(s, func(u Unit) error { return u.Start(c.ctx) }) }

func (c *cascade) monitor(s *monitrc.Service) {
	c.up(s, func(u Unit) error { return u.Monitor(c.ctx) })
}

func (c *cascade) stop(s *monitrc.Service) bool {
	return c.unit(s, func(u Unit) error { return u.Stop(c.ctx) })
}

// depend applies action to every service that depends on s, transitively:
// start and monitor top-down (s's dependants, then theirs), stop and
// unmonitor bottom-up (the deepest dependants first).
func (c *cascade) depend(s *monitrc.Service, action string) {
	for _, child := range c.e.cfg.Dependants(s.Name) {
		switch action {
		case "start":
			c.start(child)
			c.depend(child, action)
		case "monitor":
			c.monitor(child)
			c.depend(child, action)
		case "stop":
			c.depend(child, action)
			c.stop(child)
		case "unmonitor":
			c.depend(child, action)
			c.unit(child, func(u Unit) error { return u.Unmonitor(c.ctx) })
		}
	}
}

// Package monitcompat makes vigil answer as monit 5.2.5 does: the engine
// that runs monit's actions with their dependency cascades and pending
// states, the HTTP API the BOSH agent and the monit command line use, the
// status XML and the summary and status texts.
package monitcompat

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/vigil-bosh/vigil/monitrc"
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

// Event bits of monit's status bitmask (event.h).
const (
	EventConnection = 0x20
	EventResource   = 0x2
	EventTimeout    = 0x4
	EventNonexist   = 0x200
	EventExec       = 0x1000
)

// UnitStatus is one service at one moment.
type UnitStatus struct {
	Running     bool // the process (or file, host) exists
	Monitor     int  // NotMonitored, Monitored or Initializing
	Events      int  // failed event bits; 0 is healthy
	Message     string
	PID, PPID   int
	Uptime      time.Duration
	Children    int
	MemKB       int64
	MemKBTotal  int64
	MemPct      float64
	MemPctTotal float64
	CPUPct      float64
	CPUPctTotal float64
	Collected   time.Time
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

// Engine runs monit's actions over a set of units, one action at a time in
// the order they were posted, as monit's daemon loop does.
type Engine struct {
	cfg         *monitrc.Config
	units       map[string]Unit // by lower-cased name
	started     time.Time
	incarnation int64
	queue       chan queued
	// OnDone, if set, is called after each action with its outcome.
	onDone func(service, action string, err error)

	mu      sync.Mutex
	pending map[string]int // lower-cased name → pending action
}

type queued struct {
	svc    *monitrc.Service
	action int
}

// NewEngine returns an engine for cfg with a unit per service of cfg.
// incarnation is when the configuration was read (seconds since the
// epoch): it changes on every start and reload.
func NewEngine(cfg *monitrc.Config, units map[string]Unit, started time.Time, incarnation int64,
	onDone func(service, action string, err error)) *Engine {
	low := map[string]Unit{}
	for k, u := range units {
		low[strings.ToLower(k)] = u
	}
	return &Engine{cfg: cfg, units: low, started: started, incarnation: incarnation,
		queue: make(chan queued, 4096), pending: map[string]int{}, onDone: onDone}
}

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

// Post queues action for the service and returns at once: the action runs
// in Run. It fails with ErrNoService, ErrAction or ErrPending.
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
	select {
	case e.queue <- queued{svc: svc, action: code}:
		e.pending[key] = code
		return nil
	default:
		return ErrPending
	}
}

// Run executes posted actions one after another until ctx is done.
func (e *Engine) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case q := <-e.queue:
			err := e.Do(ctx, q.svc.Name, actionName(q.action))
			e.mu.Lock()
			delete(e.pending, strings.ToLower(q.svc.Name))
			e.mu.Unlock()
			if e.onDone != nil {
				e.onDone(q.svc.Name, actionName(q.action), err)
			}
		}
	}
}

// Do runs an action with monit's dependency cascade and returns once it is
// done. The first failure is returned; the cascade goes on where monit's
// does.
func (e *Engine) Do(ctx context.Context, name, action string) error {
	svc, ok := e.cfg.Lookup(name)
	if !ok {
		return ErrNoService
	}
	c := &cascade{e: e, ctx: ctx, done: map[*monitrc.Service]bool{}}
	switch action {
	case "start":
		if u := e.units[strings.ToLower(svc.Name)]; u != nil && u.Status().Running {
			c.note(u.Monitor(ctx)) // running: only monitor it again
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
}

func (c *cascade) note(err error) bool {
	if err != nil && c.err == nil {
		c.err = err
	}
	return err == nil
}

func (c *cascade) unit(s *monitrc.Service, f func(Unit) error) bool {
	u := c.e.units[strings.ToLower(s.Name)]
	if u == nil {
		return true
	}
	return c.note(f(u))
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

package supervise

import (
	"context"
	"errors"
	"sync/atomic"
	"syscall"
	"time"
)

// Runner starts one process of a supervised program. Start must not block on
// the process running: it spawns and returns, and the Process reports later.
type Runner interface {
	Start(ctx context.Context) (Process, error)
}

// Process is one started instance, as seen by its supervisor.
type Process interface {
	// PID is the pid that stands for the process (the one in its pid file).
	PID() int
	// Events delivers at most one Running event, then exactly one Exited
	// event, then is closed. Its sender never blocks on the supervisor.
	Events() <-chan ProcessEvent
	// Signal sends sig to the process (forwarded to the executable).
	Signal(sig syscall.Signal) error
	// Kill kills the executable and everything below it.
	Kill() error
	// ForceKill kills the process itself, when Kill did not end it.
	ForceKill() error
}

// Verb is an operator's request.
type Verb int

// The verbs.
const (
	VerbStart Verb = iota
	VerbStop
	VerbRestart
	VerbMonitor   // supervise again; start the process if it is not up
	VerbUnmonitor // stop supervising; leave the process as it is
)

// Config configures a Supervisor.
type Config struct {
	ID     ID
	Timing Timing
	// Runner starts the process. A supervisor without one can only adopt
	// (and stop) a running process: a start fails.
	Runner Runner
	// OnChange, if set, is called from the supervisor's goroutine after each
	// change of its Status, before the commands that the change settles are
	// answered. It must not block.
	OnChange func(Status)
	// Adopt, if set, is a process that already runs (found after a daemon
	// restart): the supervisor begins in Running with it, wanted up, and
	// restarts it as usual when it exits.
	Adopt Process
	// Unmonitored starts the supervisor unmonitored (kept across a daemon
	// restart): an adopted process is then left alone.
	Unmonitored bool
	// Probes are checked while the process runs (see ProbeRole). Their
	// thresholds are copied into Timing.Health by New.
	Probes []Probe
	// OnLimit, if set, is called from the supervisor's goroutine when the
	// restart limit is reached with Then == restart.Exec. It must not block.
	OnLimit func()
}

type command struct {
	verb   Verb
	sig    syscall.Signal // for a signal request (verb ignored)
	signal bool
	reply  chan Status // settle reply, buffered; nil for a signal
	errc   chan error  // signal reply, buffered
}

type waiter struct {
	up     bool
	now    bool // settled by the next publish, whatever the state
	minGen int
	reply  chan Status
}

// Supervisor owns one supervised process. Its methods are safe for
// concurrent use; its state (run) belongs to the goroutine in Run.
type Supervisor struct {
	cfg  Config
	cmds chan command
	snap atomic.Pointer[Status]
	done chan struct{}
	run  loop // touched only by the goroutine in Run
}

// New returns a Supervisor in state Stopped. Call Run to bring it to life.
func New(cfg Config) *Supervisor {
	if len(cfg.Probes) > 0 {
		cfg.Timing.Health = HealthTimingOf(cfg.Probes, cfg.Timing.Health.Notify)
	}
	s := &Supervisor{cfg: cfg, cmds: make(chan command), done: make(chan struct{})}
	s.run = loop{Supervisor: s, probeC: make(chan probeReport), m: machine{unmonitored: cfg.Unmonitored}}
	st := &Status{ID: cfg.ID}
	if cfg.Adopt != nil {
		// What Run publishes once it has taken the process over: a status
		// read before Run has begun must not say stopped (the monit
		// engine's first look at an adopted service took it for dead).
		st.State, st.WantUp, st.Unmonitored, st.PID, st.Gen, st.Since = Running, true, cfg.Unmonitored, cfg.Adopt.PID(), 1, time.Now()
	}
	s.snap.Store(st)
	return s
}

// ID names the supervised process.
func (s *Supervisor) ID() ID { return s.cfg.ID }

// Status returns the latest snapshot without blocking.
func (s *Supervisor) Status() Status { return *s.snap.Load() }

// Done is closed once Run has returned.
func (s *Supervisor) Done() <-chan struct{} { return s.done }

// ErrGone is returned when the supervisor no longer runs.
var ErrGone = errors.New("supervisor is gone")

// Send asks for v and returns at once. The returned channel receives the
// Status once the request has settled: for start and restart, when the
// process runs, failed, backed off after an attempt or was stopped; for stop,
// when it is down.
func (s *Supervisor) Send(ctx context.Context, v Verb) (<-chan Status, error) {
	c := command{verb: v, reply: make(chan Status, 1)}
	select {
	case s.cmds <- c:
		return c.reply, nil
	case <-s.done:
		return nil, ErrGone
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Do asks for v and blocks until it has settled or ctx is done.
func (s *Supervisor) Do(ctx context.Context, v Verb) (Status, error) {
	reply, err := s.Send(ctx, v)
	if err != nil {
		return Status{}, err
	}
	select {
	case st := <-reply:
		return st, nil
	case <-s.done:
		return s.Status(), ErrGone
	case <-ctx.Done():
		return s.Status(), ctx.Err()
	}
}

// Signal sends sig to the running process.
func (s *Supervisor) Signal(ctx context.Context, sig syscall.Signal) error {
	c := command{signal: true, sig: sig, errc: make(chan error, 1)}
	select {
	case s.cmds <- c:
	case <-s.done:
		return ErrGone
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-c.errc
}

// ErrNotRunning is returned by Signal when there is no process.
var ErrNotRunning = errors.New("process is not running")

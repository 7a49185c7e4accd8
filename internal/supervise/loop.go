package supervise

import (
	"context"
	"errors"
	"time"
)

// loop is the state of the goroutine that runs the machine. It is a field
// of its Supervisor, not a local of Run, so that it does not sit on that
// goroutine's stack under everything the loop calls.
type loop struct {
	*Supervisor
	ctx      context.Context
	m        machine
	proc     Process
	pid      int
	execPID  int
	warnings []string // of the latest instance to run
	timer    *time.Timer
	deadline time.Time // when the armed timer fires; zero when disarmed
	waiters  []waiter
	// reaped is closed once the process whose exit was reported while it
	// was still ending is gone; watched while the machine holds that exit.
	reaped <-chan struct{}
	// The probes of the running instance, and their latest results.
	prober    *prober
	probeC    chan probeReport
	lastProbe [numRoles]*ProbeResult
	changed   bool // an event was handled since the last publish
}

// Run runs the machine until ctx is done. It returns leaving any process as
// it is: stop it first (Do with VerbStop) to bring it down. Call it once.
//
// Each input is handled (the transition and its effects) within await;
// Run publishes the outcome once await has returned, so that the
// publishing (the OnChange hook, the replies) runs on a shallow stack.
func (s *Supervisor) Run(ctx context.Context) {
	defer close(s.done)
	l := &s.run // made by New
	l.ctx, l.timer = ctx, time.NewTimer(time.Hour)
	l.timer.Stop()
	defer l.timer.Stop()
	defer l.stopProber()
	l.m.since = time.Now()
	if s.cfg.Adopt != nil {
		l.handle(event{kind: evAdopt})
	}
	for {
		l.syncProber()
		l.publish()
		for l.changed = false; !l.changed; {
			if !l.await(ctx) {
				l.answerAll()
				return
			}
		}
	}
}

// await waits for one input and handles it. It returns false, having
// handled nothing, once ctx is done.
func (l *loop) await(ctx context.Context) bool {
	var events <-chan ProcessEvent
	var ready <-chan bool
	if l.proc != nil {
		events = l.proc.Events()
		if n, ok := l.proc.(ReadyNotifier); ok {
			ready = n.Ready()
		}
	}
	var reaped <-chan struct{}
	if l.m.pending != nil {
		reaped = l.reaped
	}
	select {
	case rep := <-l.probeC:
		l.probeResult(rep)
	case ok, open := <-ready:
		if open {
			l.handle(event{kind: evNotify, ok: ok, gen: l.m.gen})
		}
	case c := <-l.cmds:
		l.command(c)
	case pe, ok := <-events:
		if ev, ok := l.fromProcess(pe, ok); ok {
			l.handle(ev)
		}
	case <-l.timer.C:
		l.handle(event{kind: evTimer})
	case <-reaped:
		l.reaped = nil
		l.handle(event{kind: evReaped})
	case <-ctx.Done():
		return false
	}
	return true
}

func (l *loop) command(c command) {
	if c.signal {
		if l.proc == nil {
			c.errc <- ErrNotRunning
			return
		}
		c.errc <- l.proc.Signal(c.sig)
		return
	}
	kinds := [...]eventKind{VerbStart: evStart, VerbStop: evStop, VerbRestart: evRestart,
		VerbMonitor: evMonitor, VerbUnmonitor: evUnmonitor}
	l.handle(event{kind: kinds[c.verb]})
	// The publish that follows answers a waiter that is already settled.
	// An unmonitor settles at once: nothing is done to the process.
	w := waiter{up: c.verb != VerbStop, minGen: l.m.gen, reply: c.reply, now: c.verb == VerbUnmonitor}
	if c.verb == VerbRestart && l.m.state == Stopping {
		w.minGen++ // the spawn that counts comes after the stop
	}
	l.waiters = append(l.waiters, w)
}

// fromProcess takes in a report of the current process and returns the
// event it is for the machine, if any.
func (l *loop) fromProcess(pe ProcessEvent, ok bool) (event, bool) {
	switch {
	case !ok:
		l.proc, l.pid, l.execPID = nil, 0, 0
		return event{}, false
	case pe.Running:
		l.execPID, l.warnings = pe.ExecPID, pe.Warnings
		return event{kind: evRunning}, true
	}
	l.proc, l.pid, l.execPID = nil, 0, 0
	e := pe.Exit
	if e.At.IsZero() {
		e.At = time.Now()
	}
	l.reaped = pe.Reaped
	return event{kind: evExit, exit: e, ending: pe.Reaped != nil}, true
}

// handle applies one event: the transition and its effects, which may
// handle further events (a spawn that failed). Run publishes the outcome.
func (l *loop) handle(ev event) {
	for _, f := range l.m.step(ev, time.Now(), &l.cfg.Timing) {
		l.apply(f)
	}
	l.changed = true
}

// step applies next to *m. It is kept out of line: its frame holds the
// machine twice and the timing, and inlined it would sit below every
// effect the loop carries out (the spawn among them) for nothing.
//
//go:noinline
func (m *machine) step(ev event, now time.Time, t *Timing) []effect {
	var fx []effect
	*m, fx = next(*m, ev, now, *t)
	return fx
}

func (l *loop) apply(f effect) {
	switch f.kind {
	case fxSpawn:
		l.spawn()
	case fxAdopt:
		l.adopt()
	case fxSignal:
		if l.proc != nil {
			_ = l.proc.Signal(f.sig) // a process that is gone reports its exit
		}
	case fxKill:
		if l.proc != nil {
			_ = l.proc.Kill()
		}
	case fxForceKill:
		if l.proc != nil {
			_ = l.proc.ForceKill()
		}
	case fxArm:
		l.timer.Reset(f.d)
		l.deadline = time.Now().Add(f.d)
	case fxDisarm:
		l.timer.Stop()
		l.deadline = time.Time{}
	case fxLimitExec:
		if l.cfg.OnLimit != nil {
			l.cfg.OnLimit()
		}
	}
}

// errNoRunner is the failed start of a supervisor configured without a
// Runner (one that only adopts and stops).
var errNoRunner = errors.New("no runner: this supervisor only takes over a running process")

func (l *loop) spawn() {
	var p Process
	err := errNoRunner
	if l.cfg.Runner != nil {
		p, err = l.cfg.Runner.Start(l.ctx)
	}
	if err != nil {
		l.handle(event{kind: evExit, exit: Exit{Err: err.Error(), At: time.Now()}})
		return
	}
	l.proc, l.pid, l.execPID = p, p.PID(), 0
}

// adopt takes the configured process over. A report it has already sent
// (it runs, or it has ended meanwhile) is part of the adoption.
func (l *loop) adopt() {
	p := l.cfg.Adopt
	l.proc, l.pid = p, p.PID()
	select {
	case pe, ok := <-p.Events():
		if ev, ok := l.fromProcess(pe, ok); ok {
			l.handle(ev)
		}
	default:
	}
}

func (l *loop) publish() {
	st := &Status{
		ID: l.cfg.ID, State: l.m.state, WantUp: l.m.wantUp, Unmonitored: l.m.unmonitored, PID: l.pid, ExecPID: l.execPID,
		Restarts: l.m.restarts, Gen: l.m.gen, Since: l.m.since, LastExit: l.m.lastExit, Warnings: l.warnings,
		Stop: l.m.ladder(l.m.stageAt),
	}
	if l.m.state == Backoff {
		st.RetryAt = l.deadline // the backoff timer is the one armed
	}
	st.Health, st.Ready = healthOf(l.m, l.cfg.Timing.Health)
	for _, r := range l.lastProbe {
		if r != nil {
			st.Probes = append(st.Probes, *r)
		}
	}
	l.snap.Store(st)
	if l.cfg.OnChange != nil { // before the replies: whoever is answered can see the events
		l.cfg.OnChange(*st)
	}
	kept := l.waiters[:0]
	for _, w := range l.waiters {
		if w.settled(l.m) {
			w.reply <- *st
		} else {
			kept = append(kept, w)
		}
	}
	l.waiters = kept
}

// answerAll releases every waiter with the current status, at shutdown.
func (l *loop) answerAll() {
	for _, w := range l.waiters {
		w.reply <- l.Status()
	}
	l.waiters = nil
}

func (w waiter) settled(m machine) bool {
	if w.now {
		return true
	}
	if !w.up {
		return m.state == Stopped || m.state == Failed
	}
	switch m.state {
	case Running, Backoff:
		return m.gen >= w.minGen
	case Failed, Stopped:
		return true
	}
	return false
}

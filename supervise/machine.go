package supervise

import (
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/vigil-bosh/vigil/restart"
)

// Timing and signals of one supervised process. The zero value of each field
// picks bpm's behaviour.
type Timing struct {
	StopSignal  syscall.Signal // zero means SIGTERM
	StopTimeout time.Duration  // stop signal to SIGQUIT; zero means 15s
	QuitTimeout time.Duration  // SIGQUIT to the kill of the whole tree; zero means 2s
	KillTimeout time.Duration  // kill to the forced kill of the init; zero means 5s
	// StartTimeout bounds a spawn's wait for the running report: a start
	// that has not reported running by then has failed; its tree is
	// killed and the exit is restarted as a crash is. Zero means no
	// bound (bpm has none of its own; monit's start timeout was it).
	StartTimeout time.Duration
	Restart      restart.Policy
	Health       HealthTiming // which probes run, and their thresholds
}

func (t Timing) stopSignal() syscall.Signal {
	if t.StopSignal == 0 {
		return syscall.SIGTERM
	}
	return t.StopSignal
}

// Stage is the length of stage i of the stop ladder (0: after the stop
// signal, 1: after SIGQUIT, 2: after the kill), the default where t's is
// zero: bpm's 15 s and 2 s, and vigil's 5 s.
func (t Timing) Stage(i int) time.Duration {
	defs := [...]time.Duration{15 * time.Second, 2 * time.Second, 5 * time.Second}
	vals := [...]time.Duration{t.StopTimeout, t.QuitTimeout, t.KillTimeout}
	if vals[i] > 0 {
		return vals[i]
	}
	return defs[i]
}

// eventKind names what happened to a machine.
type eventKind int

const (
	evStart     eventKind = iota // operator: be up
	evStop                       // operator: be down
	evRestart                    // operator: go down, then up
	evRunning                    // the process reported that the executable runs
	evExit                       // the process (or the attempt to spawn it) ended
	evTimer                      // the machine's single timer fired
	evMonitor                    // operator: supervise again (and be up)
	evUnmonitor                  // operator: stop supervising; leave the process as it is
	evProbe                      // a probe of generation gen reported ok or not
	evNotify                     // the process of generation gen said ready (ok) or its watchdog expired (!ok)
)

type event struct {
	kind eventKind
	exit Exit      // for evExit
	role ProbeRole // for evProbe
	ok   bool      // for evProbe and evNotify
	gen  int       // for evProbe and evNotify: the spawn the result is about
}

// effectKind names what the loop must do for a transition, in order.
type effectKind int

const (
	fxSpawn     effectKind = iota // start a new process
	fxSignal                      // send sig to the process
	fxKill                        // kill the process's whole tree
	fxForceKill                   // kill the init itself: the tree kill did not end it
	fxArm                         // (re)arm the timer for d
	fxDisarm                      // stop the timer
	fxLimitExec                   // run the restart limit's command
)

type effect struct {
	kind effectKind
	sig  syscall.Signal
	d    time.Duration
}

// machine is the whole state of one supervised process that transitions
// depend on. It is a value: next returns a new one.
type machine struct {
	state  State
	wantUp bool // the operator wants it running
	// unmonitored: an exit is not restarted and a pending restart is
	// dropped; the process itself is not touched (monit's unmonitor).
	unmonitored bool
	thenStart   bool            // while Stopping: start again once it is down
	stage       int             // while Stopping: 1 signal sent, 2 QUIT sent, 3 killed, 4 forced
	gen         int             // number of spawns so far
	restarts    int             // automatic restarts so far
	history     restart.History // the restart policy's memory
	startedAt   time.Time       // time of the last spawn
	since       time.Time       // time of the last state change
	lastExit    *Exit
	// startKilled: while Starting, the start timed out and its tree was
	// killed; its exit is a failed start.
	startKilled bool
	// While Stopping after a failed probe: start again after restartDelay
	// (probeRestart), or end Failed (thenFail).
	probeRestart bool
	thenFail     bool
	restartDelay time.Duration
	health       health // the current instance's probe memory
}

// next is the transition function: given the machine, an event and the time
// it happened, it returns the new machine and the effects to carry out.
func next(m machine, ev event, now time.Time, t Timing) (machine, []effect) {
	old := m.state
	var fx []effect
	switch ev.kind {
	case evStart, evMonitor:
		m, fx = onStart(m, now)
	case evUnmonitor:
		m, fx = onUnmonitor(m)
	case evStop:
		m, fx = onStop(m, t)
	case evRestart:
		m, fx = onRestart(m, now, t)
	case evRunning:
		if m.state == Starting && !m.startKilled {
			m.state = Running
		}
	case evExit:
		m, fx = onExit(m, ev.exit, now, t)
	case evTimer:
		m, fx = onTimer(m, now, t)
	case evProbe:
		m, fx = onProbe(m, ev, now, t)
	case evNotify:
		m, fx = onNotify(m, ev, now, t)
	}
	if m.state != old {
		m.since = now
	}
	return m, startTimer(m, old, fx, t)
}

// startTimer bounds each spawn by t.StartTimeout: the timer is armed just
// before the spawn (so that a spawn failing at once, whose handling arms
// the timer for a backoff, has the last word) and disarmed once the
// process runs.
func startTimer(m machine, old State, fx []effect, t Timing) []effect {
	if t.StartTimeout <= 0 {
		return fx
	}
	if old == Starting && m.state == Running {
		return append(fx, effect{kind: fxDisarm})
	}
	for i, f := range fx {
		if f.kind == fxSpawn {
			return slices.Insert(fx, i, effect{kind: fxArm, d: t.StartTimeout})
		}
	}
	return fx
}

func spawn(m machine, now time.Time) (machine, []effect) {
	m.state = Starting
	m.gen++
	m.startedAt = now
	m.health = health{}
	m.startKilled = false
	return m, []effect{{kind: fxSpawn}}
}

func onStart(m machine, now time.Time) (machine, []effect) {
	m.wantUp = true
	m.unmonitored = false
	switch m.state {
	case Stopped, Failed:
		if m.state == Failed {
			m.history = restart.History{}
		}
		return spawn(m, now)
	case Backoff:
		m, fx := spawn(m, now)
		return m, append([]effect{{kind: fxDisarm}}, fx...)
	case Stopping:
		m.thenStart = true
	}
	return m, nil // Starting, Running: already on the way up
}

func onStop(m machine, t Timing) (machine, []effect) {
	m.wantUp = false
	m.thenStart, m.thenFail, m.probeRestart = false, false, false
	switch m.state {
	case Starting, Running:
		m.state = Stopping
		m.stage = 1
		return m, []effect{{kind: fxSignal, sig: t.stopSignal()}, {kind: fxArm, d: t.Stage(0)}}
	case Backoff:
		m.state = Stopped
		return m, []effect{{kind: fxDisarm}}
	case Failed:
		m.state = Stopped
	}
	return m, nil // Stopped, Stopping: already on the way down
}

// onUnmonitor stops supervising: a pending restart is dropped (the process
// is already gone), a running or starting process is left alone.
func onUnmonitor(m machine) (machine, []effect) {
	m.unmonitored = true
	if m.state == Backoff {
		m.state = Stopped
		return m, []effect{{kind: fxDisarm}}
	}
	return m, nil
}

func onRestart(m machine, now time.Time, t Timing) (machine, []effect) {
	m.unmonitored = false
	switch m.state {
	case Starting, Running:
		m, fx := onStop(m, t)
		m.wantUp, m.thenStart = true, true
		return m, fx
	case Stopping:
		m.wantUp, m.thenStart, m.thenFail, m.probeRestart = true, true, false, false
		return m, nil
	}
	return onStart(m, now)
}

func onExit(m machine, e Exit, now time.Time, t Timing) (machine, []effect) {
	if m.state == Starting && m.startKilled {
		e.Err = fmt.Sprintf("did not report running within %s", t.StartTimeout)
	}
	m.lastExit = &e
	switch m.state {
	case Stopping:
		m.stage = 0
		fx := []effect{{kind: fxDisarm}}
		switch {
		case m.thenFail:
			m.thenFail = false
			m.state = Failed
			return m, fx
		case m.thenStart && m.probeRestart:
			m.thenStart, m.probeRestart = false, false
			if m.restartDelay > 0 {
				m.state = Backoff
				return m, []effect{{kind: fxArm, d: m.restartDelay}}
			}
			m, more := spawn(m, now)
			return m, append(fx, more...)
		}
		if m.thenStart {
			m.thenStart = false
			m.history = restart.History{}
			m, more := spawn(m, now)
			return m, append(fx, more...)
		}
		m.state = Stopped
		return m, fx
	case Starting, Running:
		if m.unmonitored {
			m.state = Stopped // not supervised: nobody restarts it
			return m, nil
		}
		switch t.Restart.Mode {
		case restart.Never:
			return settleExit(m, e), nil
		case restart.OnFailure:
			if e.Success() {
				return settleExit(m, e), nil
			}
		}
		d, h := t.Restart.Next(m.history, m.startedAt, now)
		m.history = h
		switch {
		case d.GiveUp && t.Restart.Limit.Then == restart.GiveUp:
			m.state = Failed
			return m, nil
		case d.GiveUp: // leave-running and exec restart a dead process, at the longest delay
			m.state = Backoff
			m.restarts++
			fx := []effect{{kind: fxArm, d: t.Restart.MaxDelay()}}
			if t.Restart.Limit.Then == restart.Exec && !m.health.leftRunning {
				fx = append(fx, effect{kind: fxLimitExec})
			}
			return m, fx
		case d.Delay > 0:
			m.state = Backoff
			m.restarts++
			return m, []effect{{kind: fxArm, d: d.Delay}}
		}
		m.restarts++
		return spawn(m, now)
	}
	return m, nil // no process in the other states: a stale report
}

// settleExit ends a process that is not restarted: a clean exit is
// Stopped, any other Failed.
func settleExit(m machine, e Exit) machine {
	if e.Success() {
		m.state = Stopped
	} else {
		m.state = Failed
	}
	return m
}

func onTimer(m machine, now time.Time, t Timing) (machine, []effect) {
	switch m.state {
	case Backoff:
		return spawn(m, now)
	case Starting:
		if t.StartTimeout <= 0 {
			return m, nil
		}
		// The start timed out: kill its whole tree at once (a stop signal
		// would wait on a start that may not be listening), then the init
		// itself if that does not end it. The exit is a failed start.
		if !m.startKilled {
			m.startKilled = true
			return m, []effect{{kind: fxKill}, {kind: fxArm, d: t.Stage(2)}}
		}
		return m, []effect{{kind: fxForceKill}, {kind: fxArm, d: t.Stage(2)}}
	case Stopping:
		switch m.stage {
		case 1:
			m.stage = 2
			return m, []effect{{kind: fxSignal, sig: syscall.SIGQUIT}, {kind: fxArm, d: t.Stage(1)}}
		case 2:
			m.stage = 3
			return m, []effect{{kind: fxKill}, {kind: fxArm, d: t.Stage(2)}}
		default:
			m.stage = 4
			return m, []effect{{kind: fxForceKill}, {kind: fxArm, d: t.Stage(2)}}
		}
	}
	return m, nil // a timer that outlived its state
}

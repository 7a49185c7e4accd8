package supervise

import (
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/vigil-bosh/vigil/internal/supervise/restart"
)

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
	evReaped                     // the process whose exit was reported while it was still ending is gone
	evAdopt                      // take over the process the configuration found running
	numEventKinds
)

var eventNames = [...]string{"start", "stop", "restart", "running", "exit", "timer", "monitor", "unmonitor",
	"probe", "notify", "reaped", "adopt"}

func (k eventKind) String() string {
	if k >= 0 && k < numEventKinds {
		return eventNames[k]
	}
	return fmt.Sprintf("event(%d)", int(k))
}

type event struct {
	kind eventKind
	exit Exit      // for evExit
	role ProbeRole // for evProbe
	ok   bool      // for evProbe and evNotify
	gen  int       // for evProbe and evNotify: the spawn the result is about
	// ending, for evExit: the process is still ending; an evReaped follows
	// once it is gone. A stop settles only then; a restart does not wait.
	ending bool
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
	fxAdopt                       // take over the configured process (Config.Adopt)
	numEffectKinds
)

var effectNames = [...]string{"spawn", "signal", "kill", "force-kill", "arm", "disarm", "limit-exec", "adopt"}

func (k effectKind) String() string {
	if k >= 0 && k < numEffectKinds {
		return effectNames[k]
	}
	return fmt.Sprintf("effect(%d)", int(k))
}

type effect struct {
	kind effectKind
	sig  syscall.Signal
	d    time.Duration
}

// then is what a stop leads to once the process is down.
type then int

const (
	thenRest    then = iota // stay down (Stopped)
	thenStart               // an operator's start or restart: start afresh, the restart history forgotten
	thenRestart             // a failed probe's restart: start again after the policy's delay
	thenFail                // a failed probe that is not restarted: end Failed
)

// afterStop is the one choice a stop carries: what happens once its
// process is down.
type afterStop struct {
	then  then
	delay time.Duration // for thenRestart
}

// machine is the whole state of one supervised process that transitions
// depend on. It is a value: next returns a new one.
type machine struct {
	state  State
	wantUp bool // the operator wants it running
	// unmonitored: an exit is not restarted and a pending restart is
	// dropped; the process itself is not touched (monit's unmonitor).
	unmonitored bool
	after       afterStop // while Stopping: what follows the stop
	stage       int       // while Stopping: 1 signal sent, 2 QUIT sent, 3 killed, 4 forced
	stopBegan   time.Time // while Stopping: when the stop signal was sent
	stageAt     time.Time // while Stopping: when the current stage began
	stopSignal  syscall.Signal
	// pending, while Stopping, is the exit of a process that is still
	// ending: the stop settles with it once the process is reaped.
	pending   *Exit
	gen       int             // number of spawns (and adoptions) so far
	restarts  int             // automatic restarts so far
	history   restart.History // the restart policy's memory
	startedAt time.Time       // time of the last spawn
	since     time.Time       // time of the last state change
	lastExit  *Exit
	// startKilled: while Starting, the start timed out and its tree was
	// killed; its exit is a failed start.
	startKilled bool
	health      health // the current instance's probe memory
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
		m, fx = onStop(m, now, t)
	case evRestart:
		m, fx = onRestart(m, now, t)
	case evRunning:
		if m.state == Starting && !m.startKilled {
			m.state = Running
		}
	case evExit:
		if ev.ending && m.state == Stopping {
			e := ev.exit   // a copy: ev itself stays on the stack
			m.pending = &e // the stop settles once the process is reaped
			break
		}
		m, fx = onExit(m, ev.exit, now, t)
	case evReaped:
		if e := m.pending; e != nil {
			m.pending = nil
			m, fx = onExit(m, *e, now, t)
		}
	case evAdopt:
		m, fx = onAdopt(m, now)
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
		if m.after.then == thenRest {
			m.after = afterStop{then: thenStart} // a probe's restart or failure stands
		}
	}
	return m, nil // Starting, Running: already on the way up
}

// onAdopt takes over a process found running: a fresh machine begins in
// Running with it, wanted up, as if it had spawned it.
func onAdopt(m machine, now time.Time) (machine, []effect) {
	if m.state != Stopped || m.gen != 0 {
		return m, nil // only a machine that never ran adopts
	}
	m.state, m.wantUp = Running, true
	m.gen++
	m.startedAt = now
	m.health = health{}
	return m, []effect{{kind: fxAdopt}}
}

func onStop(m machine, now time.Time, t Timing) (machine, []effect) {
	m.wantUp = false
	m.after = afterStop{}
	switch m.state {
	case Starting, Running:
		m.state = Stopping
		m.stage, m.stopBegan, m.stageAt, m.stopSignal = 1, now, now, t.stopSignal()
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
		m, fx := onStop(m, now, t)
		m.wantUp, m.after = true, afterStop{then: thenStart}
		return m, fx
	case Stopping:
		m.wantUp, m.after = true, afterStop{then: thenStart}
		return m, nil
	}
	return onStart(m, now)
}

func onExit(m machine, e Exit, now time.Time, t Timing) (machine, []effect) {
	if m.state == Stopping {
		e.Stop = m.ladder(now)
	}
	if m.state == Starting && m.startKilled {
		e.Err = fmt.Sprintf("did not report running within %s", t.StartTimeout)
	}
	m.lastExit = &e
	switch m.state {
	case Stopping:
		return afterStopping(m, now)
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

// afterStopping carries out a stop's after-stop choice once its process
// has exited.
func afterStopping(m machine, now time.Time) (machine, []effect) {
	after := m.after
	m.stage, m.after = 0, afterStop{}
	m.stopBegan, m.stageAt, m.stopSignal = time.Time{}, time.Time{}, 0
	fx := []effect{{kind: fxDisarm}}
	switch after.then {
	case thenFail:
		m.state = Failed
		return m, fx
	case thenRestart:
		if after.delay > 0 {
			m.state = Backoff
			return m, []effect{{kind: fxArm, d: after.delay}}
		}
		m, more := spawn(m, now)
		return m, append(fx, more...)
	case thenStart:
		m.history = restart.History{}
		m, more := spawn(m, now)
		return m, append(fx, more...)
	}
	m.state = Stopped
	return m, fx
}

// ladder is where the stop of m stands at now: its step, that step's
// signal and when it was taken, and how long the stop has lasted.
func (m machine) ladder(now time.Time) *Ladder {
	if m.state != Stopping || m.stage == 0 {
		return nil
	}
	l := &Ladder{Step: LadderStep(m.stage), Signal: m.stopSignal, Began: m.stopBegan, StepAt: m.stageAt,
		After: now.Sub(m.stopBegan)}
	switch l.Step {
	case StepQuit:
		l.Signal = syscall.SIGQUIT
	case StepKill, StepForceKill:
		l.Signal = syscall.SIGKILL
	}
	return l
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
			m.stage, m.stageAt = 2, now
			return m, []effect{{kind: fxSignal, sig: syscall.SIGQUIT}, {kind: fxArm, d: t.Stage(1)}}
		case 2:
			m.stage, m.stageAt = 3, now
			return m, []effect{{kind: fxKill}, {kind: fxArm, d: t.Stage(2)}}
		default:
			m.stage, m.stageAt = 4, now
			return m, []effect{{kind: fxForceKill}, {kind: fxArm, d: t.Stage(2)}}
		}
	}
	return m, nil // a timer that outlived its state
}

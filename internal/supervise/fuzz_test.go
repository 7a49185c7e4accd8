package supervise

import (
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/supervise/restart"
)

// FuzzNext drives the machine with arbitrary sequences of events, under
// arbitrary restart policies and probes, the way the loop would deliver
// them (an exit or a running report only from a live process, a timer only
// when armed, a reap only while an exit is held), and checks at every step
// the invariants the loop relies on:
//   - a timer is armed exactly in the states that need one;
//   - a spawn or an adoption happens only when no process exists, and only
//     for a process wanted up;
//   - the stop stage is set exactly while Stopping and never goes back;
//   - the exit that ends a stop records the step the ladder had reached;
//   - a machine that is, or becomes, stopped or failed sends no signal;
//   - the after-stop choice and a held exit exist only while Stopping;
//   - the generation counts the spawns and adoptions.
func FuzzNext(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		b := make([]byte, 4+2*r.IntN(60))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		run := fuzzRun{t: t, tm: fuzzTiming(data[0], data[1]), now: t0, m: machine{since: t0}}
		for i := 2; i+1 < len(data); i += 2 {
			run.step(data[i], data[i+1])
		}
	})
}

// fuzzTiming picks a restart policy and probes from two bytes.
func fuzzTiming(a, b byte) Timing {
	tm := Timing{StopTimeout: time.Second, QuitTimeout: time.Second, KillTimeout: time.Second}
	tm.Restart.Mode = []restart.Mode{restart.Always, restart.OnFailure, restart.Never}[int(a)%3]
	if n := int(a>>2) % 4; n > 0 {
		then := []restart.Then{restart.GiveUp, restart.LeaveRunning, restart.Exec}[int(a>>4)%3]
		tm.Restart.Limit = restart.Limit{Count: n, Within: time.Minute, Then: then}
	}
	tm.Health = HealthTiming{
		Startup:   RoleTiming{Enabled: b&1 != 0, Failure: 1 + int(b>>4)%3},
		Liveness:  RoleTiming{Enabled: b&2 != 0, Failure: 1 + int(b>>6)%3},
		Readiness: RoleTiming{Enabled: b&4 != 0},
		Notify:    b&8 != 0,
	}
	return tm
}

// fuzzRun is the world around one machine: the time, its timer and
// whether a process exists.
type fuzzRun struct {
	t     *testing.T
	tm    Timing
	now   time.Time
	m     machine
	armed bool
	alive bool
}

// step delivers one event chosen by kind, with details and the time's
// advance taken from arg; an event the loop could not deliver now is
// skipped.
func (r *fuzzRun) step(kind, arg byte) {
	ev := event{kind: eventKind(int(kind) % int(numEventKinds)), ok: arg&1 != 0, ending: arg&2 != 0,
		role: ProbeRole(int(arg>>2) % int(numRoles)), gen: r.m.gen - int(arg>>4)%2}
	switch arg >> 5 {
	case 0:
		ev.exit = Exit{Code: 0}
	case 1:
		ev.exit = Exit{Signal: syscall.SIGKILL}
	default:
		ev.exit = Exit{Code: int(arg >> 5)}
	}
	r.now = r.now.Add(time.Duration(arg) * 500 * time.Millisecond)
	switch ev.kind {
	case evExit, evRunning:
		if !r.alive {
			return
		}
	case evTimer:
		if !r.armed {
			return
		}
		r.armed = false // it fired
	case evReaped:
		if r.m.pending == nil {
			return
		}
	}
	r.deliver(ev, kind&0x80 != 0)
}

// deliver applies ev and checks the transition. failSpawn makes a spawn
// it asks for fail at once, as a Runner's error does.
func (r *fuzzRun) deliver(ev event, failSpawn bool) {
	if ev.kind == evExit {
		r.alive = false
	}
	before := r.m
	m, fx := next(r.m, ev, r.now, r.tm)
	r.m = m
	spawns := 0
	for _, f := range fx {
		switch f.kind {
		case fxSpawn, fxAdopt:
			if r.alive {
				r.t.Fatalf("%s in %s: %s while a process exists", ev.kind, before.state, f.kind)
			}
			if !m.wantUp {
				r.t.Fatalf("%s in %s: %s of a process not wanted up", ev.kind, before.state, f.kind)
			}
			spawns++
			r.alive = true
		case fxArm:
			r.armed = true
		case fxDisarm:
			r.armed = false
		case fxSignal, fxKill, fxForceKill:
			if down(before.state) || down(m.state) {
				r.t.Fatalf("%s in %s → %s: %s", ev.kind, before.state, m.state, f.kind)
			}
		}
	}
	r.check(before, ev, m, spawns)
	if failSpawn && slices.Contains(kindsOf(fx), fxSpawn) {
		r.deliver(event{kind: evExit, exit: Exit{Err: "spawn failed"}}, false)
	}
}

func (r *fuzzRun) check(before machine, ev event, m machine, spawns int) {
	t := r.t
	t.Helper()
	if r.armed != (m.state == Backoff || m.state == Stopping) {
		t.Fatalf("%s in %s → %s: timer armed %v", ev.kind, before.state, m.state, r.armed)
	}
	if (m.state == Stopping) != (m.stage >= 1 && m.stage <= 4) {
		t.Fatalf("%s in %s → %s: stage %d", ev.kind, before.state, m.state, m.stage)
	}
	if before.state == Stopping && m.state != Stopping && (m.lastExit == nil || m.lastExit.Stop == nil || m.lastExit.Stop.Step != LadderStep(before.stage)) {
		t.Fatalf("%s: a stop ended at stage %d without its ladder in the exit: %+v", ev.kind, before.stage, m.lastExit)
	}
	if before.state == Stopping && m.state == Stopping && m.stage < before.stage {
		t.Fatalf("%s: stop stage went back from %d to %d", ev.kind, before.stage, m.stage)
	}
	if m.state != Stopping && (m.after != afterStop{} || m.pending != nil) {
		t.Fatalf("%s in %s → %s: after-stop %+v, held exit %v", ev.kind, before.state, m.state, m.after, m.pending)
	}
	if m.gen != before.gen+spawns {
		t.Fatalf("%s: generation %d → %d with %d spawns", ev.kind, before.gen, m.gen, spawns)
	}
}

func down(s State) bool { return s == Stopped || s == Failed }

package supervise

import (
	"syscall"
	"time"

	"github.com/vigil-bosh/vigil/internal/supervise/restart"
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

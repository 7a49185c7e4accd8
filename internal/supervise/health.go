package supervise

import (
	"time"

	"github.com/vigil-bosh/vigil/internal/supervise/restart"
)

// ProbeRole is what a probe's results decide, with Kubernetes' semantics.
type ProbeRole int

// The roles.
const (
	Startup   ProbeRole = iota // runs first; the others wait for it; failing it restarts
	Liveness                   // FailureThreshold consecutive failures restart the process
	Readiness                  // marks the process ready or not; never restarts it
	numRoles
)

var roleNames = [...]string{"startup", "liveness", "readiness"}

func (r ProbeRole) String() string {
	if r >= 0 && r < numRoles {
		return roleNames[r]
	}
	return "role?"
}

// RoleTiming is the part of a probe the transition function needs.
type RoleTiming struct {
	Enabled bool
	Failure int // consecutive failures that count; zero means 3
	Success int // consecutive successes that count; zero means 1
}

func (r RoleTiming) failure() int {
	if r.Failure <= 0 {
		return 3
	}
	return r.Failure
}
func (r RoleTiming) success() int { return max(r.Success, 1) }

// HealthTiming enables the roles and gives their thresholds.
type HealthTiming struct {
	Startup, Liveness, Readiness RoleTiming
	// Notify: readiness comes from the process itself (systemd's READY=1
	// or s6's notification fd) rather than, or before, a readiness probe.
	Notify bool
}

func (h HealthTiming) role(r ProbeRole) RoleTiming {
	return [...]RoleTiming{h.Startup, h.Liveness, h.Readiness}[r]
}

func (h HealthTiming) any() bool {
	return h.Startup.Enabled || h.Liveness.Enabled || h.Readiness.Enabled || h.Notify
}

// health is the machine's memory of the probes of the current instance. It
// is reset at every spawn.
type health struct {
	startupDone bool          // the startup probe passed (or there is none)
	fails, oks  [numRoles]int // consecutive failures and successes per role
	ready       bool          // readiness as last decided
	notified    bool          // the process itself said it is ready
	leftRunning bool          // the restart limit left it running: probes no longer restart it
	unhealthy   bool          // the last startup or liveness decision was a failure
}

// ProbeResult is the outcome of one check, as kept in the snapshot.
type ProbeResult struct {
	Role    ProbeRole
	OK      bool
	Latency time.Duration
	Message string
	At      time.Time
	// Failures is the count of consecutive failures up to this result.
	Failures int
}

// onProbe counts one probe result of generation ev.gen and decides.
func onProbe(m machine, ev event, now time.Time, t Timing) (machine, []effect) {
	if m.state != Running || m.unmonitored || ev.gen != m.gen || ev.role < 0 || ev.role >= numRoles {
		return m, nil // a result for an instance that is gone, or not supervised
	}
	rt := t.Health.role(ev.role)
	if !rt.Enabled {
		return m, nil
	}
	if ev.role != Startup && !m.health.startupDone && t.Health.Startup.Enabled {
		return m, nil // liveness and readiness wait for the startup probe
	}
	h := &m.health
	if ev.ok {
		h.fails[ev.role] = 0
		h.oks[ev.role]++
	} else {
		h.oks[ev.role] = 0
		h.fails[ev.role]++
	}
	switch ev.role {
	case Startup:
		if h.startupDone {
			return m, nil
		}
		if ev.ok {
			h.startupDone, h.unhealthy = true, false
			if !t.Health.Readiness.Enabled && !t.Health.Notify {
				h.ready = true
			}
			return m, nil
		}
		if h.fails[Startup] >= rt.failure() {
			return unhealthy(m, now, t)
		}
	case Liveness:
		if ev.ok {
			h.unhealthy = false
			return m, nil
		}
		if h.fails[Liveness] >= rt.failure() {
			return unhealthy(m, now, t)
		}
	case Readiness:
		if ev.ok && h.oks[Readiness] >= rt.success() && (!t.Health.Notify || h.notified) {
			h.ready = true
		}
		if !ev.ok && h.fails[Readiness] >= rt.failure() {
			h.ready = false
		}
	}
	return m, nil
}

// onNotify: the process said it is ready (READY=1 or a line on its fd),
// or (ok false) its systemd watchdog expired, which restarts it as a
// liveness failure would.
func onNotify(m machine, ev event, now time.Time, t Timing) (machine, []effect) {
	if ev.gen != m.gen || (m.state != Running && m.state != Starting) || m.unmonitored || !t.Health.Notify {
		return m, nil
	}
	if !ev.ok && m.state == Running {
		return unhealthy(m, now, t)
	}
	m.health.notified = true
	if !t.Health.Startup.Enabled || m.health.startupDone {
		m.health.ready = !t.Health.Readiness.Enabled || m.health.oks[Readiness] >= t.Health.Readiness.success()
	}
	return m, nil
}

// unhealthy restarts a process that failed its startup or liveness probe,
// through the stop ladder, unless the restart policy says otherwise.
func unhealthy(m machine, now time.Time, t Timing) (machine, []effect) {
	m.health.unhealthy = true
	m.health.ready = false
	if m.health.leftRunning {
		return m, nil
	}
	var fx []effect
	if t.Restart.Mode == restart.Never {
		m, fx = onStop(m, now, t)
		m.wantUp, m.after = true, afterStop{then: thenFail}
		return m, fx
	}
	d, h := t.Restart.Next(m.history, m.startedAt, now)
	m.history = h
	if d.GiveUp {
		switch t.Restart.Limit.Then {
		case restart.LeaveRunning:
			m.health.leftRunning = true
			return m, nil
		case restart.Exec:
			m.health.leftRunning = true
			return m, []effect{{kind: fxLimitExec}}
		}
		m, fx = onStop(m, now, t)
		m.wantUp, m.after = true, afterStop{then: thenFail}
		return m, fx
	}
	m.restarts++
	m, fx = onStop(m, now, t)
	m.wantUp, m.after = true, afterStop{then: thenRestart, delay: d.Delay}
	return m, fx
}

package monitext

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vigil-bosh/vigil/health"
	"github.com/vigil-bosh/vigil/monitcompat"
	"github.com/vigil-bosh/vigil/monitrc"
	"github.com/vigil-bosh/vigil/restart"
	"github.com/vigil-bosh/vigil/supervise"
)

// defaultCycle is monit's polling interval when `set daemon` is missing.
const defaultCycle = 30 * time.Second

// withMonitTests lays the tests of the monit service that id runs as onto
// cfg: `if failed port|unixsocket` and `if totalmem|memory > N` become
// probes checked every cycle (restart: liveness; alert: readiness; exec:
// readiness whose failures run the program), and `if N restarts within M
// cycles` becomes the restart limit.
func (x *Extension) withTests(m *load, id supervise.ID, cfg *supervise.Config) {
	s, ok := m.cfg.Lookup(m.serviceOf(id))
	if !ok {
		return
	}
	cycle := m.cfg.Cycle
	if cycle <= 0 {
		cycle = defaultCycle
	}
	var restartChecks, alertChecks []monitCheck
	for _, t := range s.Tests {
		if !t.Enforced() {
			continue
		}
		if t.Kind == monitrc.TestRestarts {
			lim := restart.Limit{Count: t.Failures, Within: time.Duration(t.Cycles) * cycle}
			switch t.Action.Kind {
			case monitrc.ActAlert:
				lim.Then = restart.LeaveRunning
			case monitrc.ActExec:
				lim.Then = restart.Exec
				if t.Action.Exec != nil {
					lim.Exec = t.Action.Exec.Argv
					cfg.OnLimit = x.host.Command(id, lim.Exec, nil)
				}
			}
			cfg.Timing.Restart.Limit = lim
			continue
		}
		c := monitCheck{test: t, sup: x.pidOf(id), stats: x.stats}
		if t.Action.Kind == monitrc.ActExec && t.Action.Exec != nil {
			c.exec = x.host.Command(id, t.Action.Exec.Argv, nil)
		}
		if t.Action.Kind == monitrc.ActRestart {
			restartChecks = append(restartChecks, c)
		} else {
			alertChecks = append(alertChecks, c)
		}
	}
	if p, ok := composite(supervise.Liveness, restartChecks, cycle); ok {
		cfg.Probes = append(cfg.Probes, p)
	}
	if p, ok := composite(supervise.Readiness, alertChecks, cycle); ok {
		cfg.Probes = append(cfg.Probes, p)
	}
}

// pidOf returns a function that finds id's current pid, for the resource
// tests (the supervisor does not exist yet when the probes are built).
func (x *Extension) pidOf(id supervise.ID) func() int {
	return func() int {
		if s, ok := x.host.Supervisor(id); ok {
			st := s.Status()
			if st.ExecPID != 0 {
				return st.ExecPID
			}
			return st.PID
		}
		return 0
	}
}

// monitCheck is one monit test as a check. For an exec action, it counts
// its own consecutive failures and runs the program at each N-th (monit
// runs it while the condition holds for N cycles).
type monitCheck struct {
	test  monitrc.Test
	sup   func() int
	stats func(pid int, st *monitcompat.UnitStatus) // the extension's stats
	exec  func()
	fails *atomic.Int32
}

func (c monitCheck) check(ctx context.Context) (bool, string) {
	t := c.test
	if t.Kind == monitrc.TestResource {
		return c.resource()
	}
	var p health.Probe
	switch {
	case t.Socket != "":
		p.Unix = t.Socket
	case strings.EqualFold(t.Protocol, "http"):
		p.HTTP = &health.HTTP{Host: t.Host, Port: t.Port, Path: t.Request, StatusMax: 399}
	default:
		p.TCP = &health.TCP{Host: t.Host, Port: t.Port}
	}
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second // monit's default connection timeout
	}
	r := p.Check(ctx, timeout)
	return r.OK, r.Message
}

// resource compares the process's memory with the test's limit
// (kilobytes, or percent of the machine's memory).
func (c monitCheck) resource() (bool, string) {
	pid := c.sup()
	if pid == 0 {
		return true, "no process"
	}
	var st monitcompat.UnitStatus
	c.stats(pid, &st)
	val := float64(st.MemKB)
	switch {
	case c.test.Resource == "totalmem" && c.test.Percent:
		val = st.MemPctTotal
	case c.test.Resource == "totalmem":
		val = float64(st.MemKBTotal)
	case c.test.Percent:
		val = st.MemPct
	}
	if compare(val, c.test.Operator, c.test.Limit) {
		return false, fmt.Sprintf("%s%s %s %g (is %g)", monitcompat.ResourceFailure, c.test.Resource, c.test.Operator, c.test.Limit, val)
	}
	return true, fmt.Sprintf("%s %g", c.test.Resource, val)
}

func compare(v float64, op string, limit float64) bool {
	switch op {
	case ">", "gt", "greater":
		return v > limit
	case "<", "lt", "less":
		return v < limit
	case "=", "==", "eq", "equal":
		return v == limit
	case "!=", "ne", "<>", "not":
		return v != limit
	}
	return false
}

// composite checks every test each cycle and fails when any fails; its
// failure threshold is the smallest `for N cycles` among them (monit's
// `N times within M cycles` is taken as N consecutive failures).
func composite(role supervise.ProbeRole, checks []monitCheck, cycle time.Duration) (supervise.Probe, bool) {
	if len(checks) == 0 {
		return supervise.Probe{}, false
	}
	threshold := 0
	for i := range checks {
		n := max(checks[i].test.Failures, 1)
		if threshold == 0 || n < threshold {
			threshold = n
		}
		checks[i].fails = &atomic.Int32{}
	}
	// As monit, the first check comes a cycle after the start.
	return supervise.Probe{Role: role, Period: cycle, InitialDelay: cycle, Timeout: min(cycle, 30*time.Second),
		FailureThreshold: threshold,
		Check: func(ctx context.Context) supervise.ProbeResult {
			start := time.Now()
			var failed []string
			for _, c := range checks {
				ok, msg := c.check(ctx)
				if ok {
					c.fails.Store(0)
					continue
				}
				failed = append(failed, msg)
				if n := c.fails.Add(1); c.exec != nil && int(n) >= max(c.test.Failures, 1) {
					c.fails.Store(0)
					c.exec()
				}
			}
			return supervise.ProbeResult{OK: len(failed) == 0, Latency: time.Since(start), At: start,
				Message: strings.Join(failed, "; ")}
		}}, true
}

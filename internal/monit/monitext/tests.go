package monitext

import (
	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/supervise/restart"
)

// withTiming lays what the control files say about the monit service that
// id runs as onto cfg. Its tests are not the supervisor's: the monit
// engine's cycles run them with monit's semantics (monit). The
// supervisor restarts a dead process at once, and one that dies again
// soon (or failed to start) a cycle later, as often as monit would: monit
// restarts it at each cycle. It never restarts one monit would not (mode
// passive, "if not exist" without a restart).
func withTiming(m *load, id supervise.ID, cfg *supervise.Config) {
	s, ok := m.cfg.Lookup(m.serviceOf(id))
	if !ok {
		return
	}
	cycle := m.cfg.Cycle
	if cycle <= 0 {
		cycle = monitrc.DefaultCycle
	}
	r := &cfg.Timing.Restart
	r.Initial, r.Max = cycle, cycle
	if passive(s) {
		r.Mode = restart.Never
	}
}

// passive reports whether the supervisor of a process service must not
// restart it: monit's mode passive, or an "if not exist" test whose action
// is not a restart (the engine runs that action).
func passive(s *monitrc.Service) bool {
	if s.Mode == "passive" {
		return true
	}
	for _, t := range s.Tests {
		if t.Kind == monitrc.TestExist && t.Action.Kind != monitrc.ActRestart && t.Action.Kind != monitrc.ActStart {
			return true
		}
	}
	return false
}

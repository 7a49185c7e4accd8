package daemon

import (
	"github.com/vigil-bosh/vigil/monitrc"
	"github.com/vigil-bosh/vigil/restart"
	"github.com/vigil-bosh/vigil/supervise"
)

// withMonitTiming lays what the control files say about the monit service
// that id runs as onto cfg. Its tests are not the supervisor's: the monit
// engine's cycles run them with monit's semantics (monitcompat). The
// supervisor restarts a dead process at once, and one that dies again
// soon (or failed to start) a cycle later, as often as monit would: monit
// restarts it at each cycle. It never restarts one monit would not (mode
// passive, "if not exist" without a restart).
func withMonitTiming(m *monitLoad, id supervise.ID, cfg *supervise.Config) {
	if m == nil {
		return
	}
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

package monit

import (
	"context"
	"sync"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
)

// CheckUnit is a service the engine's cycles check themselves: a file,
// directory, fifo, filesystem, remote host or the system. It keeps the
// monitoring flag and runs the start and stop programs without waiting
// for them (monit waits only for processes), and ends the session of a
// start program that fails; the engine's cycles hold the rest of its
// status.
type CheckUnit struct {
	svc *monitrc.Service

	mu      sync.Mutex
	monitor bool
	spawn   func(p *monitrc.Program, env []string, endOnFailure bool) // set by the engine
}

var _ Unit = (*CheckUnit)(nil)

// NewCheckUnit returns the unit of svc, monitored or not.
func NewCheckUnit(svc *monitrc.Service, monitored bool) *CheckUnit {
	return &CheckUnit{svc: svc, monitor: monitored}
}

// run runs p (if any) through the engine's spawner; a start program
// that fails has its session ended.
func (u *CheckUnit) run(p *monitrc.Program, event string) {
	u.mu.Lock()
	spawn := u.spawn
	u.mu.Unlock()
	if p != nil && spawn != nil {
		spawn(p, Env(u.svc, hostname(), event, event, 0), p == u.svc.Start)
	}
}

func (u *CheckUnit) set(v bool) { u.mu.Lock(); u.monitor = v; u.mu.Unlock() }

// Start runs the start program and monitors the service.
func (u *CheckUnit) Start(context.Context) error {
	u.run(u.svc.Start, "Started")
	u.set(true)
	return nil
}

// Stop runs the stop program and stops monitoring.
func (u *CheckUnit) Stop(context.Context) error {
	u.set(false)
	u.run(u.svc.Stop, "Stopped")
	return nil
}

// Monitor monitors the service again.
func (u *CheckUnit) Monitor(context.Context) error { u.set(true); return nil }

// Unmonitor stops monitoring it.
func (u *CheckUnit) Unmonitor(context.Context) error { u.set(false); return nil }

// Status is the monitoring flag; the engine adds what its cycles saw.
func (u *CheckUnit) Status() UnitStatus {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.monitor {
		return UnitStatus{Monitor: NotMonitored}
	}
	return UnitStatus{Running: true, Monitor: Monitored}
}

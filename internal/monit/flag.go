package monit

import (
	"context"
	"sync/atomic"
	"time"
)

// FlagUnit stands for a check that no supervisor runs (a file or host
// check, or a program a back end does not supervise): it keeps the
// monitoring flag and nothing else, and always reads as running. Make one
// with NewFlagUnit; it is safe for concurrent use.
type FlagUnit struct{ mon atomic.Int32 }

var _ Unit = (*FlagUnit)(nil)

// NewFlagUnit returns a unit that is monitored.
func NewFlagUnit() *FlagUnit {
	u := &FlagUnit{}
	u.mon.Store(Monitored)
	return u
}

// Start sets the flag to monitored, as Monitor does.
func (u *FlagUnit) Start(context.Context) error { u.mon.Store(Monitored); return nil }

// Stop sets the flag to not monitored, as Unmonitor does.
func (u *FlagUnit) Stop(context.Context) error { u.mon.Store(NotMonitored); return nil }

// Monitor sets the flag to monitored.
func (u *FlagUnit) Monitor(context.Context) error { u.mon.Store(Monitored); return nil }

// Unmonitor sets the flag to not monitored.
func (u *FlagUnit) Unmonitor(context.Context) error { u.mon.Store(NotMonitored); return nil }

// Status is running, with the flag.
func (u *FlagUnit) Status() UnitStatus {
	return UnitStatus{Running: true, Monitor: int(u.mon.Load()), Collected: time.Now()}
}

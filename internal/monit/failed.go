package monit

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// FailedUnit is a check process that cannot start: one whose start
// program is the bpm shim for a process no valid bpm.yml defines. Under
// monit, bpm's start would fail at every try and monit would show
// "Execution failed" while the service is monitored; so does this unit,
// with the reason. Starting it monitors it and fails with the reason;
// stopping and unmonitoring leave it not monitored, with nothing to stop.
// Make one with NewFailedUnit; it is safe for concurrent use.
type FailedUnit struct {
	reason    string
	onFail    func()
	monitored atomic.Bool
}

var _ Unit = (*FailedUnit)(nil)

// NewFailedUnit returns a unit that fails to start for reason, monitored
// or not. onFail (nil for none) runs each time it becomes monitored,
// including here, on the caller's goroutine: the alert monit mails when
// its start fails. It must not block.
func NewFailedUnit(reason string, monitored bool, onFail func()) *FailedUnit {
	u := &FailedUnit{reason: reason, onFail: onFail}
	u.set(monitored)
	return u
}

// Start monitors the unit and fails with its reason.
func (u *FailedUnit) Start(context.Context) error {
	u.set(true)
	return errors.New(u.reason)
}

// Monitor monitors the unit: its next start fails, as monit's would.
func (u *FailedUnit) Monitor(context.Context) error { u.set(true); return nil }

// Stop leaves the unit not monitored; nothing runs to stop.
func (u *FailedUnit) Stop(context.Context) error { u.set(false); return nil }

// Unmonitor leaves the unit not monitored.
func (u *FailedUnit) Unmonitor(context.Context) error { u.set(false); return nil }

func (u *FailedUnit) set(monitored bool) {
	if was := u.monitored.Swap(monitored); monitored && !was && u.onFail != nil {
		u.onFail()
	}
}

// Status is "Execution failed" with the reason while monitored, not
// monitored otherwise; the process never runs.
func (u *FailedUnit) Status() UnitStatus {
	st := UnitStatus{Collected: time.Now()}
	if u.monitored.Load() {
		st.Monitor, st.Events, st.Message = Monitored, EventExec, "failed to start: "+u.reason
	}
	return st
}

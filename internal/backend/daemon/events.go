package daemon

import (
	"context"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

var _ control.EventSource = (*Daemon)(nil)

// Events implements control.EventSource (see backend.Hub): up to recent
// past events, then each new one as it happens, on a channel closed once
// ctx is done. The daemon never waits for a reader. It works before Run,
// so a reader can see the first load.
func (d *Daemon) Events(ctx context.Context, recent int) (<-chan control.Event, error) {
	return d.events.Subscribe(ctx, recent), nil
}

// Publish sends an event that no process's status carries (vigil
// container's drain outcomes) to the event stream's readers.
func (d *Daemon) Publish(ev control.Event) { d.events.Publish(ev) }

// LastSeq implements control.EventSeq: the latest event's number.
func (d *Daemon) LastSeq() uint64 { return d.events.LastSeq() }

// onChange runs on a supervisor's goroutine after each change: it derives
// the events, logs a change of state, pid or last exit (a probe result
// alone, published at every period, is not logged), and wakes the
// watchers. It never blocks on them.
func (d *Daemon) onChange(st supervise.Status) {
	ps := backend.ProcessStatus(st)
	prev := d.events.Observe(&ps, st.Gen)
	if prev == nil || prev.Job != ps.Job || prev.Process != ps.Process || prev.State != ps.State || prev.PID != ps.PID ||
		!sameExit(prev.LastExit, ps.LastExit) {
		args := []any{"process", st.ID.String(), "state", st.State.String()}
		if st.PID != 0 {
			args = append(args, "pid", st.PID)
		}
		if st.LastExit != nil && (st.State == supervise.Backoff || st.State == supervise.Failed ||
			st.State == supervise.Starting || st.State == supervise.Stopped) {
			args = append(args, "last_exit", st.LastExit.String())
		}
		d.log.Info("state", args...)
	}
	d.changes.Notify()
}

// sameExit reports whether a and b describe the same exit (or none).
func sameExit(a, b *control.Exit) bool {
	return a == b || a != nil && b != nil && *a == *b
}

package systemd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/control"
)

// Watcher tells the driver when its units may have changed; the driver
// then reads their states, derives the events and wakes its watchers.
type Watcher interface {
	// Watch calls changed after each change it sees to the units that
	// units lists (read again at each call: a reload changes them), until
	// ctx is done, and returns then. changed may block while the driver
	// reads the states.
	Watch(ctx context.Context, units func() []string, changed func())
}

// poller is the Watcher without a change stream: systemctl offers none
// without D-Bus, so it says "maybe changed" every interval.
type poller struct{ every time.Duration }

// Poller is the Watcher that polls: "maybe changed" every interval.
func Poller(every time.Duration) Watcher { return poller{every} }

func (p poller) Watch(ctx context.Context, _ func() []string, changed func()) {
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			changed()
		}
	}
}

// refresh reads every unit's state once and hands each process's status
// to the event hub, in order; it wakes the watchers of Changes when a
// state, restart count or pid differs from the last refresh.
func (d *Driver) refresh(ctx context.Context) {
	d.obs.Lock()
	defer d.obs.Unlock()
	st, states, err := d.read(ctx)
	if err != nil {
		d.log.Debug("status", "error", err)
		return
	}
	var b strings.Builder
	for i, p := range st.Processes {
		d.events.Observe(&p, states[i].instance())
		fmt.Fprintf(&b, "%s/%s %s %d %d;", p.Job, p.Process, p.State, p.Restarts, p.PID)
	}
	if s := b.String(); s != d.last {
		d.last = s
		d.changes.Notify()
	}
}

// Changes returns a channel closed at the next change the watcher sees.
func (d *Driver) Changes() <-chan struct{} { return d.changes.Wait() }

// Events implements control.EventSource: the events derived from the
// units' states as the watcher sees them change (see backend.Hub).
// LastSeq implements control.EventSeq. The units' states are read every
// 2 s, so the events of an action's last changes may come after it.
func (d *Driver) LastSeq() uint64 { return d.events.LastSeq() }

func (d *Driver) Events(ctx context.Context, recent int) (<-chan control.Event, error) {
	return d.events.Subscribe(ctx, recent), nil
}

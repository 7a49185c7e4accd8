package daemon

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/vigil-bosh/vigil/monitcompat"
	"github.com/vigil-bosh/vigil/monitrc"
	"github.com/vigil-bosh/vigil/supervise"
)

// alertState turns supervisor changes into monit alerts for the mail
// server the control files name.
type alertState struct {
	cur    atomic.Pointer[monitcompat.Alerter]
	cancel context.CancelFunc // guarded by Daemon.mu
	key    string             // the settings of cur; guarded by Daemon.mu

	mu   sync.Mutex
	last map[supervise.ID]supervise.Status
}

// setAlerter starts (or replaces, when the settings changed) the alerter
// for cfg. Called with mu held.
func (d *Daemon) setAlerter(cfg *monitrc.Config) {
	a := &d.alerts
	key := ""
	if cfg.MailServer != nil && len(cfg.Alerts) > 0 {
		key = monitcompat.MailServerAddr(cfg.MailServer.Host, cfg.MailServer.Port) + " " + strings.Join(cfg.Alerts, ",")
	}
	if key == a.key {
		return
	}
	if a.cancel != nil {
		a.cancel()
		a.cancel = nil
	}
	a.key = key
	a.cur.Store(nil)
	if key == "" {
		return
	}
	al := monitcompat.NewAlerter(monitcompat.AlertConfig{
		Dir:    filepath.Join(d.cfg.Layout.VigilRunDir(), "alerts"),
		Server: monitcompat.MailServerAddr(cfg.MailServer.Host, cfg.MailServer.Port),
		To:     cfg.Alerts, Hostname: hostname(), Timeout: cfg.MailServer.Timeout,
	})
	ctx, cancel := context.WithCancel(d.monitCtx)
	a.cancel = cancel
	go al.Run(ctx)
	a.cur.Store(al)
}

// monitEvent runs on a supervisor's goroutine after each change: an exit
// of a supervised service that is restarted is monit's "Does not exist", a
// start given up on its "Execution failed". (The events of the tests are
// the engine's, which mails them itself.) It never blocks.
func (d *Daemon) monitEvent(st supervise.Status) {
	al := d.alerts.cur.Load()
	cur := d.cur.Load()
	if al == nil || cur == nil || cur.monit == nil {
		return
	}
	name := cur.monit.serviceOf(st.ID)
	if name == "" {
		return
	}
	a := &d.alerts
	a.mu.Lock()
	if a.last == nil {
		a.last = map[supervise.ID]supervise.Status{}
	}
	prev, seen := a.last[st.ID]
	a.last[st.ID] = st
	a.mu.Unlock()
	switch {
	case !seen:
	case st.Restarts > prev.Restarts:
		al.Send(monitcompat.Alert{Service: name, Event: "Does not exist", Action: "restart",
			Description: "process is not running"})
	case st.State == supervise.Failed && prev.State != supervise.Failed:
		desc := "failed to start"
		if st.LastExit != nil {
			desc = st.LastExit.String()
		}
		al.Send(monitcompat.Alert{Service: name, Event: "Execution failed", Action: "alert", Description: desc})
	}
}

package monitext

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/vigil-bosh/vigil/internal/monit"
	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

// alertState turns supervisor changes into monit alerts for the mail
// server the control files name.
type alertState struct {
	cur    atomic.Pointer[monit.Alerter]
	cancel context.CancelFunc // changed by Apply only
	key    string             // the settings of cur; changed by Apply only

	mu   sync.Mutex
	last map[supervise.ID]supervise.Status
}

// setAlerter starts (or replaces, when the settings changed) the alerter
// for cfg, sending until ctx is done.
func (x *Extension) setAlerter(ctx context.Context, cfg *monitrc.Config) {
	a := &x.alerts
	key := ""
	if cfg.MailServer != nil && len(cfg.Alerts) > 0 {
		key = monit.MailServerAddr(cfg.MailServer.Host, cfg.MailServer.Port) + " " + strings.Join(cfg.Alerts, ",")
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
	al := monit.NewAlerter(monit.AlertConfig{
		Dir:    filepath.Join(x.host.Layout.VigilRunDir(), "alerts"),
		Server: monit.MailServerAddr(cfg.MailServer.Host, cfg.MailServer.Port),
		To:     cfg.Alerts, Hostname: hostname(), Timeout: cfg.MailServer.Timeout,
	})
	ctx, cancel := context.WithCancel(ctx)
	a.cancel = cancel
	go al.Run(ctx)
	a.cur.Store(al)
}

// alert runs on a supervisor's goroutine after each change: an exit of a
// supervised service that is restarted is monit's "Does not exist", a
// start given up on its "Execution failed". (The events of the tests are
// the engine's, which mails them itself: see send.) It never blocks.
func (x *Extension) alert(st supervise.Status) {
	al := x.alerts.cur.Load()
	cur := x.cur.Load()
	if al == nil || cur == nil {
		return
	}
	name := cur.serviceOf(st.ID)
	if name == "" {
		return
	}
	a := &x.alerts
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
		al.Send(monit.Alert{Service: name, Event: "Does not exist", Action: "restart",
			Description: "process is not running"})
	case st.State == supervise.Failed && prev.State != supervise.Failed:
		desc := "failed to start"
		if st.LastExit != nil {
			desc = st.LastExit.String()
		}
		al.Send(monit.Alert{Service: name, Event: "Execution failed", Action: "alert", Description: desc})
	}
}

// send mails an alert of the engine's when the control files name a mail
// server; it never blocks.
func (x *Extension) send(a monit.Alert) {
	if al := x.alerts.cur.Load(); al != nil {
		al.Send(a)
	}
}

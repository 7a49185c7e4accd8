package monitext

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
		Dir:    filepath.Join(x.host.Layout.VigilRunDir(), "alerts"),
		Server: monitcompat.MailServerAddr(cfg.MailServer.Host, cfg.MailServer.Port),
		To:     cfg.Alerts, Hostname: hostname(), Timeout: cfg.MailServer.Timeout,
	})
	ctx, cancel := context.WithCancel(ctx)
	a.cancel = cancel
	go al.Run(ctx)
	a.cur.Store(al)
}

// alert runs on a supervisor's goroutine after each change: an exit
// of a supervised service is monit's "Does not exist" (or the failed test's
// event when a test restarted it), a start given up on its "Execution
// failed", a test with an alert action failing "Connection failed" or
// "Resource limit matched" and passing again the matching "succeeded". It
// never blocks.
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
		if p, ok := failing(prev, supervise.Liveness); ok { // restarted by a failed test
			al.Send(monitcompat.Alert{Service: name, Event: testEvent(p.Message, true), Action: "restart",
				Description: p.Message})
			break
		}
		al.Send(monitcompat.Alert{Service: name, Event: "Does not exist", Action: "restart",
			Description: "process is not running"})
	case st.State == supervise.Running && prev.Ready && !st.Ready:
		if p, ok := failing(st, supervise.Readiness); ok {
			al.Send(monitcompat.Alert{Service: name, Event: testEvent(p.Message, true), Action: "alert",
				Description: p.Message})
		}
	case st.State == supervise.Running && !prev.Ready && st.Ready:
		if p, ok := failing(prev, supervise.Readiness); ok {
			al.Send(monitcompat.Alert{Service: name, Event: testEvent(p.Message, false), Action: "alert",
				Description: "the test succeeded again"})
		}
	case st.State == supervise.Failed && prev.State != supervise.Failed:
		desc := "failed to start"
		if st.LastExit != nil {
			desc = st.LastExit.String()
		}
		al.Send(monitcompat.Alert{Service: name, Event: "Execution failed", Action: "alert", Description: desc})
	}
}

// failing returns st's latest result of the probe in role when it failed.
func failing(st supervise.Status, role supervise.ProbeRole) (supervise.ProbeResult, bool) {
	for _, p := range st.Probes {
		if p.Role == role && !p.OK {
			return p, true
		}
	}
	return supervise.ProbeResult{}, false
}

// testEvent is monit's event for a test that failed (or succeeded again),
// told apart by the message of the failed check.
func testEvent(msg string, failed bool) string {
	resource := strings.Contains(msg, monitcompat.ResourceFailure)
	switch {
	case resource && failed:
		return "Resource limit matched"
	case resource:
		return "Resource limit succeeded"
	case failed:
		return "Connection failed"
	}
	return "Connection succeeded"
}

package monitext

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/monitcompat"
)

// buildEngine makes the monit engine for a load, over the daemon's
// supervisors. The flag-only units of unchanged checks are kept.
func (x *Extension) buildEngine(l *load, old *monitcompat.Engine) *monitcompat.Engine {
	units := map[string]monitcompat.Unit{}
	for _, s := range l.cfg.Services {
		key := strings.ToLower(s.Name)
		if id, ok := l.ids[key]; ok {
			if sup, ok := x.host.Supervisor(id); ok {
				u := &monitcompat.SupervisorUnit{Sup: sup, Stats: x.stats}
				if s.Start != nil {
					u.StartTimeout = s.Start.Timeout
				}
				if s.Stop != nil {
					u.StopTimeout = s.Stop.Timeout + 30*time.Second // the kill stages after the stop program
				}
				units[s.Name] = u
			}
			continue
		}
		if old != nil {
			if u, ok := old.Unit(s.Name); ok {
				if fu, ok := u.(*monitcompat.FlagUnit); ok {
					units[s.Name] = fu
					continue
				}
			}
		}
		units[s.Name] = monitcompat.NewFlagUnit()
	}
	inc := time.Now().Unix()
	last := x.state.load().Incarnation
	if old != nil {
		last = old.Incarnation()
	}
	if inc <= last {
		inc = last + 1 // the agent waits for a different one
	}
	return monitcompat.NewEngine(l.cfg, units, x.host.Started(), inc, x.actionDone)
}

// actionDone runs after each monit action: the not-monitored set is saved
// and the daemon's watchers are woken.
func (x *Extension) actionDone(svc, action string, err error) {
	if e := x.engine.Load(); e != nil {
		if werr := x.state.write(e); werr != nil {
			x.host.Log.Error("monit state", "error", werr)
		}
	}
	if l := x.cur.Load(); l != nil && x.host.Asked != nil {
		if id, ok := l.ids[strings.ToLower(svc)]; ok {
			what := action
			if err != nil {
				what += ": failed: " + err.Error()
			}
			x.host.Asked(id, what)
		}
	}
	if err != nil {
		x.host.Log.Error("monit action", "service", svc, "action", action, "error", err)
		return
	}
	x.host.Log.Info("monit action", "service", svc, "action", action)
	x.host.Changed()
}

// serve starts the HTTP API for e the first time control files ask for
// one, serving until ctx is done; later it swaps the engine it serves.
func (x *Extension) serve(ctx context.Context, e *monitcompat.Engine) error {
	if e.Config().HTTPD == nil {
		return nil
	}
	if x.srv != nil {
		return x.srv.Swap(e)
	}
	srv, err := monitcompat.NewServer(e, time.Now)
	if err != nil {
		return fmt.Errorf("monit http api: %w", err)
	}
	ln, err := net.Listen("tcp", monitcompat.Addr(e.Config().HTTPD))
	if err != nil {
		return fmt.Errorf("monit http api: %w", err)
	}
	x.srv = srv
	x.srvDone = make(chan error, 1)
	go func() { x.srvDone <- srv.Serve(ctx, ln) }()
	x.host.Log.Info("monit api", "address", ln.Addr().String())
	return nil
}

// stats fills in monit's memory figures (resident set of the process, and
// of it with its descendants) from the daemon's shared pass over /proc.
// Figures that cannot be read are zero.
func (x *Extension) stats(pid int, st *monitcompat.UnitStatus) {
	m, ok := x.host.Usage.Memory(pid)
	if !ok {
		return
	}
	st.MemKB, st.MemKBTotal, st.Children = m.OwnBytes/1024, m.TreeBytes/1024, m.Children
	if m.TotalBytes > 0 {
		st.MemPct = 100 * float64(st.MemKB) / float64(m.TotalBytes/1024)
		st.MemPctTotal = 100 * float64(st.MemKBTotal) / float64(m.TotalBytes/1024)
	}
}

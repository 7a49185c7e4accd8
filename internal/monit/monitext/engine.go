package monitext

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vigil-bosh/vigil/internal/monit"
	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
)

// buildEngine makes the monit engine for a load, over the daemon's
// supervisors; the engine's cycles check the other services (files, hosts,
// the system) through check units, kept from the engine before while
// their service is unchanged. It starts the services the load's
// supervisors begin without (and those the engine before had not
// finished starting), and again stops those monit.state says were asked
// to stop.
func (x *Extension) buildEngine(l *load, old *monit.Engine) *monit.Engine {
	units := map[string]monit.Unit{}
	for _, s := range l.cfg.Services {
		key := strings.ToLower(s.Name)
		if id, ok := l.ids[key]; ok {
			if sup, ok := x.host.Supervisor(id); ok {
				u := &monit.SupervisorUnit{Sup: sup, Stats: x.stats, Passive: passive(s)}
				if s.Start != nil {
					u.StartTimeout = s.Start.Timeout
				}
				if s.Stop != nil {
					u.StopTimeout = s.Stop.Timeout + 30*time.Second // the kill stages after the stop program
				}
				units[s.Name] = u
			} else if why, ok := l.failed[key]; ok {
				units[s.Name] = x.failedUnit(s, why, !l.unmonitored[key] && s.Mode != "manual")
			}
			continue
		}
		if old != nil {
			if u, ok := old.Unit(s.Name); ok {
				if was, ok := old.Config().Lookup(s.Name); ok && sameService(was, s) {
					if cu, ok := u.(*monit.CheckUnit); ok {
						units[s.Name] = cu
						continue
					}
				}
			}
		}
		units[s.Name] = monit.NewCheckUnit(s, !l.unmonitored[key] && s.Mode != "manual")
	}
	inc := time.Now().Unix()
	last := x.state.load().Incarnation
	if old != nil {
		last = old.Incarnation()
	}
	if inc <= last {
		inc = last + 1 // the agent waits for a different one
	}
	var e *monit.Engine
	e = monit.NewEngineWith(l.cfg, units, monit.EngineOptions{Started: x.host.Started(),
		Incarnation: inc, OnDone: x.actionDone, Alert: x.send, Spawn: x.programs.run,
		Booting: booting(l, old, units), After: l.afterOf, Adopted: l.adopted, Stopping: setNames(l.cfg, l.stopping),
		Host: hostname(), Stats: x.stats, OnChange: x.host.Changed,
		OnPosted: func() { x.persist(e) }})
	return e
}

// booting is what the engine starts: the services the load's new
// supervisors begin without, and those the engine before had not finished
// starting, if they are still supervised and monitored.
func booting(l *load, old *monit.Engine, units map[string]monit.Unit) []string {
	out := l.booting
	if old == nil {
		return out
	}
	for _, n := range old.Unbooted() {
		s, ok := l.cfg.Lookup(n)
		if !ok {
			continue
		}
		if _, sup := units[s.Name].(*monit.SupervisorUnit); sup && !l.unmonitored[strings.ToLower(n)] &&
			!passive(s) && !slices.Contains(out, s.Name) {
			out = append(out, s.Name)
		}
	}
	return out
}

// setNames lists the services of cfg whose lower-cased names set holds.
func setNames(cfg *monitrc.Config, set map[string]bool) []string {
	var out []string
	for _, s := range cfg.Services {
		if set[strings.ToLower(s.Name)] {
			out = append(out, s.Name)
		}
	}
	return out
}

// failedUnit is the unit of a check process s that cannot start, for
// why: monit, whose bpm start would fail, shows "Execution failed" and
// mails it each time the service is monitored (at its first cycle, at a
// start); so does vigil, instead of leaving the service not monitored and
// its starts without effect.
func (x *Extension) failedUnit(s *monitrc.Service, why string, monitored bool) monit.Unit {
	return monit.NewFailedUnit(why, monitored, func() {
		x.send(monit.Alert{Service: s.Name, Event: "Execution failed", Action: "alert", Description: "failed to start: " + why})
	})
}

// sameService reports whether a service is unchanged, apart from where it
// was written.
func sameService(a, b *monitrc.Service) bool {
	x, y := *a, *b
	x.File, x.Line, y.File, y.Line = "", 0, "", 0
	return reflect.DeepEqual(x, y)
}

// actionDone runs after each monit action: the not-monitored set is saved
// and the daemon's watchers are woken, whether the action failed or not (a
// failed start monitors its service, a cascade may have done part of its
// work).
func (x *Extension) actionDone(svc, action string, err error) {
	if e := x.engine.Load(); e != nil {
		x.persist(e)
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
	} else {
		x.host.Log.Info("monit action", "service", svc, "action", action)
	}
	x.host.Changed()
}

// persist saves what e's services' state means for the next daemon
// (monit.state): after each action, and as each action is posted.
func (x *Extension) persist(e *monit.Engine) {
	if err := x.state.write(e); err != nil {
		x.host.Log.Error("monit state", "error", err)
	}
}

// serve starts the HTTP API for e the first time control files ask for
// one, serving until ctx is done; later it swaps the engine it serves.
func (x *Extension) serve(ctx context.Context, e *monit.Engine) error {
	if e.Config().HTTPD == nil {
		return nil
	}
	if x.srv != nil {
		return x.srv.Swap(e)
	}
	srv, err := monit.NewServer(e, time.Now)
	if err != nil {
		return fmt.Errorf("monit http api: %w", err)
	}
	ln, err := net.Listen("tcp", monit.Addr(e.Config().HTTPD))
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
// of it with its descendants) and CPU times from the daemon's shared pass
// over /proc.
// Figures that cannot be read are zero.
func (x *Extension) stats(pid int, st *monit.UnitStatus) {
	m, ok := x.host.Usage.Memory(pid)
	if !ok {
		return
	}
	st.MemKB, st.MemKBTotal, st.Children = m.OwnBytes/1024, m.TreeBytes/1024, m.Children
	st.CPUTicks, st.CPUTicksTotal = m.OwnTicks, m.TreeTicks
	if m.TotalBytes > 0 {
		st.MemPct = 100 * float64(st.MemKB) / float64(m.TotalBytes/1024)
		st.MemPctTotal = 100 * float64(st.MemKBTotal) / float64(m.TotalBytes/1024)
	}
}

// programs runs the engines' programs (exec actions, checks' start and
// stop programs), each in a session of its own, owned by the extension:
// bounded by the ctx of Apply (the session is ended then), ended as it
// fails when endOnFailure (monit.Running.Wait) and waited for by
// Wait. run never blocks.
type programs struct {
	ctx context.Context
	log *slog.Logger
	wg  sync.WaitGroup
}

func (ps *programs) run(p *monitrc.Program, env []string, endOnFailure bool) {
	run, err := monit.Spawn(p, env)
	if err != nil {
		ps.log.Error("monit program", "program", p.Argv[0], "error", err)
		return
	}
	ps.log.Info("monit program", "program", p.Argv[0], "pid", run.PID)
	ctx := ps.ctx
	ps.wg.Go(func() {
		if err := run.Wait(ctx, endOnFailure); err != nil {
			ps.log.Warn("monit program", "program", p.Argv[0], "error", err)
		}
	})
}

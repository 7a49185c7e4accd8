package systemd

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/monit"
	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
)

// serveMonit serves monit's HTTP API (the BOSH agent's) over the units when
// monit control files with `set httpd` exist, until ctx is done. A check
// process started through the bpm shim drives its unit; files, hosts and
// the system are checked by the engine's cycles; other check processes
// are shown but not supervised on this back end. The control files are read
// once: a change needs a daemon restart. Without control files it returns
// nil; otherwise a channel that receives once the engine and the API have
// both ended, beside any error that kept the API from being served.
func (d *Driver) serveMonit(ctx context.Context) (<-chan error, error) {
	cfg, found, err := monitrc.Load(d.cfg.Layout.Root())
	if err != nil || !found {
		return nil, err
	}
	units := map[string]monit.Unit{}
	for _, s := range cfg.Services {
		if id, ok := monit.BPMShim(d.cfg.Layout, s.Start); ok && s.Type == monitrc.TypeProcess {
			units[s.Name] = &driverUnit{d: d, job: id.Job, proc: id.Process}
			continue
		}
		if s.Type != monitrc.TypeProcess { // files, hosts, the system: the engine's cycles check them
			units[s.Name] = monit.NewCheckUnit(s, s.Mode != "manual")
			continue
		}
		units[s.Name] = monit.NewFlagUnit()
		d.log.Warn("monit check not supervised on the systemd back end", "service", s.Name)
	}
	e := monit.NewEngine(cfg, units, d.started, time.Now().Unix(), nil)
	srv, ln, err := monitListener(e, cfg.HTTPD)
	if ln != nil {
		d.log.Info("monit api", "address", ln.Addr().String())
	}
	// The engine runs even when the API cannot be served; done receives
	// once the engine and the server (if any) have both ended.
	done := make(chan error, 1)
	go func() {
		var served sync.WaitGroup
		var serr error
		if ln != nil {
			served.Go(func() { serr = srv.Serve(ctx, ln) })
		}
		e.Run(ctx)
		served.Wait()
		done <- serr
	}()
	return done, err
}

// monitListener prepares the monit HTTP API of e; all nil without httpd.
func monitListener(e *monit.Engine, h *monitrc.HTTPD) (*monit.Server, net.Listener, error) {
	if h == nil {
		return nil, nil, nil
	}
	srv, err := monit.NewServer(e, time.Now)
	if err != nil {
		return nil, nil, fmt.Errorf("monit http api: %w", err)
	}
	ln, err := net.Listen("tcp", monit.Addr(h))
	if err != nil {
		return nil, nil, fmt.Errorf("monit http api: %w", err)
	}
	return srv, ln, nil
}

// driverUnit is one bpm process's unit as monit's engine drives it. Its
// Status reads the driver's latest snapshot and never runs systemctl.
type driverUnit struct {
	d         *Driver
	job, proc string
}

func (u *driverUnit) act(ctx context.Context, action string) error {
	_, err := u.d.Act(ctx, control.ActionRequest{Action: action, Job: u.job, Process: u.proc})
	return err
}

func (u *driverUnit) Start(ctx context.Context) error     { return u.act(ctx, control.ActionStart) }
func (u *driverUnit) Stop(ctx context.Context) error      { return u.act(ctx, control.ActionStop) }
func (u *driverUnit) Monitor(ctx context.Context) error   { return u.act(ctx, control.ActionMonitor) }
func (u *driverUnit) Unmonitor(ctx context.Context) error { return u.act(ctx, control.ActionUnmonitor) }

func (u *driverUnit) Status() monit.UnitStatus {
	now := time.Now()
	st := monit.UnitStatus{Collected: now}
	ps, ok := u.d.snapshot(u.job, u.proc)
	if !ok {
		return st
	}
	st.Running = ps.State == "running" || ps.State == "stopping"
	switch {
	case ps.Unmonitored || ps.Wanted == "down":
		st.Monitor = monit.NotMonitored
	case ps.State == "starting":
		st.Monitor = monit.Initializing
	default:
		st.Monitor = monit.Monitored
	}
	if st.Monitor != monit.NotMonitored {
		switch ps.State {
		case "backoff", "stopped":
			st.Events, st.Message = monit.EventNonexist, "process is not running"
		case "failed":
			st.Events, st.Message = monit.EventExec, "failed to start"
			if ps.LastExit != nil {
				st.Message = ps.LastExit.Description
			}
		}
	}
	if st.Running {
		st.PID = ps.PID
		st.Uptime = now.Sub(ps.Since)
	}
	return st
}

// snapshot returns the latest known status of JOB/PROC.
func (d *Driver) snapshot(jobName, procName string) (control.ProcessStatus, bool) {
	m := d.snap.Load()
	if m == nil {
		return control.ProcessStatus{}, false
	}
	ps, ok := (*m)[jobName+"/"+procName]
	return ps, ok
}

// remember merges statuses into the snapshot.
func (d *Driver) remember(pss []control.ProcessStatus) {
	for {
		old := d.snap.Load()
		next := map[string]control.ProcessStatus{}
		if old != nil {
			for k, v := range *old {
				next[k] = v
			}
		}
		for _, ps := range pss {
			next[ps.Job+"/"+ps.Process] = ps
		}
		if d.snap.CompareAndSwap(old, &next) {
			return
		}
	}
}

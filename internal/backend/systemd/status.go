package systemd

import (
	"context"
	"os"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend"
	"github.com/vigil-bosh/vigil/internal/pidfile"
)

// Status implements control.Manager with one systemctl show for every unit.
func (d *Driver) Status(ctx context.Context) (control.Status, error) {
	st, _, err := d.read(ctx)
	return st, err
}

// read takes the status with one systemctl show for every unit, and
// returns the units' states beside it, one per process, in order. It keeps
// the statuses for monit's engine.
func (d *Driver) read(ctx context.Context) (control.Status, []unitState, error) {
	cur := d.cur.Load()
	st := control.Status{
		Daemon: control.DaemonInfo{PID: os.Getpid(), Version: d.cfg.Version, Root: d.cfg.Layout.Root(),
			Backend: "systemd", Started: d.started},
		Processes: []control.ProcessStatus{},
		Problems:  cur.problems,
	}
	names := make([]string, len(cur.services))
	for i, s := range cur.services {
		names[i] = s.unit
	}
	states, err := d.ctl.show(ctx, names)
	if err != nil {
		return st, nil, control.Errorf(control.ErrFailed, "%v", err)
	}
	in := make([]unitState, len(cur.services))
	for i, s := range cur.services {
		in[i] = states[s.unit]
		ps := d.processStatus(s, in[i])
		backend.Configured(&ps, cur.jobs[s.job])
		st.Processes = append(st.Processes, ps)
	}
	if err := d.usage.Fill(st.Processes); err != nil {
		d.log.Debug("usage", "error", err)
	}
	snap := map[string]control.ProcessStatus{}
	for _, ps := range st.Processes {
		snap[ps.Job+"/"+ps.Process] = ps
	}
	d.snap.Store(&snap)
	return st, in, nil
}

func (d *Driver) processStatus(s service, u unitState) control.ProcessStatus {
	ps := control.ProcessStatus{
		Job: s.job, Process: s.proc, State: State(u.Active, u.Sub), Wanted: "up",
		Restarts: u.NRestarts, Since: u.Since, Unmonitored: d.unmonitored(s.unit),
	}
	if d.wantedDown(s.unit) {
		ps.Wanted = "down"
	}
	if ps.State == "running" {
		ps.PID, _ = pidfile.Read(d.cfg.Layout.PidFile(s.job, s.proc))
		// A notify unit is active only once READY=1 has come.
		ps.Ready = true
	}
	ps.LastExit = u.lastExit()
	return ps
}

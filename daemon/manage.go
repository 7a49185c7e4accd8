package daemon

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/vigil-bosh/vigil/backend"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/supervise"
)

var _ control.Manager = (*Daemon)(nil)

// Status implements control.Manager from snapshots: it never waits on a
// supervisor.
func (d *Daemon) Status(context.Context) (control.Status, error) {
	cur := d.cur.Load()
	st := control.Status{
		Daemon: control.DaemonInfo{
			PID: os.Getpid(), Version: d.cfg.Version, Root: d.cfg.Layout.Root(),
			Backend: "native", Started: d.started,
		},
		Processes: []control.ProcessStatus{},
		Problems:  cur.problems,
	}
	if d.tree != nil {
		for _, s := range d.tree.List() {
			ps := backend.ProcessStatus(s.Status())
			ps.MemoryLimitBytes = backend.MemoryLimit(cur.jobs[ps.Job], ps.Process)
			st.Processes = append(st.Processes, ps)
		}
	}
	if err := d.usage.Fill(st.Processes); err != nil { // resource use from /proc: see usage.go
		d.log.Debug("status", "error", err)
	}
	d.fillOutput(st.Processes) // dropped log output: see output.go
	return st, nil
}

// Act implements control.Manager. It sends the verb to every targeted
// process at once and then waits for all of them to settle.
func (d *Daemon) Act(ctx context.Context, req control.ActionRequest) ([]control.ProcessStatus, error) {
	verbs := map[string]supervise.Verb{
		control.ActionStart: supervise.VerbStart, control.ActionStop: supervise.VerbStop,
		control.ActionRestart: supervise.VerbRestart, control.ActionMonitor: supervise.VerbMonitor,
		control.ActionUnmonitor: supervise.VerbUnmonitor,
	}
	verb, ok := verbs[req.Action]
	if !ok {
		return nil, control.Errorf(control.ErrBadRequest, "unknown action %q", req.Action)
	}
	sups, err := d.targets(req.Job, req.Process)
	if err != nil {
		return nil, err
	}
	d.events.Asked(ctx, req.Job, req.Process, req.Action)
	d.rememberAction(verb, sups)
	replies := make([]<-chan supervise.Status, len(sups))
	d.mu.RLock()
	if d.closing {
		d.mu.RUnlock()
		return nil, control.Errorf(control.ErrFailed, "the daemon is shutting down")
	}
	for i, s := range sups {
		if replies[i], err = s.Send(ctx, verb); err != nil {
			break
		}
	}
	d.mu.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Action, req.Job, err)
	}
	out := make([]control.ProcessStatus, len(sups))
	var failed []string
	for i, s := range sups {
		var st supervise.Status
		select {
		case st = <-replies[i]:
		case <-s.Done():
			st = s.Status()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		out[i] = backend.ProcessStatus(st)
		if why := unsettled(verb, st); why != "" {
			failed = append(failed, st.ID.String()+" "+why)
		}
	}
	if len(failed) > 0 {
		return out, control.Errorf(control.ErrFailed, "%s", strings.Join(failed, "; "))
	}
	return out, nil
}

// unsettled says why st is not what verb asked for, or "" when it is.
func unsettled(verb supervise.Verb, st supervise.Status) string {
	if verb == supervise.VerbUnmonitor {
		return ""
	}
	if verb == supervise.VerbStop {
		if st.State == supervise.Stopped {
			return ""
		}
		return "is " + st.State.String()
	}
	if st.State == supervise.Running {
		return ""
	}
	why := "is " + st.State.String()
	if st.LastExit != nil {
		why = "did not start: " + st.LastExit.String() + " (now " + st.State.String() + ")"
	}
	return why
}

// Signal implements control.Manager.
func (d *Daemon) Signal(ctx context.Context, req control.SignalRequest) error {
	sig, err := backend.SignalOf(req)
	if err != nil {
		return err
	}
	sups, err := d.targets(req.Job, req.Process)
	if err != nil {
		return err
	}
	d.events.Asked(ctx, req.Job, req.Process, "signal "+req.Signal)
	if err := sups[0].Signal(ctx, sig); err != nil {
		return control.Errorf(control.ErrFailed, "signal %s: %v", sups[0].ID(), err)
	}
	return nil
}

// targets finds the supervisors that a job and optional process name.
func (d *Daemon) targets(jobName, procName string) ([]*supervise.Supervisor, error) {
	if err := backend.CheckTarget(jobName, procName); err != nil {
		return nil, err
	}
	var out []*supervise.Supervisor
	if d.tree != nil {
		for _, s := range d.tree.List() {
			if id := s.ID(); id.Job == jobName && (procName == "" || id.Process == procName) {
				out = append(out, s)
			}
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	cur := d.cur.Load()
	return nil, backend.NotFound(d.cfg.Layout, cur.jobs, cur.problems, jobName, procName)
}

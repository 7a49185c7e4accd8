package daemon

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend"
	"github.com/vigil-bosh/vigil/internal/supervise"
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
			backend.Configured(&ps, cur.jobs[ps.Job])
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
// process at once and then waits for all of them to settle, and then,
// when the request asks for it, until they run and stay up, or are ready
// (backend.Await, woken by every change). WaitNone replies once the
// commands are given.
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
	goal, waits, err := backend.GoalOf(req)
	if err != nil {
		return nil, err
	}
	sups, err := d.targets(req.Job, req.Process)
	if err != nil {
		return nil, err
	}
	d.events.Asked(ctx, req.Job, req.Process, req.Action)
	d.rememberAction(verb, sups)
	replies, err := d.send(ctx, verb, sups)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Action, req.Job, err)
	}
	if req.Wait == control.WaitNone {
		return snapshots(sups), nil
	}
	out, err := settle(ctx, verb, sups, replies)
	if err != nil || !waits {
		return out, err
	}
	return backend.Await(ctx, goal, out, d.changes.Wait, func(context.Context) ([]control.ProcessStatus, error) {
		return snapshots(sups), nil
	})
}

// send gives verb to each of sups, under the lock that orders actions
// after a reload's changes, and returns their reply channels.
func (d *Daemon) send(ctx context.Context, verb supervise.Verb, sups []*supervise.Supervisor) ([]<-chan supervise.Status, error) {
	replies := make([]<-chan supervise.Status, len(sups))
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closing {
		return nil, control.Errorf(control.ErrFailed, "the daemon is shutting down")
	}
	for i, s := range sups {
		var err error
		if replies[i], err = s.Send(ctx, verb); err != nil {
			return nil, err
		}
	}
	return replies, nil
}

// settle waits for each reply and says which process did not reach what
// verb asked for.
func settle(ctx context.Context, verb supervise.Verb, sups []*supervise.Supervisor, replies []<-chan supervise.Status) ([]control.ProcessStatus, error) {
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

// snapshots are the latest statuses of sups.
func snapshots(sups []*supervise.Supervisor) []control.ProcessStatus {
	out := make([]control.ProcessStatus, len(sups))
	for i, s := range sups {
		out[i] = backend.ProcessStatus(s.Status())
	}
	return out
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

package systemd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend"
	"github.com/vigil-bosh/vigil/internal/launch"
)

// unmonitorDropIn is the runtime drop-in that unmonitors a service: its
// exits are no longer restarted and the process is left as it is.
const unmonitorDropIn = "vigil-unmonitor.conf"

// Act implements control.Manager through systemctl, which waits for the
// jobs it queues to finish (unless the request waits for nothing:
// --no-block); the statuses are read afterwards. A wait for running or
// ready goes on from there (backend.Await), woken by the watcher's
// changes.
func (d *Driver) Act(ctx context.Context, req control.ActionRequest) ([]control.ProcessStatus, error) {
	goal, waits, err := backend.GoalOf(req)
	if err != nil {
		return nil, err
	}
	out, err := d.act(ctx, req)
	if err != nil || !waits {
		return out, err
	}
	return backend.Await(ctx, goal, out, d.changes.Wait, func(ctx context.Context) ([]control.ProcessStatus, error) {
		st, err := d.Status(ctx)
		return st.Processes, err
	})
}

func (d *Driver) act(ctx context.Context, req control.ActionRequest) ([]control.ProcessStatus, error) {
	svcs, err := d.targets(req.Job, req.Process)
	if err != nil {
		return nil, err
	}
	if !backend.KnownAction(req.Action) {
		return nil, control.Errorf(control.ErrBadRequest, "unknown action %q", req.Action)
	}
	d.events.Asked(ctx, req.Job, req.Process, req.Action)
	units := make([]string, len(svcs))
	for i, s := range svcs {
		units[i] = s.unit
	}
	verb := func(v string) []string {
		if req.Wait == control.WaitNone {
			return append([]string{v, "--no-block", "--"}, units...)
		}
		return append([]string{v, "--"}, units...)
	}
	d.mu.Lock()
	switch req.Action {
	case control.ActionStart, control.ActionRestart:
		d.setWanted(true, units...)
		_, err = d.ctl.run(ctx, verb(req.Action)...)
	case control.ActionStop:
		d.setWanted(false, units...)
		_, err = d.ctl.run(ctx, verb("stop")...)
	case control.ActionUnmonitor:
		err = d.dropIns(ctx, units, true)
	case control.ActionMonitor:
		d.setWanted(true, units...)
		if err = d.dropIns(ctx, units, false); err == nil {
			_, err = d.ctl.run(ctx, append([]string{"start", "--"}, units...)...)
		}
	default:
		d.mu.Unlock()
		return nil, control.Errorf(control.ErrBadRequest, "unknown action %q", req.Action)
	}
	d.mu.Unlock()
	states, serr := d.ctl.show(ctx, units)
	if serr != nil {
		return nil, control.Errorf(control.ErrFailed, "%v", errors.Join(err, serr))
	}
	out := make([]control.ProcessStatus, len(svcs))
	var failed []string
	defer d.remember(out)
	for i, s := range svcs {
		out[i] = d.processStatus(s, states[s.unit])
		if req.Wait == control.WaitNone {
			continue
		}
		if why := unsettled(req.Action, out[i]); why != "" {
			failed = append(failed, s.job+"/"+s.proc+" "+why)
		}
	}
	if err != nil || len(failed) > 0 {
		if err != nil {
			failed = append(failed, err.Error())
		}
		return out, control.Errorf(control.ErrFailed, "%s", strings.Join(failed, "; "))
	}
	return out, nil
}

// unsettled says why st is not what action asked for, or "" when it is.
func unsettled(action string, st control.ProcessStatus) string {
	switch {
	case action == control.ActionUnmonitor:
		return ""
	case action == control.ActionStop && st.State != "stopped" && st.State != "failed":
		return "is " + st.State
	case action != control.ActionStop && st.State != "running":
		return "is " + st.State
	}
	return ""
}

// dropIns adds (or removes) the unmonitor drop-in of each unit and reloads
// systemd.
func (d *Driver) dropIns(ctx context.Context, units []string, add bool) error {
	var errs []error
	for _, u := range units {
		dir := filepath.Join(d.cfg.RuntimeDir, u+".d")
		path := filepath.Join(dir, unmonitorDropIn)
		if !add {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("monitor %s: %w", u, err))
			}
			continue
		}
		text := header("vigil unmonitor") + "[Service]\nRestart=no\n"
		if err := os.MkdirAll(dir, 0o755); err != nil {
			errs = append(errs, fmt.Errorf("unmonitor %s: %w", u, err))
		} else if err := writeAtomic(path, []byte(text)); err != nil {
			errs = append(errs, fmt.Errorf("unmonitor %s: %w", u, err))
		}
	}
	if _, err := d.ctl.run(ctx, "daemon-reload"); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (d *Driver) unmonitored(unit string) bool {
	_, err := os.Stat(filepath.Join(d.cfg.RuntimeDir, unit+".d", unmonitorDropIn))
	return err == nil
}

func (d *Driver) setWanted(up bool, units ...string) {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	for _, u := range units {
		if up {
			delete(d.down, u)
		} else {
			d.down[u] = true
		}
	}
}

func (d *Driver) wantedDown(unit string) bool {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	return d.down[unit]
}

// Signal implements control.Manager as the native back end does: the
// signal goes to the pid-file pid (vigil's init), which forwards it to the
// executable. systemctl kill would reach `vigil exec`, whose TERM and INT
// mean "stop with bpm's ladder".
func (d *Driver) Signal(ctx context.Context, req control.SignalRequest) error {
	sig, err := backend.SignalOf(req)
	if err != nil {
		return err
	}
	svcs, err := d.targets(req.Job, req.Process)
	if err != nil {
		return err
	}
	d.events.Asked(ctx, req.Job, req.Process, "signal "+req.Signal)
	// The pid file's process is signalled only once it is known to be the
	// init of this process, held by a pidfd: never a stranger with its pid.
	it, err := launch.FindInit(d.cfg.Layout, svcs[0].job, svcs[0].proc)
	if err != nil {
		return control.Errorf(control.ErrFailed, "signal %s/%s: not running (%v)", req.Job, req.Process, err)
	}
	defer it.Close()
	if err := it.Signal(sig); err != nil {
		return control.Errorf(control.ErrFailed, "signal %s/%s: %v", req.Job, req.Process, err)
	}
	return nil
}

// targets finds the services of a job, or of one of its processes.
func (d *Driver) targets(jobName, procName string) ([]service, error) {
	if err := backend.CheckTarget(jobName, procName); err != nil {
		return nil, err
	}
	cur := d.cur.Load()
	var out []service
	for _, s := range cur.services {
		if s.job == jobName && (procName == "" || s.proc == procName) {
			out = append(out, s)
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	return nil, backend.NotFound(d.cfg.Layout, cur.jobs, cur.problems, jobName, procName)
}

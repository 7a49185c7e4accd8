package systemd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/job"
)

// Reload implements control.Manager: it regenerates the units and applies
// the plan (backend.Plan) of the installed services against the generated
// ones: it stops the services that are gone, installs the units (removing
// the stale ones), reloads systemd when a file changed, restarts the
// services whose unit changed and starts the others (a no-op for those
// up). A job whose bpm.yml fails to load keeps its previous configuration,
// or with none, whatever units it has installed.
func (d *Driver) Reload(ctx context.Context) (control.ReloadResult, error) {
	d.events.Asked(ctx, "", "", "reload")
	d.mu.Lock()
	defer d.mu.Unlock()
	prev := d.cur.Load()
	js := backend.LoadJobs(d.cfg.Layout, d.cfg.Jobs, prev.jobs, d.log)
	for _, err := range js.Errs {
		d.events.Publish(backend.ConfigEvent(err))
	}
	next, units, keep, plan := d.plan(prev, js)
	if err := d.systemctl(ctx, "stop", plan.Stop); err != nil {
		next.problems = append(next.problems, control.Problem{Severity: "error", Message: err.Error()})
	}
	ch, err := Install(d.cfg.UnitDir, units, keep...)
	if err != nil {
		next.problems = append(next.problems, control.Problem{Severity: "error", Message: err.Error()})
	}
	if ch.Changed() {
		if _, err := d.ctl.run(ctx, "daemon-reload"); err != nil {
			d.cur.Store(next)
			return plan.Result(next.problems, js.Failed), fmt.Errorf("reload systemd: %w", err)
		}
	}
	d.setWanted(true, serviceNames(slices.Concat(plan.Up(), plan.Keep))...)
	d.cur.Store(next)
	err = errors.Join(d.systemctl(ctx, "restart", plan.Restart), d.systemctl(ctx, "start", slices.Concat(plan.Start, plan.Keep)))
	d.changes.Notify()
	return plan.Result(next.problems, js.Failed), err
}

var _ control.ReloadPlanner = (*Driver)(nil)

// PlanReload implements control.ReloadPlanner: Reload's plan, read
// quietly, with nothing done.
func (d *Driver) PlanReload(context.Context) (control.ReloadResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	js := backend.LoadJobs(d.cfg.Layout, d.cfg.Jobs, d.cur.Load().jobs, slog.New(slog.DiscardHandler))
	next, _, _, plan := d.plan(d.cur.Load(), js)
	res := plan.Result(next.problems, js.Failed)
	res.DryRun = true
	return res, nil
}

// plan is a reload decided: the next configuration and its units, the
// sources whose units stay as they are (jobs that failed to load), and
// the plan of the installed services against the generated ones.
func (d *Driver) plan(prev *loaded, js backend.Jobs) (*loaded, []Unit, []string, backend.Changes) {
	var keep []string
	for _, name := range js.Failed {
		keep = append(keep, d.cfg.Layout.BPMConfig(name))
	}
	next, units := d.generate(js)
	installed := d.installed(keep)
	running := append(backend.IDs(installed), idsOf(prev.services)...)
	return next, units, keep, backend.Plan(installed, next.texts, running, func(a, b string) bool { return a == b })
}

// generate translates the jobs into their units, and records the services
// of the next configuration with their unit text.
func (d *Driver) generate(js backend.Jobs) (*loaded, []Unit) {
	next := &loaded{jobs: js.Jobs, texts: map[supervise.ID]string{}, problems: js.Problems}
	all := make([]*job.Job, 0, len(js.Jobs))
	for _, j := range js.Jobs {
		all = append(all, j)
	}
	units := Units(d.cfg.Layout, all, d.cfg.Units)
	text := map[string]string{}
	for _, u := range units {
		text[u.Name] = u.Text
	}
	for _, j := range all {
		if !j.Errand {
			for _, p := range j.Processes {
				s := service{p.Job, p.Name, ServiceName(p.Job, p.Name)}
				next.services = append(next.services, s)
				next.texts[s.id()] = text[s.unit]
			}
		}
	}
	slices.SortFunc(next.services, func(a, b service) int { return strings.Compare(a.unit, b.unit) })
	return next, units
}

// installed reads the services vigil generated that the unit directory
// holds, with their text: what systemd runs as vigil last configured it.
// Those generated from a source in keep are left out (left as they are).
func (d *Driver) installed(keep []string) map[supervise.ID]string {
	out := map[supervise.ID]string{}
	entries, _ := os.ReadDir(d.cfg.UnitDir)
	for _, e := range entries {
		id, ok := serviceID(e.Name())
		if !ok {
			continue
		}
		path := filepath.Join(d.cfg.UnitDir, e.Name())
		if src, ok := source(path); ok && !slices.Contains(keep, src) {
			if b, err := os.ReadFile(path); err == nil {
				out[id] = string(b)
			}
		}
	}
	return out
}

// systemctl runs `systemctl VERB -- UNITS` for the services of ids, sorted
// by unit name; nothing when there are none.
func (d *Driver) systemctl(ctx context.Context, verb string, ids []supervise.ID) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := d.ctl.run(ctx, append([]string{verb, "--"}, serviceNames(ids)...)...)
	return err
}

// serviceNames are the units of ids, sorted.
func serviceNames(ids []supervise.ID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = ServiceName(id.Job, id.Process)
	}
	slices.Sort(out)
	return out
}

func idsOf(ss []service) []supervise.ID {
	out := make([]supervise.ID, len(ss))
	for i, s := range ss {
		out[i] = s.id()
	}
	return out
}

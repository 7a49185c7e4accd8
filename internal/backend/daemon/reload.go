package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend"
	"github.com/vigil-bosh/vigil/internal/launch"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/job"
)

// Reload implements control.Manager. It reads every job again and brings
// the running set in line with the plan (backend.Plan): processes of new
// jobs start, processes that are gone stop, changed ones restart, and
// unchanged ones are not touched. A job whose configuration became invalid
// keeps running as it was, and says so in the problems. Reload returns
// once every start and stop has settled; with an active extension
// (monit's control files), once its stops have: the extension's engine
// starts the processes afterwards.
func (d *Daemon) Reload(ctx context.Context) (control.ReloadResult, error) {
	// Once begun, a reload finishes even if its caller goes away: an
	// abandoned stop would leave a process running unsupervised.
	ctx = context.WithoutCancel(ctx)
	d.events.Asked(ctx, "", "", "reload")
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closing {
		return control.ReloadResult{}, control.Errorf(control.ErrFailed, "the daemon is shutting down")
	}
	old := d.cur.Load()
	next := d.load(old, d.log, true)
	plan := backend.Plan(old.specs, next.specs, d.running(), sameSpec)
	err := d.removeAll(ctx, plan.Down())
	for _, id := range plan.Keep {
		next.runners[id] = old.runners[id]
	}
	toStart, finish, aerr := d.addAll(next, plan.Up())
	if xerr := d.ext.Apply(d.serveCtx); xerr != nil {
		next.problems = append(next.problems, control.Problem{Severity: "error", Message: xerr.Error()})
	}
	d.cur.Store(next)
	d.changes.Notify()
	err = errors.Join(err, aerr, d.finishStops(ctx, finish))
	wait, stopWaiting := d.untilStopping(ctx)
	defer stopWaiting()
	werr := d.startInWaves(wait, next, toStart)
	d.ext.Settled(wait)
	if d.stopping != nil && d.stopping.Err() != nil {
		werr = nil // the starts were asked for; the shutdown stops them
	}
	return plan.Result(next.problems, next.rejected), errors.Join(err, werr)
}

var _ control.ReloadPlanner = (*Daemon)(nil)

// PlanReload implements control.ReloadPlanner: the configuration read as
// Reload reads it (quietly: nothing logged, no event) and Reload's plan
// against what runs now, with nothing done.
func (d *Daemon) PlanReload(context.Context) (control.ReloadResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	old := d.cur.Load()
	next := d.load(old, slog.New(slog.DiscardHandler), false)
	res := backend.Plan(old.specs, next.specs, d.running(), sameSpec).Result(next.problems, next.rejected)
	res.DryRun = true
	return res, nil
}

// Check reads the configuration of cfg's root as a daemon's first load
// would, with no daemon and nothing started: the problems the daemon
// would report (bpm.yml, monit control files, dependencies) and what it
// would start. It is vigil check's reading of a whole root.
func Check(cfg Config) (control.ReloadResult, error) {
	d, err := New(cfg)
	if err != nil {
		return control.ReloadResult{}, err
	}
	next := d.load(d.cur.Load(), slog.New(slog.DiscardHandler), false)
	res := backend.Plan(nil, next.specs, nil, sameSpec).Result(next.problems, next.rejected)
	res.DryRun = true
	return res, nil
}

// untilStopping is ctx, ended too when the daemon is told to stop. The
// stops of a reload run to the end (an abandoned one would leave a process
// running unsupervised), but its waits for starts to settle must not hold
// the shutdown: a start that never settles would keep the daemon from
// honouring SIGTERM.
func (d *Daemon) untilStopping(ctx context.Context) (context.Context, context.CancelFunc) {
	wait, cancel := context.WithCancel(ctx)
	if d.stopping == nil {
		return wait, cancel
	}
	stop := context.AfterFunc(d.stopping, cancel)
	return wait, func() { stop(); cancel() }
}

// spec is what one supervisor runs: a bpm process, or a program of the
// extension (by the text of its configuration).
type spec struct {
	proc    job.Process
	program string // non-empty for a program
}

func sameSpec(a, b spec) bool {
	if a.program != "" || b.program != "" {
		return a.program == b.program
	}
	return a.proc.Equal(b.proc)
}

// load reads the configuration for a reload over old: the jobs, what the
// extension runs, and the order of starts. Configuration problems are
// logged to log, and published as events when publish is set (a real
// reload, not a plan).
func (d *Daemon) load(old *loaded, log *slog.Logger, publish bool) *loaded {
	js := backend.LoadJobs(d.cfg.Layout, d.cfg.Jobs, old.jobs, log)
	for _, err := range js.Errs {
		if !publish {
			break
		}
		d.events.Publish(backend.ConfigEvent(err))
	}
	next := &loaded{jobs: js.Jobs, specs: map[supervise.ID]spec{}, runners: map[supervise.ID]*launch.Runner{},
		problems: js.Problems, rejected: js.Failed}
	bpm := wanted(next.jobs)
	active, probs := d.ext.Load(backend.IDs(bpm), dependsOn(bpm))
	next.problems, next.extended = append(next.problems, probs...), active
	procs := bpm
	if active {
		run, programs := d.ext.Wanted()
		procs = map[supervise.ID]job.Process{}
		for _, id := range run {
			procs[id] = bpm[id]
		}
		for id, text := range programs {
			next.specs[id] = spec{program: text}
		}
		unsupervised := backend.Unsupervised(next.jobs, procs)
		for _, p := range unsupervised {
			log.Warn("not supervised", "job", p.Job, "process", p.Process, "why", p.Message)
		}
		next.problems = append(next.problems, unsupervised...)
	}
	for id, p := range procs {
		next.specs[id] = spec{proc: p}
	}
	var depProblems []control.Problem
	next.deps, depProblems = dependencies(procs)
	next.problems = append(next.problems, depProblems...)
	return next
}

// wanted lists every process that should run: all processes of every job
// that is not an errand.
func wanted(jobs map[string]*job.Job) map[supervise.ID]job.Process {
	out := map[supervise.ID]job.Process{}
	for _, j := range jobs {
		if j.Errand {
			continue
		}
		for _, p := range j.Processes {
			out[supervise.ID{Job: j.Name, Process: p.Name}] = p
		}
	}
	return out
}

// running lists the processes supervised now.
func (d *Daemon) running() []supervise.ID {
	var ids []supervise.ID
	for _, s := range d.tree.List() {
		ids = append(ids, s.ID())
	}
	return ids
}

// removeAll stops and removes the supervisors of ids in parallel.
func (d *Daemon) removeAll(ctx context.Context, ids []supervise.ID) error {
	err := d.tree.RemoveAll(ctx, ids) // their supervisors have ended either way
	for _, id := range ids {
		d.events.Forget(id)
	}
	return err
}

// addAll adds a supervisor for each of ids, in next, and returns those to
// start (not kept down by the extension or by an operator's stop) and the
// adopted ones whose stop a daemon that died did not finish.
func (d *Daemon) addAll(next *loaded, ids []supervise.ID) (start, finish []supervise.ID, err error) {
	var stopped map[supervise.ID]bool // what an operator stopped (see stopped.go)
	if !next.extended {
		stopped = d.readStopped()
	}
	for _, id := range ids {
		if _, ok := d.tree.Get(id); ok {
			continue // its stop failed: it keeps running as it was
		}
		cfg := d.supervisorConfig(next, id)
		if !cfg.Unmonitored && !stopped[id] {
			start = append(start, id)
		}
		if cfg.Adopt != nil && stopped[id] {
			finish = append(finish, id)
		}
		if _, aerr := d.tree.Add(cfg); aerr != nil {
			err = errors.Join(err, aerr)
		}
	}
	return start, finish, err
}

// supervisorConfig makes the supervisor of id in next. A bpm process's
// runs through proc, with the supervision the back ends share, and adopts
// a live init that a daemon that died left; a program's is the
// extension's. The extension lays its settings on both.
func (d *Daemon) supervisorConfig(next *loaded, id supervise.ID) supervise.Config {
	cfg := supervise.Config{ID: id, Timing: d.cfg.Timing, OnChange: d.onChange}
	if sp := next.specs[id]; sp.program == "" {
		r := launch.NewRunner(sp.proc, launch.Options{Layout: d.cfg.Layout, Init: d.init,
			InitEnv: d.cfg.InitEnv, HookTimeout: d.cfg.HookTimeout, Pool: d.pool,
			NoIsolation: d.cfg.NoIsolation, Scopes: d.scopes, Log: d.log, Console: d.console()})
		next.runners[id] = r
		cfg.Runner = r
		cfg.Timing, cfg.Probes = backend.Supervision(sp.proc, d.cfg.Layout, d.cfg.Timing, r.StartInside)
		if cfg.Timing.StartTimeout <= 0 {
			cfg.Timing.StartTimeout = d.startTimeout()
		}
		cfg.OnLimit = d.command(id, sp.proc.Restart.Limit.Exec, sp.proc.Environ(d.cfg.Layout))
		switch p, err := launch.Adopt(d.cfg.Layout, id.Job, id.Process); {
		case err == nil:
			cfg.Adopt = p
			d.log.Info("adopted", "process", id.String(), "pid", p.PID())
		case !errors.Is(err, fs.ErrNotExist): // a pid file names no init of ours: say why
			d.log.Warn("not adopted", "process", id.String(), "error", err)
		}
	}
	cfg.Unmonitored = d.ext.Configure(id, &cfg)
	return cfg
}

// startTimeout bounds a start of a bpm process that names none: the
// pre_start hook's own limit plus a minute for the rest (the init, the
// sandbox, the exec), so that a start that hangs anywhere fails and is
// retried instead of staying "starting" for good.
func (d *Daemon) startTimeout() time.Duration {
	hook := d.cfg.HookTimeout
	if hook <= 0 {
		hook = launch.DefaultHookTimeout
	}
	return hook + time.Minute
}

// finishStops stops the adopted processes of ids, which an operator had
// stopped; each settles on its own.
func (d *Daemon) finishStops(ctx context.Context, ids []supervise.ID) error {
	var err error
	for _, id := range ids {
		if s, ok := d.tree.Get(id); ok {
			d.log.Info("finishing the stop of an adopted process", "process", id.String())
			if _, serr := s.Send(ctx, supervise.VerbStop); serr != nil {
				err = errors.Join(err, fmt.Errorf("stop %s: %w", id, serr))
			}
		}
	}
	return err
}

// startInWaves starts ids ordered by depends_on (see startWaves), unless
// the extension is active: its engine starts them then, each once those it
// depends on have started (never waiting for an unrelated one), after the
// reload has returned.
func (d *Daemon) startInWaves(ctx context.Context, next *loaded, ids []supervise.ID) error {
	if next.extended {
		return nil
	}
	return d.startWaves(ctx, next.deps, ids)
}

// startAll starts ids and waits for each to settle. A process that does not
// come up is reported in its status, not as an error of the reload.
func (d *Daemon) startAll(ctx context.Context, ids []supervise.ID) error {
	var replies []<-chan supervise.Status
	for _, id := range ids {
		if s, ok := d.tree.Get(id); ok {
			r, err := s.Send(ctx, supervise.VerbStart)
			if err != nil {
				return fmt.Errorf("start %s: %w", id, err)
			}
			replies = append(replies, r)
		}
	}
	for _, r := range replies {
		select {
		case <-r:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/job"
	"github.com/vigil-bosh/vigil/monitcompat"
	"github.com/vigil-bosh/vigil/proc"
	"github.com/vigil-bosh/vigil/supervise"
)

// Reload implements control.Manager. It reads every job again and brings
// the running set in line: processes of new jobs start, processes that are
// gone stop, changed ones restart, and unchanged ones are not touched. A job
// whose configuration became invalid keeps running as it was, and says so
// in the problems. Reload returns once every start and stop has settled.
func (d *Daemon) Reload(ctx context.Context) (control.ReloadResult, error) {
	// Once begun, a reload finishes even if its caller goes away: an
	// abandoned stop would leave a process running unsupervised.
	ctx = context.WithoutCancel(ctx)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closing {
		return control.ReloadResult{}, control.Errorf(control.ErrFailed, "the daemon is shutting down")
	}
	jobs, warns, errs := job.LoadAll(d.cfg.Layout, d.cfg.Jobs)
	mon, monProblems := d.loadMonit()
	old := d.cur.Load()
	next := &loaded{jobs: map[string]*job.Job{}, runners: map[supervise.ID]*proc.Runner{},
		problems: append(Problems(errs, warns), monProblems...), monit: mon}
	for _, j := range jobs {
		next.jobs[j.Name] = j
	}
	for _, err := range errs {
		var le *job.LoadError
		if errors.As(err, &le) && old.jobs[le.Job] != nil {
			next.jobs[le.Job] = old.jobs[le.Job] // keep what runs
			next.problems = append(next.problems, control.Problem{Severity: "error", Job: le.Job,
				Message: "the new configuration is invalid: the job keeps running with its previous one"})
		}
		d.log.Error("configuration", "error", err)
		d.events.publish(configEvent(err))
	}
	for _, w := range warns {
		d.log.Warn("configuration", "warning", w.String())
	}

	keepEmptied(old, next, d.log)
	want := wanted(next.jobs)
	if mon != nil {
		var more []control.Problem
		want, more = checkedOnly(want, mon)
		next.problems = append(next.problems, more...)
	}
	var depProblems []control.Problem
	next.deps, depProblems = dependencies(want)
	next.problems = append(next.problems, depProblems...)
	var res control.ReloadResult
	var stop, start []supervise.ID
	for _, s := range d.tree.List() {
		id := s.ID()
		if prog, was := programOf(next, id), programOf(old, id); prog != nil || was != nil {
			switch {
			case prog == nil:
				stop = append(stop, id)
				res.Stopped = append(res.Stopped, id.String())
			case !sameService(prog, was):
				stop, start = append(stop, id), append(start, id)
				res.Restarted = append(res.Restarted, id.String())
			default:
				res.Unchanged = append(res.Unchanged, id.String())
			}
			continue
		}
		p, ok := want[id]
		switch {
		case !ok:
			stop = append(stop, id)
			res.Stopped = append(res.Stopped, id.String())
		case !p.Equal(processOf(old, id)):
			stop, start = append(stop, id), append(start, id)
			res.Restarted = append(res.Restarted, id.String())
		default:
			next.runners[id] = old.runners[id]
			res.Unchanged = append(res.Unchanged, id.String())
		}
	}
	for _, id := range slices.SortedFunc(maps.Keys(want), compareIDs) {
		if _, ok := d.tree.Get(id); !ok {
			start = append(start, id)
			res.Started = append(res.Started, id.String())
		}
	}
	if mon != nil {
		for _, id := range slices.SortedFunc(maps.Keys(mon.programs), compareIDs) {
			if _, ok := d.tree.Get(id); !ok {
				start = append(start, id)
				res.Started = append(res.Started, id.String())
			}
		}
	}
	err := d.removeAll(ctx, stop)
	unmonitored := d.readMonitState()
	var stopped map[supervise.ID]bool // what an operator stopped (see stopped.go)
	if next.monit == nil {
		stopped = d.readStopped()
	}
	var toStart, finishStop []supervise.ID
	for _, id := range start {
		if _, ok := d.tree.Get(id); ok {
			continue // its stop failed: it keeps running as it was
		}
		keepDown := next.monit != nil && (unmonitored[strings.ToLower(next.monit.serviceOf(id))] ||
			next.monit.mode(id) == "manual")
		if !keepDown && !stopped[id] {
			toStart = append(toStart, id)
		}
		if svc := programOf(next, id); svc != nil {
			r := &monitcompat.ProgramRunner{Service: svc, Host: hostname()}
			cfg := supervise.Config{ID: id, Timing: r.Timing(d.cfg.Timing), Runner: r, OnChange: d.onChange,
				Unmonitored: keepDown}
			d.withMonitTests(next.monit, id, &cfg)
			if _, aerr := d.tree.Add(cfg); aerr != nil {
				err = errors.Join(err, aerr)
			}
			continue
		}
		r := proc.NewRunner(want[id], proc.Options{Layout: d.cfg.Layout, Init: d.cfg.Init,
			InitEnv: d.cfg.InitEnv, HookTimeout: d.cfg.HookTimeout, Pool: d.pool,
			NoIsolation: d.cfg.NoIsolation, Log: d.log})
		next.runners[id] = r
		scfg := d.supervisorConfig(id, want[id], r)
		d.withMonitTests(next.monit, id, &scfg)
		// A live init (left by a daemon that died) is adopted, not started again.
		if p, aerr := proc.Adopt(d.cfg.Layout, id.Job, id.Process); aerr == nil {
			scfg.Adopt = p
			d.log.Info("adopted", "process", id.String(), "pid", p.PID())
			if stopped[id] { // a stop its daemon did not live to finish
				finishStop = append(finishStop, id)
			}
		}
		scfg.Unmonitored = keepDown
		if _, aerr := d.tree.Add(scfg); aerr != nil {
			err = errors.Join(err, aerr)
		}
	}
	if serr := d.swapEngine(next); serr != nil {
		next.problems = append(next.problems, control.Problem{Severity: "error", Message: serr.Error()})
	}
	res.Problems = next.problems
	d.cur.Store(next)
	d.changes.notify()
	for _, id := range finishStop {
		if s, ok := d.tree.Get(id); ok {
			d.log.Info("finishing the stop of an adopted process", "process", id.String())
			if _, serr := s.Send(ctx, supervise.VerbStop); serr != nil { // settles on its own
				err = errors.Join(err, fmt.Errorf("stop %s: %w", id, serr))
			}
		}
	}
	wait, stopWaiting := d.untilStopping(ctx)
	defer stopWaiting()
	var werr error
	if next.monit == nil {
		werr = d.startWaves(wait, next.deps, toStart)
	} else {
		werr = d.startInOrder(wait, next.monit, toStart)
	}
	if d.stopping != nil && d.stopping.Err() != nil {
		werr = nil // the starts were asked for; the shutdown stops them
	}
	return res, errors.Join(err, werr)
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

func processOf(l *loaded, id supervise.ID) job.Process {
	if j := l.jobs[id.Job]; j != nil {
		if p, ok := j.Process(id.Process); ok {
			return p
		}
	}
	return job.Process{}
}

func compareIDs(a, b supervise.ID) int {
	return cmp.Or(cmp.Compare(a.Job, b.Job), cmp.Compare(a.Process, b.Process))
}

// removeAll stops and removes the supervisors of ids in parallel.
func (d *Daemon) removeAll(ctx context.Context, ids []supervise.ID) error {
	err := d.tree.RemoveAll(ctx, ids) // their supervisors have ended either way
	for _, id := range ids {
		d.events.forget(id)
	}
	return err
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

func (d *Daemon) supervisorConfig(id supervise.ID, p job.Process, r *proc.Runner) supervise.Config {
	t := d.cfg.Timing
	t.StopSignal = p.ShutdownSignal
	if t.StartTimeout <= 0 {
		t.StartTimeout = d.startTimeout()
	}
	t.Restart = RestartPolicy(t.Restart, p.Restart)
	t.Health.Notify = p.Health.Notify != ""
	return supervise.Config{ID: id, Timing: t, Runner: r, OnChange: d.onChange,
		Probes: ProbesOf(p, d.cfg.Layout, r.Enter), OnLimit: d.limitExec(id, p.Restart.Limit.Exec, p.Environ(d.cfg.Layout))}
}

// startTimeout bounds a start of a bpm process that names none: the
// pre_start hook's own limit plus a minute for the rest (the init, the
// sandbox, the exec), so that a start that hangs anywhere fails and is
// retried instead of staying "starting" for good.
func (d *Daemon) startTimeout() time.Duration {
	hook := d.cfg.HookTimeout
	if hook <= 0 {
		hook = proc.DefaultHookTimeout
	}
	return hook + time.Minute
}

// onChange runs on a supervisor's goroutine after each change: it derives
// the events, logs a change of state, pid or last exit (a probe result
// alone, published at every period, is not logged), and wakes the
// watchers. It never blocks on them.
func (d *Daemon) onChange(st supervise.Status) {
	prev := d.events.observe(st)
	if prev.ID != st.ID || prev.State != st.State || prev.PID != st.PID || !sameExit(prev.LastExit, st.LastExit) {
		args := []any{"process", st.ID.String(), "state", st.State.String()}
		if st.PID != 0 {
			args = append(args, "pid", st.PID)
		}
		if st.LastExit != nil && (st.State == supervise.Backoff || st.State == supervise.Failed ||
			st.State == supervise.Starting || st.State == supervise.Stopped) {
			args = append(args, "last_exit", st.LastExit.String())
		}
		d.log.Info("state", args...)
	}
	d.monitEvent(st)
	d.changes.notify()
}

// sameExit reports whether a and b describe the same exit (or none).
func sameExit(a, b *supervise.Exit) bool {
	return a == b || a != nil && b != nil && *a == *b
}

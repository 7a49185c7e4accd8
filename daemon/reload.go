package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

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
	var booting []string // the monit services started because they do not run (monit's first cycle)
	for _, id := range start {
		if _, ok := d.tree.Get(id); ok {
			continue // its stop failed: it keeps running as it was
		}
		keepDown := next.monit != nil && (unmonitored[strings.ToLower(next.monit.serviceOf(id))] ||
			next.monit.mode(id) == "manual")
		// monit never starts a passive service itself: it only watches it.
		watchOnly := next.monit != nil && next.monit.mode(id) == "passive"
		if !keepDown && !stopped[id] && !watchOnly {
			toStart = append(toStart, id)
		}
		if svc := programOf(next, id); svc != nil {
			r := &monitcompat.ProgramRunner{Service: svc, Host: hostname()}
			cfg := supervise.Config{ID: id, Timing: r.Timing(d.cfg.Timing), Runner: r, OnChange: d.onChange,
				Unmonitored: keepDown}
			withMonitTiming(next.monit, id, &cfg)
			if _, aerr := d.tree.Add(cfg); aerr != nil {
				err = errors.Join(err, aerr)
			}
			if !keepDown && !watchOnly && !monitcompat.Alive(svc.PidFile) {
				booting = append(booting, svc.Name)
			}
			continue
		}
		r := proc.NewRunner(want[id], proc.Options{Layout: d.cfg.Layout, Init: d.cfg.Init,
			InitEnv: d.cfg.InitEnv, HookTimeout: d.cfg.HookTimeout, Pool: d.pool,
			NoIsolation: d.cfg.NoIsolation, Log: d.log})
		next.runners[id] = r
		scfg := d.supervisorConfig(id, want[id], r)
		withMonitTiming(next.monit, id, &scfg)
		// A live init (left by a daemon that died) is adopted, not started again.
		if p, aerr := proc.Adopt(d.cfg.Layout, id.Job, id.Process); aerr == nil {
			scfg.Adopt = p
			d.log.Info("adopted", "process", id.String(), "pid", p.PID())
			if stopped[id] { // a stop its daemon did not live to finish
				finishStop = append(finishStop, id)
			}
		} else if next.monit != nil && !keepDown && !watchOnly {
			booting = append(booting, next.monit.serviceOf(id))
		}
		scfg.Unmonitored = keepDown
		if _, aerr := d.tree.Add(scfg); aerr != nil {
			err = errors.Join(err, aerr)
		}
	}
	booted := make(chan struct{}) // the engine's first cycle waits for the starts below
	defer close(booted)
	if serr := d.swapEngine(next, booting, booted); serr != nil {
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
	if next.monit == nil {
		return res, errors.Join(err, d.startWaves(ctx, next.deps, toStart))
	}
	return res, errors.Join(err, d.startInOrder(ctx, next.monit, toStart))
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
	t.Restart = RestartPolicy(t.Restart, p.Restart)
	t.Health.Notify = p.Health.Notify != ""
	return supervise.Config{ID: id, Timing: t, Runner: r, OnChange: d.onChange,
		Probes: ProbesOf(p, d.cfg.Layout, r.Enter), OnLimit: d.limitExec(id, p.Restart.Limit.Exec, p.Environ(d.cfg.Layout))}
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

package container

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/lifecycle"
)

// statusWait bounds the status read that judges the drains the budget
// ended: it runs after their context is done.
const statusWait = 5 * time.Second

// outcome is one job's drain as the container reports it.
type outcome struct {
	lifecycle.Result
	// gone: the budget ended the drain once the job's processes had
	// exited, which is what a dynamic drain waits for; it counts as done.
	gone bool
}

// DrainJobs unmonitors every process m supervises, so that a drain script
// may stop its own process without it coming back, runs the drains, and
// judges those the budget ended (see settle).
func DrainJobs(ctx context.Context, m control.Manager, o lifecycle.DrainOptions) ([]outcome, error) {
	if err := UnmonitorAll(ctx, m); err != nil {
		return nil, err
	}
	rep, err := lifecycle.Drain(ctx, o)
	if err != nil {
		return nil, err
	}
	return settle(ctx, m, rep), nil
}

// DrainAll is DrainJobs with its outcomes as one error, the agent's
// summary: nil when every drain is done.
func DrainAll(ctx context.Context, m control.Manager, o lifecycle.DrainOptions) error {
	outs, err := DrainJobs(ctx, m, o)
	if err != nil {
		return err
	}
	return summary(outs)
}

// settle judges the drains the budget ended (lifecycle.ErrTimedOut,
// whether the script ran or waited to be called again): a job none of
// whose processes runs any more has drained; one whose process still runs
// has failed, and the stop ladder that follows ends it. Without a status
// they stay failed.
func settle(ctx context.Context, m control.Manager, rep lifecycle.Report) []outcome {
	outs := make([]outcome, len(rep.Results))
	cut := false
	for i, r := range rep.Results {
		outs[i].Result = r
		cut = cut || errors.Is(r.Err, lifecycle.ErrTimedOut)
	}
	if !cut {
		return outs
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), statusWait)
	defer cancel()
	st, err := m.Status(sctx)
	if err != nil {
		return outs
	}
	running := map[string]bool{}
	for _, p := range st.Processes {
		switch p.State {
		case "starting", "running", "stopping":
			running[p.Job] = true
		}
	}
	for i, o := range outs {
		if errors.Is(o.Err, lifecycle.ErrTimedOut) && !running[o.Job] {
			outs[i].gone = true
		}
	}
	return outs
}

// failed reports whether the drain failed.
func (o outcome) failed() bool { return o.Err != nil && !o.gone }

// summary is the agent's error for the failed drains, nil without one.
func summary(outs []outcome) error {
	rep := lifecycle.Report{Name: "drain"}
	for _, o := range outs {
		r := o.Result
		if !o.failed() {
			r.Err = nil
		}
		rep.Results = append(rep.Results, r)
	}
	return rep.Err()
}

// report logs each job's drain at its level, with the script's last
// answer and exit, publishes it as an event (control.EventDrained or
// EventDrainFailed), and returns the summary.
func report(log *slog.Logger, publish func(control.Event), outs []outcome) error {
	for _, o := range outs {
		args := []any{"job", o.Job, "output", o.Output, "exit", o.Exit, "duration", o.Duration.Round(time.Millisecond)}
		ev := control.Event{Job: o.Job, Kind: control.EventDrained}
		switch {
		case o.failed():
			log.Error("drain failed", append(args, "error", o.Err)...)
			ev.Kind, ev.Message = control.EventDrainFailed, fmt.Sprintf("%v; output %q, %s", o.Err, o.Output, exitOrNone(o.Exit))
		case o.gone:
			log.Info("drain done: its processes had exited when the budget ran out", append(args, "ended", o.Err)...)
			ev.Message = fmt.Sprintf("its processes had exited when the budget ran out (%v)", o.Err)
		default:
			log.Info("drain done", args...)
			ev.Message = fmt.Sprintf("answered %q, %s, after %s", o.Output, exitOrNone(o.Exit), o.Duration.Round(time.Millisecond))
		}
		publish(ev)
	}
	err := summary(outs)
	if err != nil {
		log.Error("drains failed", "error", err)
	} else {
		log.Info("drained", "jobs", len(outs))
	}
	return err
}

func exitOrNone(exit string) string {
	if exit == "" {
		return "no exit"
	}
	return exit
}

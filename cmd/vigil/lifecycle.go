package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/container"
	"github.com/vigil-bosh/vigil/internal/lifecycle"
)

// listFlag is a comma-separated list.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error {
	*l = append(*l, strings.Split(s, ",")...)
	return nil
}

var _ flag.Value = (*listFlag)(nil)

func defineLifecycle(c *command) func([]string) error {
	timeout := c.Duration("timeout", 0, "end a script that runs longer (TERM, then KILL 10s later); 0: no limit")
	var jobs listFlag
	c.Var(&jobs, "jobs", "only these `JOBS` (comma-separated)")
	c.completes(completeJob)
	vm := c.String("vm-next-state", "keep", "pre-stop: BOSH_VM_NEXT_STATE (`STATE`: keep or delete)")
	c.completes("keep|delete")
	inst := c.String("instance-next-state", "keep", "pre-stop: BOSH_INSTANCE_NEXT_STATE (`STATE`)")
	dep := c.String("deployment-next-state", "keep", "pre-stop: BOSH_DEPLOYMENT_NEXT_STATE (`STATE`)")
	asJSON := c.Bool("json", "print each job's outcome as JSON")
	return func(pos []string) error {
		l, err := c.layout()
		if err != nil {
			return err
		}
		o := lifecycle.HookOptions{Layout: l, Hook: pos[0], Timeout: *timeout, Jobs: jobs}
		if o.Hook == "pre-stop" {
			o.Env = []string{"BOSH_VM_NEXT_STATE=" + *vm, "BOSH_INSTANCE_NEXT_STATE=" + *inst,
				"BOSH_DEPLOYMENT_NEXT_STATE=" + *dep}
		}
		ctx, cancel := interruptible()
		defer cancel()
		rep, err := lifecycle.RunHook(ctx, o)
		if err != nil {
			return err
		}
		if err := printReport(rep, *asJSON); err != nil {
			return err
		}
		return rep.Err()
	}
}

func defineDrain(c *command) func([]string) error {
	shutdown := c.Bool("shutdown", "the instance is stopping: job_shutdown")
	c.Bool("update", "the job is being updated (the default)")
	jobNew := c.Bool("job-new", "update: job_new instead of job_changed")
	hashChanged := c.Bool("hash-changed", "update: hash_changed")
	hashNew := c.Bool("hash-new", "update: hash_new")
	var pkgs, jobs listFlag
	c.Var(&pkgs, "packages", "update: new or changed `PACKAGES` (comma-separated)")
	c.Var(&jobs, "jobs", "only these `JOBS` (comma-separated)")
	c.completes(completeJob)
	disk := c.Int("persistent-disk", 0, "BOSH_JOB_STATE persistent disk, `MIB`")
	nextDisk := c.Int("next-persistent-disk", -1, "BOSH_JOB_NEXT_STATE persistent disk, `MIB` (-1: an update keeps --persistent-disk, a shutdown has no next state)")
	budget := c.Duration("budget", 0, "end every script still running after this long; 0: no limit")
	waitAll := c.String("wait-all", "", "a preStop hook: mark this container drained in the pod's stamp `DIR`, then wait for every container of the pod")
	c.completes(completeDir)
	name := c.String("name", os.Getenv("VIGIL_CONTAINER_NAME"), "with --wait-all: this container's `NAME` in the pod")
	asJSON := c.Bool("json", "print each job's outcome as JSON")
	return func(pos []string) error {
		l, err := c.layout()
		if err != nil {
			return err
		}
		o := lifecycle.DrainOptions{Layout: l, JobNew: *jobNew, HashChanged: *hashChanged, HashNew: *hashNew,
			Packages: pkgs, PersistentDisk: *disk, Budget: *budget, Jobs: jobs}
		if *shutdown {
			o.Kind = lifecycle.Shutdown
		}
		if *nextDisk >= 0 {
			o.NextPersistentDisk = nextDisk
		}
		ctx, cancel := interruptible()
		defer cancel()
		var stamps *container.Stamps
		if *waitAll != "" {
			if stamps, err = container.NewStamps(*waitAll, *name); err != nil {
				return err
			}
			o.Kind = lifecycle.Shutdown // a pod going away
		}
		client := control.NewClient(l.ControlSocket())
		ran, err := drainByDaemon(ctx, client, *asJSON)
		if !ran && err == nil && (stamps == nil || !stamps.Drained()) {
			// As the agent: the processes are unmonitored first, so that a
			// drain script may stop its own process without it coming back.
			err = drainAll(ctx, client, o, *asJSON)
		}
		if stamps == nil {
			return err
		}
		return stamps.AfterDrain(ctx, err) // a failed drain waits for the pod too
	}
}

// drainByDaemon asks the daemon to run the drains (vigil container runs
// them itself, once per termination). ran is false when the daemon does
// not (a VM's daemon) or none answers: then this command runs them.
func drainByDaemon(ctx context.Context, c *control.Client, asJSON bool) (ran bool, err error) {
	st, err := c.Drain(ctx)
	switch {
	case errors.Is(err, control.ErrNotSupported), errors.Is(err, control.ErrNoDaemon):
		return false, nil
	case err != nil:
		return true, err
	}
	if asJSON {
		err = writeJSON(os.Stdout, st)
	} else {
		fmt.Println(drainSentence(st))
	}
	if err == nil && st.State == control.DrainFailed {
		err = errors.New(st.Error)
	}
	return true, err
}

// drainSentence says how the daemon's drain went, as vigil drain prints
// it: "the daemon drained every job (begun by a drain request)".
func drainSentence(d control.DrainState) string {
	by := " (begun by " + drainCause(d.By) + ")"
	switch d.State {
	case control.DrainDone:
		return "the daemon drained every job" + by
	case control.DrainFailed:
		return "the daemon's drain failed" + by
	}
	return "the daemon is draining every job" + by
}

// drainCause names what began a drain: a drain request (a preStop hook,
// vigil drain) or SIGTERM.
func drainCause(by string) string {
	switch by {
	case "request":
		return "a drain request"
	case "signal":
		return "SIGTERM"
	}
	return by
}

// drainAll unmonitors through the daemon when one runs, then drains and
// prints each job's outcome.
func drainAll(ctx context.Context, c *control.Client, o lifecycle.DrainOptions, asJSON bool) error {
	if err := container.UnmonitorAll(ctx, c); err != nil && !errors.Is(err, control.ErrNoDaemon) {
		return err
	}
	rep, err := lifecycle.Drain(ctx, o)
	if err != nil {
		return err
	}
	if err := printReport(rep, asJSON); err != nil {
		return err
	}
	return rep.Err()
}

// printReport prints each job's outcome of a hook or drain.
func printReport(rep lifecycle.Report, asJSON bool) error {
	if asJSON {
		type result struct {
			Job     string  `json:"job"`
			OK      bool    `json:"ok"`
			Error   string  `json:"error,omitempty"`
			Seconds float64 `json:"seconds"`
		}
		out := struct {
			Script  string   `json:"script"`
			Results []result `json:"results"`
		}{Script: rep.Name, Results: []result{}}
		for _, r := range rep.Results {
			res := result{Job: r.Job, OK: r.Err == nil, Seconds: r.Duration.Seconds()}
			if r.Err != nil {
				res.Error = r.Err.Error()
			}
			out.Results = append(out.Results, res)
		}
		return writeJSON(os.Stdout, out)
	}
	for _, r := range rep.Results {
		status := "ok"
		if r.Err != nil {
			status = "failed"
		}
		fmt.Fprintf(os.Stdout, "%s %s: %s (%s)\n", rep.Name, r.Job, status, r.Duration.Round(time.Millisecond))
	}
	return nil
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/container"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/lifecycle"
)

// listFlag is a comma-separated list.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error {
	*l = append(*l, strings.Split(s, ",")...)
	return nil
}

var _ flag.Value = (*listFlag)(nil)

func runLifecycle(args []string) error {
	c := newCommand("lifecycle")
	timeout := c.fs.Duration("timeout", 0, "end a script that runs longer (TERM, then KILL 10s later); 0: no limit")
	var jobs listFlag
	c.fs.Var(&jobs, "jobs", "only these jobs (comma-separated)")
	vm := c.fs.String("vm-next-state", "keep", "pre-stop: BOSH_VM_NEXT_STATE (keep or delete)")
	inst := c.fs.String("instance-next-state", "keep", "pre-stop: BOSH_INSTANCE_NEXT_STATE")
	dep := c.fs.String("deployment-next-state", "keep", "pre-stop: BOSH_DEPLOYMENT_NEXT_STATE")
	pos, err := c.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("lifecycle needs one hook: %s", strings.Join(lifecycle.Hooks, ", "))
	}
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
	printReport(rep)
	return rep.Err()
}

func runDrain(args []string) error {
	c := newCommand("drain")
	shutdown := c.fs.Bool("shutdown", false, "the instance is stopping: job_shutdown")
	c.fs.Bool("update", false, "the job is being updated (the default)")
	jobNew := c.fs.Bool("job-new", false, "update: job_new instead of job_changed")
	hashChanged := c.fs.Bool("hash-changed", false, "update: hash_changed")
	hashNew := c.fs.Bool("hash-new", false, "update: hash_new")
	var pkgs, jobs listFlag
	c.fs.Var(&pkgs, "packages", "update: new or changed packages (comma-separated)")
	c.fs.Var(&jobs, "jobs", "only these jobs (comma-separated)")
	disk := c.fs.Int("persistent-disk", 0, "BOSH_JOB_STATE persistent disk, MiB")
	nextDisk := c.fs.Int("next-persistent-disk", -1, "BOSH_JOB_NEXT_STATE persistent disk, MiB (-1: an update keeps --persistent-disk, a shutdown has no next state)")
	budget := c.fs.Duration("budget", 0, "end every script still running after this long; 0: no limit")
	waitAll := c.fs.String("wait-all", "", "a preStop hook: mark this container drained in the pod's stamp directory DIR, then wait for every container of the pod")
	name := c.fs.String("name", os.Getenv("VIGIL_CONTAINER_NAME"), "with --wait-all: this container's name in the pod")
	pos, err := c.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("drain takes no arguments")
	}
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
	if stamps == nil || !stamps.Drained() {
		// As the agent: the processes are unmonitored first, so that a
		// drain script may stop its own process without it coming back.
		if err := drainAll(ctx, control.NewClient(l.ControlSocket()), o); err != nil {
			return err
		}
	}
	if stamps == nil {
		return nil
	}
	if err := stamps.MarkDrained(); err != nil {
		return err
	}
	return stamps.WaitAll(ctx)
}

// drainAll unmonitors through the daemon when one runs, then drains and
// prints each job's outcome.
func drainAll(ctx context.Context, c *control.Client, o lifecycle.DrainOptions) error {
	if err := container.UnmonitorAll(ctx, c); err != nil && !errors.Is(err, control.ErrNoDaemon) {
		return err
	}
	rep, err := lifecycle.Drain(ctx, o)
	if err != nil {
		return err
	}
	printReport(rep)
	return rep.Err()
}

func printReport(rep lifecycle.Report) {
	for _, r := range rep.Results {
		status := "ok"
		if r.Err != nil {
			status = "failed"
		}
		fmt.Fprintf(os.Stdout, "%s %s: %s (%s)\n", rep.Name, r.Job, status, r.Duration.Round(time.Millisecond))
	}
}

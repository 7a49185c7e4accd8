package container

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend/daemon"
	"github.com/vigil-bosh/vigil/internal/launch"
	"github.com/vigil-bosh/vigil/internal/lifecycle"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

// Config configures Run.
type Config struct {
	Daemon daemon.Config
	// Grace is the pod's terminationGracePeriodSeconds: everything, drains
	// and stops, must be over within it once SIGTERM arrives. Zero means 30s,
	// Kubernetes' default.
	Grace time.Duration
	// Stamps, if set, is a directory shared by the pod's containers (an
	// emptyDir): see Stamps.
	Stamps *Stamps
	// Probes, if set, is the address of the read-only /livez and /readyz
	// endpoints: ":8081" (every address of the pod, which the kubelet
	// reaches) or a loopback one.
	Probes string
	// Metrics, if set, gives the handler of GET /metrics on the probes'
	// address for the daemon; it may follow the daemon's events until ctx
	// is done.
	Metrics func(ctx context.Context, d *daemon.Daemon) http.Handler
	Log     *slog.Logger
}

// Budget splits a grace period: the drains get what the stop ladder does
// not need. The ladder keeps bpm's shape, shortened when the grace is short.
func Budget(grace time.Duration) (drain time.Duration, t supervise.Timing) {
	if grace <= 0 {
		grace = 30 * time.Second
	}
	t.StopTimeout = min(15*time.Second, grace/3)
	t.QuitTimeout = min(2*time.Second, grace/10)
	t.KillTimeout = min(5*time.Second, grace/10)
	margin := grace / 20
	drain = max(grace-t.StopTimeout-t.QuitTimeout-t.KillTimeout-margin, 0)
	return drain, t
}

// Run supervises the jobs until ctx is done (SIGTERM), then, within the
// grace period: unmonitors every process, runs every job's drain script
// (once for the container's life: a preStop hook's vigil drain asks the
// daemon, and SIGTERM then finds them done), stops every process with the
// ladder, and returns nil only if the drains succeeded and everything went
// down cleanly.
func Run(ctx context.Context, c Config) error {
	log := c.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// What this container cannot give the jobs, said once, before any
	// process starts (each process's status carries its own part).
	for _, p := range launch.ReadEnvironment(c.Daemon.Layout, "").Problems() {
		log.Warn("environment", "problem", p)
	}
	drainBudget, timing := Budget(c.Grace)
	c.Daemon.Timing.StopTimeout = timing.StopTimeout
	c.Daemon.Timing.QuitTimeout = timing.QuitTimeout
	c.Daemon.Timing.KillTimeout = timing.KillTimeout
	var d *daemon.Daemon
	drains := newDrainer(func(ctx context.Context) error { return drainOnce(ctx, d, c, log) }, drainBudget)
	c.Daemon.ControlOptions = append(c.Daemon.ControlOptions, control.WithDrainer(drains))
	d, err := daemon.New(c.Daemon)
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()

	if c.Probes != "" {
		ln, err := net.Listen("tcp", c.Probes)
		if err != nil {
			stop()
			return errors.Join(fmt.Errorf("probe listener: %w", err), <-done)
		}
		var metrics http.Handler
		if c.Metrics != nil {
			metrics = c.Metrics(runCtx, d)
		}
		served := serveProbes(runCtx, ln, pod{d, drains}, metrics)
		// The listener ends with runCtx: end it before waiting, also when
		// the daemon could not run at all.
		defer func() { stop(); <-served }()
	}
	if c.Stamps != nil {
		if err := c.Stamps.Register(); err != nil {
			log.Error("register with the pod's drain stamps", "error", err)
		}
	}
	select {
	case err := <-done:
		return err // the daemon could not run at all
	case <-ctx.Done():
	}
	if st := drains.DrainState(); st != nil {
		log.Info("terminating: the drains began before (asked by "+st.By+"); then every process", "grace", c.Grace)
	} else {
		log.Info("terminating: drains first, then every process", "grace", c.Grace, "drain_budget", drainBudget)
	}
	<-drains.begin("signal")
	stop()
	return errors.Join(drains.err(), <-done)
}

// drainOnce unmonitors every process and runs the drains, unless this
// container's drains already ran (its stamp says so), then marks the
// stamp, failed or not: the pod's other containers wait for it, not for
// its success. Each job's outcome is logged at its level and published
// before the stamp is marked.
func drainOnce(ctx context.Context, d *daemon.Daemon, c Config, log *slog.Logger) error {
	if c.Stamps != nil && c.Stamps.Drained() {
		log.Info("drains already ran for this container")
		return nil
	}
	budget := time.Until(deadlineOf(ctx))
	// The drains of this container's jobs (--jobs) only: an image may hold
	// the jobs of several containers.
	outs, err := DrainJobs(ctx, d, lifecycle.DrainOptions{Layout: c.Daemon.Layout, Kind: lifecycle.Shutdown, Budget: budget,
		Jobs: c.Daemon.Jobs})
	if err != nil {
		log.Error("drains failed", "error", err)
	} else {
		err = report(log, d.Publish, outs)
	}
	if c.Stamps != nil {
		if serr := c.Stamps.MarkDrained(); serr != nil {
			log.Error("drain stamp", "error", serr)
		}
	}
	return err
}

// deadlineOf is ctx's deadline (the drains' budget always sets one).
func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// UnmonitorAll unmonitors every job m supervises (the first step of a
// drain). Reaching no daemon is an error matching control.ErrNoDaemon.
func UnmonitorAll(ctx context.Context, m control.Manager) error {
	st, err := m.Status(ctx)
	if err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	seen := map[string]bool{}
	for _, p := range st.Processes {
		if seen[p.Job] {
			continue
		}
		seen[p.Job] = true
		if _, err := m.Act(ctx, control.ActionRequest{Action: control.ActionUnmonitor, Job: p.Job}); err != nil {
			return fmt.Errorf("unmonitoring services: %w", err)
		}
	}
	return nil
}

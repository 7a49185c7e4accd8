package container

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/daemon"
	"github.com/vigil-bosh/vigil/lifecycle"
	"github.com/vigil-bosh/vigil/supervise"
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
	// Probes, if set, is a loopback address for /livez and /readyz.
	Probes string
	Log    *slog.Logger
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
// (unless this container's drains already ran in a preStop hook), stops every
// process with the ladder, and returns nil only if the drains succeeded and
// everything went down cleanly.
func Run(ctx context.Context, c Config) error {
	log := c.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	drainBudget, timing := Budget(c.Grace)
	c.Daemon.Timing.StopTimeout = timing.StopTimeout
	c.Daemon.Timing.QuitTimeout = timing.QuitTimeout
	c.Daemon.Timing.KillTimeout = timing.KillTimeout
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
		served := serveProbes(runCtx, ln, d)
		defer func() { <-served }()
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
	log.Info("terminating: drains first, then every process", "grace", c.Grace, "drain_budget", drainBudget)
	drainErr := drainOnce(d, c, drainBudget, log)
	stop()
	return errors.Join(drainErr, <-done)
}

// drainOnce unmonitors every process and runs the drains, unless a preStop
// hook already did for this container.
func drainOnce(m control.Manager, c Config, budget time.Duration, log *slog.Logger) error {
	if c.Stamps != nil && c.Stamps.Drained() {
		log.Info("drains already ran in the preStop hook")
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	err := DrainAll(ctx, m, lifecycle.DrainOptions{Layout: c.Daemon.Layout, Kind: lifecycle.Shutdown, Budget: budget})
	if c.Stamps != nil {
		if serr := c.Stamps.MarkDrained(); serr != nil {
			log.Error("drain stamp", "error", serr)
		}
	}
	return err
}

// DrainAll unmonitors every process m supervises, so that a drain script
// may stop its own process without it coming back, then runs the drains.
func DrainAll(ctx context.Context, m control.Manager, o lifecycle.DrainOptions) error {
	if err := UnmonitorAll(ctx, m); err != nil {
		return err
	}
	rep, err := lifecycle.Drain(ctx, o)
	if err != nil {
		return err
	}
	return rep.Err()
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

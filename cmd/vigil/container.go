package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend/daemon"
	"github.com/vigil-bosh/vigil/internal/container"
	"github.com/vigil-bosh/vigil/internal/metrics"
)

// defineContainer is a container's entrypoint: the first run becomes the
// reaper (PID 1) and starts the same command again as the daemon.
func defineContainer(c *command) func([]string) error {
	jobs := c.String("jobs", "", "comma-separated `JOBS` to supervise (default: all)")
	c.completes(completeJob)
	grace := c.Duration("grace", 30*time.Second, "the pod's terminationGracePeriodSeconds: drains and stops fit in it")
	stamps := c.String("stamps", "", "a `DIR` shared by the pod's containers, for vigil drain --wait-all")
	c.completes(completeDir)
	name := c.String("name", os.Getenv("VIGIL_CONTAINER_NAME"), "this container's `NAME` in the pod (with --stamps)")
	probes := c.String("probes", "", "serve read-only /livez, /readyz and /metrics on this `ADDRESS` for the kubelet and Prometheus, e.g. :8081 (the pod's address) or 127.0.0.1:8081")
	console := c.Bool("console", "also copy each process's output to this container's stdout and stderr, each line prefixed with JOB/PROC (kubectl logs); the log files get it too")
	return func(pos []string) error {
		if *stamps != "" && *name == "" {
			return c.usagef("--stamps needs --name (or VIGIL_CONTAINER_NAME)")
		}
		if os.Getenv(container.ReaperEnv) == "" {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			if code := container.Reap(self, append([]string{"container"}, os.Args[2:]...)); code != 0 {
				return &exitError{code: code}
			}
			return nil
		}
		l, err := c.layout()
		if err != nil {
			return err
		}
		if err := checkRoot(l.Root()); err != nil {
			return err
		}
		log := daemonLog(os.Stderr)
		cfg := container.Config{
			Daemon: daemon.Config{Layout: l, Version: vigilVersion(), Log: log, Console: *console},
			Grace:  *grace, Probes: *probes, Log: log,
			Metrics: func(ctx context.Context, d *daemon.Daemon) http.Handler {
				m := metrics.New()
				go func() { _ = m.Follow(ctx, d) }() // ends with ctx
				return m.Handler(d)
			},
		}
		if *jobs != "" {
			cfg.Daemon.Jobs = strings.Split(*jobs, ",")
		}
		if *stamps != "" {
			if cfg.Stamps, err = container.NewStamps(*stamps, *name); err != nil {
				return err
			}
		}
		leanGC()
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		return container.Run(ctx, cfg)
	}
}

// defineProbe answers a kubelet exec probe: exit 0 when live or ready.
func defineProbe(c *command) func([]string) error {
	// Below the kubelet's default timeoutSeconds of 1 for an exec probe,
	// which also runs the exec: the answer is vigil's, never a kill.
	timeout := c.Duration("timeout", 800*time.Millisecond, "give up on the daemon's answer after this long (below the kubelet's exec probe timeout, 1 s by default)")
	asJSON := c.Bool("json", "print the answer as JSON")
	return func(pos []string) error {
		if pos[0] != "live" && pos[0] != "ready" {
			return c.usagef("needs live or ready")
		}
		client, err := connect(c)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		defer cancel()
		check := container.Live
		if pos[0] == "ready" {
			check = container.Ready
		}
		err = check(ctx, control.Manager(client))
		if *asJSON {
			out := struct {
				Probe  string `json:"probe"`
				OK     bool   `json:"ok"`
				Reason string `json:"reason,omitempty"`
			}{Probe: pos[0], OK: err == nil}
			if err != nil {
				out.Reason = err.Error()
			}
			if werr := writeJSON(os.Stdout, out); werr != nil {
				return werr
			}
		} else if err == nil {
			fmt.Println(pos[0])
		}
		if errors.Is(err, control.ErrNoDaemon) {
			return err
		}
		return exitWith(exitNotRunning, err)
	}
}

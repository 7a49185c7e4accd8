package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/vigil-bosh/vigil/container"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/daemon"
)

// runContainer is a container's entrypoint: the first run becomes the
// reaper (PID 1) and starts the same command again as the daemon.
func runContainer(args []string) error {
	c := newCommand("container")
	jobs := c.fs.String("jobs", "", "comma-separated jobs to supervise (default: all)")
	grace := c.fs.Duration("grace", 30*time.Second, "the pod's terminationGracePeriodSeconds: drains and stops fit in it")
	stamps := c.fs.String("stamps", "", "a directory shared by the pod's containers, for `vigil drain --wait-all`")
	name := c.fs.String("name", os.Getenv("VIGIL_CONTAINER_NAME"), "this container's name in the pod (with --stamps)")
	probes := c.fs.String("probes", "", "loopback address for /livez and /readyz, e.g. 127.0.0.1:8081")
	pos, err := c.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("container takes no arguments")
	}
	if os.Getenv(container.ReaperEnv) == "" {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		if code := container.Reap(self, append([]string{"container"}, args...)); code != 0 {
			return &exitError{code: code}
		}
		return nil
	}
	l, err := c.layout()
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg := container.Config{
		Daemon: daemon.Config{Layout: l, Version: vigilVersion(), Log: log},
		Grace:  *grace, Probes: *probes, Log: log,
	}
	if *jobs != "" {
		cfg.Daemon.Jobs = strings.Split(*jobs, ",")
	}
	if *stamps != "" {
		if *name == "" {
			return usageError("container: --stamps needs --name (or VIGIL_CONTAINER_NAME)")
		}
		if cfg.Stamps, err = container.NewStamps(*stamps, *name); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return container.Run(ctx, cfg)
}

// runProbe answers a kubelet exec probe: exit 0 when live or ready.
func runProbe(args []string) error {
	c := newCommand("probe")
	pos, client, err := connect(c, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || (pos[0] != "live" && pos[0] != "ready") {
		return usageError("usage: vigil probe live|ready")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	check := container.Live
	if pos[0] == "ready" {
		check = container.Ready
	}
	if err := check(ctx, control.Manager(client)); err != nil {
		return err
	}
	fmt.Println(pos[0])
	return nil
}

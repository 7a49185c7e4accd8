package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/vigil-bosh/vigil/daemon"
	"github.com/vigil-bosh/vigil/proc"
)

func runDaemon(args []string) error {
	c := newCommand("daemon")
	jobs := c.fs.String("jobs", "", "comma-separated jobs to supervise (default: all)")
	leave := c.fs.Bool("leave-running", false, "on SIGTERM leave every process running for the next daemon to adopt (as `systemctl kill monit` needs)")
	pos, err := c.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("daemon takes no arguments, got %q", pos)
	}
	l, err := c.layout()
	if err != nil {
		return err
	}
	cfg := daemon.Config{
		Layout: l, Version: version,
		Log:          slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
		NoIsolation:  os.Getenv(proc.IsolationEnv) == "off",
		LeaveRunning: *leave,
	}
	if *jobs != "" {
		cfg.Jobs = strings.Split(*jobs, ",")
	}
	return serveDaemon(cfg)
}

// serveDaemon runs a daemon until SIGTERM or SIGINT, reopening the logs on
// SIGHUP.
func serveDaemon(cfg daemon.Config) error {
	d, err := daemon.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	done, finished := make(chan struct{}), make(chan struct{})
	defer func() { close(done); <-finished }()
	go func() {
		defer close(finished)
		for {
			select {
			case <-hup:
				if err := d.ReopenLogs(ctx); err != nil {
					cfg.Log.Error("reopen logs", "error", err)
				} else {
					cfg.Log.Info("reopened logs")
				}
			case <-done:
				return
			}
		}
	}()
	if err := d.Run(ctx); err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	return nil
}

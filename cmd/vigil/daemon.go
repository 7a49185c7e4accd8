package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/daemon"
	"github.com/vigil-bosh/vigil/metrics"
	"github.com/vigil-bosh/vigil/proc"
	"github.com/vigil-bosh/vigil/systemd"
)

func runDaemon(args []string) error {
	c := newCommand("daemon")
	jobs := c.fs.String("jobs", "", "comma-separated jobs to supervise (default: all)")
	leave := c.fs.Bool("leave-running", false, "on SIGTERM leave every process running for the next daemon to adopt (as `systemctl kill monit` needs)")
	unlessStopping := c.fs.Bool("leave-running-unless-stopping", false, "on SIGTERM leave every process running for the next daemon unless systemd is stopping the daemon's unit (a stop, the shutdown): a restart or a kill leaves them (the stemcell's vigil.service)")
	backend := c.fs.String("backend", "auto", "native, systemd, or auto (systemd when booted with systemd and run as root)")
	unitDir := c.fs.String("unit-dir", "/etc/systemd/system", "systemd back end: where the units go")
	systemctl := c.fs.String("systemctl", "systemctl", "systemd back end: the systemctl binary")
	var page httpOptions
	page.register(c.fs)
	pos, err := c.parse(args)
	if err != nil {
		return err
	}
	if err := page.check(); err != nil {
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
		Layout: l, Version: vigilVersion(),
		Log:          slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
		NoIsolation:  os.Getenv(proc.IsolationEnv) == "off",
		LeaveRunning: *leave,
	}
	if *unlessStopping {
		cfg.LeaveRunningIf = func() bool { return !stopPending(cfg.Log) }
	}
	if *jobs != "" {
		cfg.Jobs = strings.Split(*jobs, ",")
	}
	be, err := chooseBackend(*backend, systemdBooted, os.Geteuid())
	if err != nil {
		return err
	}
	if be == "systemd" {
		return serveSystemd(cfg, *unitDir, *systemctl, page)
	}
	return serveDaemonWith(cfg, page)
}

// serveSystemd runs the systemd back end until SIGTERM or SIGINT. The units
// keep running after it ends: systemd owns them.
func serveSystemd(cfg daemon.Config, unitDir, systemctl string, page httpOptions) error {
	self, err := ownBinary()
	if err != nil {
		return err
	}
	scfg := systemd.Config{Layout: cfg.Layout, Jobs: cfg.Jobs, UnitDir: unitDir,
		Systemctl: systemctl, Units: systemd.Options{Vigil: self}, Version: cfg.Version, Log: cfg.Log}
	m := metrics.New()
	if page.wanted() {
		scfg.ControlOptions = []control.ServeOption{control.WithRequestObserver(m.ObserveRequest)}
	}
	d := systemd.New(scfg)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cfg.Log.Info("backend systemd", "units", unitDir)
	servePage, err := listenHTTP(page, cfg.Layout, d, m, cfg.Log) // restart latency from the units' events too
	if err != nil {
		return err
	}
	if err := serveAlongside(servePage, func() error { return d.Run(ctx) }); err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	return nil
}

// serveDaemon runs a daemon until SIGTERM or SIGINT, reopening the logs on
// SIGHUP.
func serveDaemon(cfg daemon.Config) error { return serveDaemonWith(cfg, httpOptions{}) }

// serveDaemonWith is serveDaemon with the status page of page served
// until the daemon has stopped.
func serveDaemonWith(cfg daemon.Config, page httpOptions) error {
	m := metrics.New()
	if page.wanted() {
		cfg.ControlOptions = append(cfg.ControlOptions, control.WithRequestObserver(m.ObserveRequest))
	}
	d, err := daemon.New(cfg)
	if err != nil {
		return err
	}
	servePage, err := listenHTTP(page, cfg.Layout, d, m, cfg.Log)
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
	if err := serveAlongside(servePage, func() error { return d.Run(ctx) }); err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	return nil
}

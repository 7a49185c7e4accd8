package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend/daemon"
	"github.com/vigil-bosh/vigil/internal/backend/systemd"
	"github.com/vigil-bosh/vigil/internal/launch"
	"github.com/vigil-bosh/vigil/internal/metrics"
)

func defineDaemon(c *command) func([]string) error {
	jobs := c.String("jobs", "", "comma-separated `JOBS` to supervise (default: all)")
	c.completes(completeJob)
	leave := c.Bool("leave-running", "on SIGTERM leave every process running for the next daemon to adopt (as `systemctl kill monit` needs)")
	unlessStopping := c.Bool("leave-running-unless-stopping", "on SIGTERM leave every process running for the next daemon unless systemd is stopping the daemon's unit (a stop, the shutdown): a restart or a kill leaves them (the stemcell's vigil.service)")
	backend := c.String("backend", "auto", "`BACKEND`: native, systemd, or auto (systemd when booted with systemd and run as root)")
	c.completes("auto|native|systemd")
	unitDir := c.String("unit-dir", "/etc/systemd/system", "systemd back end: the `DIR` the units go into")
	c.completes(completeDir)
	systemctl := c.String("systemctl", "systemctl", "systemd back end: the systemctl `BINARY`")
	c.completes(completeFile)
	var page httpOptions
	page.register(c)
	return func(pos []string) error {
		if err := page.check(c); err != nil {
			return err
		}
		l, err := c.layout()
		if err != nil {
			return err
		}
		if err := checkRoot(l.Root()); err != nil {
			return err
		}
		cfg := daemon.Config{
			Layout: l, Version: vigilVersion(),
			Log:          daemonLog(os.Stderr),
			NoIsolation:  os.Getenv(launch.IsolationEnv) == "off",
			LeaveRunning: *leave,
		}
		if *unlessStopping {
			cfg.LeaveRunningIf = func() bool { return !stopPending(cfg.Log) }
		}
		if *jobs != "" {
			cfg.Jobs = strings.Split(*jobs, ",")
		}
		be, err := chooseBackend(c, *backend, systemdBooted, os.Geteuid())
		if err != nil {
			return err
		}
		if be == "systemd" {
			if err := checkSystemd(*systemctl); err != nil {
				return err
			}
			return serveSystemd(cfg, *unitDir, *systemctl, page)
		}
		return serveDaemonWith(cfg, page)
	}
}

// checkRoot refuses a BOSH root that is not an existing directory, rather
// than create one where the operator mistyped a path.
func checkRoot(root string) error {
	fi, err := os.Stat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the BOSH root %s does not exist: give --root DIR or VIGIL_ROOT", root)
	case err != nil:
		return fmt.Errorf("the BOSH root: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("the BOSH root %s is not a directory", root)
	}
	return nil
}

// checkSystemd refuses the systemd back end where it cannot work: no
// systemctl, or systemd not running (systemctl is-system-running says
// "offline" when systemd is not the init).
func checkSystemd(systemctl string) error {
	path, err := exec.LookPath(systemctl)
	if err != nil {
		return fmt.Errorf("the systemd back end needs systemctl: %w", err)
	}
	out, _ := exec.Command(path, "is-system-running").Output() // non-zero when degraded: the words say more
	if state := strings.TrimSpace(string(out)); state == "offline" {
		return fmt.Errorf("the systemd back end needs systemd as the init, and %s is-system-running says %q: use --backend native", systemctl, state)
	}
	return nil
}

// serveSystemd runs the systemd back end until SIGTERM or SIGINT. The units
// keep running after it ends: systemd owns them.
func serveSystemd(cfg daemon.Config, unitDir, systemctl string, page httpOptions) error {
	leanGC()
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

// daemonGCPercent is the collector's GOGC in the long-running commands
// (daemon, monit, container) where the environment sets none. Their live
// heap is small, about 1.5 MB with 100 processes, and Go's default lets
// garbage grow to a 4 MB goal before each collection. At 50 the daemon
// keeps about 1.5 MB less, measured after a start of 100 and 30 status
// queries, for three times as many collections of that small heap.
const daemonGCPercent = 50

// leanGC sets daemonGCPercent unless GOGC is set.
func leanGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(daemonGCPercent)
	}
}

// serveDaemon runs a daemon until SIGTERM or SIGINT, reopening the logs on
// SIGHUP.
func serveDaemon(cfg daemon.Config) error { return serveDaemonWith(cfg, httpOptions{}) }

// serveDaemonWith is serveDaemon with the status page of page served
// until the daemon has stopped.
func serveDaemonWith(cfg daemon.Config, page httpOptions) error {
	leanGC()
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

// daemonLog is the daemon's log, as text lines on w. An attribute whose
// value is nil (an error that did not happen) is left out, so that no
// line ever says error=<nil>.
func daemonLog(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindAny && a.Value.Any() == nil {
				return slog.Attr{}
			}
			return a
		}}))
}

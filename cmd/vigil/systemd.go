package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/vigil-bosh/vigil/job"
	"github.com/vigil-bosh/vigil/proc"
	"github.com/vigil-bosh/vigil/systemd"
)

// runSystemd is `vigil systemd generate`: the units of every job, written
// into a unit directory idempotently.
func runSystemd(args []string) error {
	if len(args) == 0 || args[0] != "generate" {
		return usageError("usage: vigil systemd generate [--root DIR] [--out UNITDIR]")
	}
	c := newCommand("systemd generate")
	out := c.fs.String("out", "/etc/systemd/system", "unit directory")
	vigil := c.fs.String("vigil", "", "the vigil binary named in ExecStart (default: this one)")
	pos, err := c.parse(args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("systemd generate takes no arguments, got %q", pos)
	}
	l, err := c.layout()
	if err != nil {
		return err
	}
	if *vigil == "" {
		if *vigil, err = ownBinary(); err != nil {
			return err
		}
	}
	jobs, warns, errs := job.LoadAll(l, nil)
	for _, w := range warns {
		fmt.Fprintln(os.Stderr, "warning:", w)
	}
	var keep []string
	for _, err := range errs {
		fmt.Fprintln(os.Stderr, "error:", err)
		var le *job.LoadError
		if errors.As(err, &le) {
			keep = append(keep, l.BPMConfig(le.Job)) // its units stay as they were
		}
	}
	ch, err := systemd.Install(*out, systemd.Units(l, jobs, systemd.Options{Vigil: *vigil}), keep...)
	for _, n := range ch.Written {
		fmt.Println("wrote", filepath.Join(*out, n))
	}
	for _, n := range ch.Removed {
		fmt.Println("removed", filepath.Join(*out, n))
	}
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d job(s) with configuration errors kept their units", len(errs))}
	}
	return nil
}

// runExec is `vigil exec JOB PROC`, the ExecStart of a generated unit: the
// process under vigil's init in the foreground, stopped with bpm's ladder
// on TERM or INT.
func runExec(args []string) error {
	c := newCommand("exec")
	pos, err := c.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageError("usage: vigil exec [--root DIR] JOB PROC")
	}
	l, err := c.layout()
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR1,
		syscall.SIGUSR2, syscall.SIGQUIT, syscall.SIGWINCH)
	defer signal.Stop(sigs)
	code, err := systemd.Exec(context.Background(), systemd.ExecConfig{
		Layout: l, Job: pos[0], Proc: pos[1], Signals: sigs,
		NoIsolation:  os.Getenv(proc.IsolationEnv) == "off",
		NotifySocket: os.Getenv("NOTIFY_SOCKET"),
		Stdout:       os.Stdout, Stderr: os.Stderr, // the unit's journal
	})
	if err != nil || code != 0 {
		return &exitError{code: code, err: err}
	}
	return nil
}

func ownBinary() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find own binary: %w", err)
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		return "", fmt.Errorf("find own binary: %w", err)
	}
	return self, nil
}

// chooseBackend resolves --backend: auto is systemd when systemd is the
// init (/run/systemd/system exists) and the daemon runs as root.
func chooseBackend(flag string, booted func() bool, euid int) (string, error) {
	switch strings.ToLower(flag) {
	case "native", "systemd":
		return strings.ToLower(flag), nil
	case "", "auto":
		if booted() && euid == 0 {
			return "systemd", nil
		}
		return "native", nil
	}
	return "", usageError("--backend must be native, systemd or auto, got %q", flag)
}

func systemdBooted() bool {
	fi, err := os.Stat("/run/systemd/system")
	return err == nil && fi.IsDir()
}

// stopPending reports whether systemd is stopping the daemon's own unit
// (the service in /proc/self/cgroup): a stop job, as for `systemctl stop`
// and at the shutdown, not a restart, and no job at all for a kill. When
// systemd cannot say, it answers yes: the processes are then stopped with
// the ladder rather than left to the shutdown's final kill.
func stopPending(log *slog.Logger) bool {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		log.Error("own unit", "error", err)
		return true
	}
	unit := ""
	for _, part := range strings.Split(strings.TrimSpace(string(b)), "/") {
		if strings.HasSuffix(part, ".service") {
			unit = part
		}
	}
	if unit == "" {
		log.Error("own unit: not in a systemd service", "cgroup", strings.TrimSpace(string(b)))
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "systemctl", "list-jobs", "--no-legend", "--plain").Output()
	if err != nil {
		log.Error("systemd's jobs", "unit", unit, "error", err)
		return true
	}
	for _, line := range strings.Split(string(out), "\n") {
		// JOB UNIT TYPE STATE
		if f := strings.Fields(line); len(f) >= 3 && f[1] == unit {
			log.Info("systemd's job on the daemon's unit", "unit", unit, "job", f[2])
			return f[2] == "stop"
		}
	}
	log.Info("no systemd job on the daemon's unit: leaving the processes for the next daemon", "unit", unit)
	return false
}

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

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/backend/systemd"
	"github.com/vigil-bosh/vigil/internal/launch"
	"github.com/vigil-bosh/vigil/job"
)

// defineGenerate is `vigil systemd generate`: the units of every job,
// written into a unit directory idempotently.
func defineGenerate(c *command) func([]string) error {
	out := c.String("out", "/etc/systemd/system", "the unit `DIR`")
	c.completes(completeDir)
	vigil := c.String("vigil", "", "the vigil `BINARY` named in ExecStart (default: this one)")
	c.completes(completeFile)
	asJSON := c.Bool("json", "print what was written and removed as JSON")
	return func(pos []string) error {
		l, err := c.layout()
		if err != nil {
			return err
		}
		if *vigil == "" {
			if *vigil, err = ownBinary(); err != nil {
				return err
			}
		}
		return generate(l, *out, *vigil, *asJSON)
	}
}

func generate(l boshpath.Layout, out, vigil string, asJSON bool) error {
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
	ch, err := systemd.Install(out, systemd.Units(l, jobs, systemd.Options{Vigil: vigil}), keep...)
	if asJSON {
		res := struct {
			Written []string `json:"written"`
			Removed []string `json:"removed"`
		}{[]string{}, []string{}}
		for _, n := range ch.Written {
			res.Written = append(res.Written, filepath.Join(out, n))
		}
		for _, n := range ch.Removed {
			res.Removed = append(res.Removed, filepath.Join(out, n))
		}
		if werr := writeJSON(os.Stdout, res); werr != nil {
			return werr
		}
	} else {
		for _, n := range ch.Written {
			fmt.Println("wrote", filepath.Join(out, n))
		}
		for _, n := range ch.Removed {
			fmt.Println("removed", filepath.Join(out, n))
		}
	}
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		return &exitError{code: exitFailed, err: fmt.Errorf("%d job(s) with configuration errors kept their units", len(errs))}
	}
	return nil
}

// defineExec is `vigil exec JOB PROC`, the ExecStart of a generated unit:
// the process under vigil's init in the foreground, stopped with bpm's
// ladder on TERM or INT.
func defineExec(c *command) func([]string) error {
	return func(pos []string) error {
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
			NoIsolation:  os.Getenv(launch.IsolationEnv) == "off",
			NotifySocket: os.Getenv("NOTIFY_SOCKET"),
			Stdout:       os.Stdout, Stderr: os.Stderr, // the unit's journal
		})
		if err != nil || code != 0 {
			return &exitError{code: code, err: err}
		}
		return nil
	}
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
func chooseBackend(c *command, flag string, booted func() bool, euid int) (string, error) {
	switch strings.ToLower(flag) {
	case "native", "systemd":
		return strings.ToLower(flag), nil
	case "", "auto":
		if booted() && euid == 0 {
			return "systemd", nil
		}
		return "native", nil
	}
	return "", c.usagef("--backend must be native, systemd or auto, got %q", flag)
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

package bpmcli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/launch"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/job"
)

// start starts the process unless it runs already (exit 0 either way). With
// a daemon, the daemon starts and supervises it; without one, a detached
// init runs it, and start returns once the executable runs. Each step goes
// to bpm.log, as bpm logs it.
func (c *cli) start(t target, _ parsed) error {
	log, lock, err := c.begin(t, "start")
	if err != nil {
		return err
	}
	defer lock.Close()
	defer log.info("complete")
	p, err := c.loadLogged(log, t)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if handled, err := c.daemonAct(ctx, control.ActionStart, t); handled {
		if err != nil {
			log.error("failed-to-start", err)
			return fmt.Errorf("failed to start job-process: %w", err)
		}
		return nil
	}
	if it, err := launch.FindInit(c.layout, t.job, t.proc); err == nil {
		it.Close()
		log.info("process-already-running")
		return nil // nothing changes
	}
	if err := c.removeStale(log, t); err != nil {
		return fmt.Errorf("failed to clean up stale job-process: %w", err)
	}
	raiseOpenFiles()
	sp := log.session("start-process")
	sp.info("starting")
	defer sp.info("complete")
	r, release := c.runner(p)
	defer release()
	if _, err := r.StartDetached(ctx); err != nil {
		log.error("failed-to-start", err)
		return fmt.Errorf("failed to start job-process: %w", err)
	}
	return nil
}

// stop stops the process and returns once nothing of it is left. A process
// that is not there is not an error, and its configuration is not read
// (bpm's job-already-stopped). Otherwise a bpm.yml that cannot be parsed,
// or that lacks the process, fails the command as bpm fails it (exit 1,
// bpm's error); unlike bpm, the process is stopped all the same (with
// SIGTERM), so that a broken configuration never leaves it running
// unsupervised.
func (c *cli) stop(t target, _ parsed) error {
	log, lock, err := c.begin(t, "stop")
	if err != nil {
		return err
	}
	defer lock.Close()
	defer log.info("complete")
	ctx := context.Background()
	s, err := c.stateOf(ctx, t)
	if err != nil {
		log.error("failed-to-get-job", err)
		return fmt.Errorf("failed to get job-process status: %w", err)
	}
	sig, cfgErr := unix.SIGTERM, error(nil)
	if s.status == "stopped" {
		log.info("job-already-stopped")
	} else if p, err := c.loadLogged(log, t); err != nil {
		cfgErr = err
	} else {
		sig = p.ShutdownSignal
	}
	if handled, err := c.daemonAct(ctx, control.ActionStop, t); handled && err != nil {
		log.error("failed-to-stop", err)
		return fmt.Errorf("failed to stop job-process: %w", err)
	}
	// With or without a daemon, an init found through the pid file (one a
	// bpm start left running) is stopped too, by the supervisor's own ladder.
	it, err := launch.FindInit(c.layout, t.job, t.proc)
	if err != nil {
		if err := c.removeStale(log, t); err != nil {
			log.error("failed-to-cleanup", err)
			return fmt.Errorf("failed to cleanup job-process: %w", err)
		}
		return cfgErr
	}
	it.Close()
	err = launch.Stop(c.layout, t.job, t.proc, supervise.Timing{StopSignal: sig})
	if err != nil && !errors.Is(err, launch.ErrNoInit) { // one that ended meanwhile is stopped
		log.error("failed-to-stop", err)
		return fmt.Errorf("failed to stop job-process: %w", err)
	}
	return cfgErr
}

// loadLogged is loadProcess with bpm's log line for each failure.
func (c *cli) loadLogged(log *eventLog, t target) (job.Process, error) {
	p, err := c.loadProcess(t)
	var np *notPresentError
	switch {
	case errors.As(err, &np):
		log.error("process-not-defined", err)
	case err != nil:
		log.error("failed-to-parse-config", err)
	}
	return p, err
}

// removeStale removes a pid file that names no live instance, logging it.
func (c *cli) removeStale(log *eventLog, t target) error {
	if _, err := os.Lstat(c.layout.PidFile(t.job, t.proc)); err == nil {
		log.info("removing-stopped-process")
	}
	return launch.RemoveStalePidFile(c.layout, t.job, t.proc)
}

// term starts a stop and returns without waiting for it (container-run's
// extension). It takes the lock itself and hands it to a "bpm stop" left
// running in the background, so that a start issued after term returns
// waits for that stop to finish.
func (c *cli) term(t target, _ parsed) error {
	lock, err := c.lock(t)
	if err != nil {
		return err
	}
	defer lock.Close()
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer devnull.Close()
	cmd := &exec.Cmd{
		Path:        c.env.Self,
		Args:        []string{"bpm", "stop", t.job, "-p", t.proc},
		Env:         []string{lockFDEnv + "=3", "BPM_BOSH_ROOT=" + c.layout.Root(), "PATH=" + c.env.Getenv("PATH")},
		Stdin:       devnull,
		Stdout:      devnull,
		Stderr:      devnull,
		ExtraFiles:  []*os.File{lock},
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("failed to stop job-process: %w", err)
	}
	return cmd.Process.Release()
}

// quit sends SIGQUIT to the process (container-run's extension).
func (c *cli) quit(t target, _ parsed) error {
	ctx := context.Background()
	err := c.client().Signal(ctx, control.SignalRequest{Job: t.job, Process: t.proc, Signal: "QUIT"})
	if err == nil {
		return nil
	}
	if !errors.Is(err, control.ErrNoDaemon) && !errors.Is(err, control.ErrNotFound) && !errors.Is(err, control.ErrFailed) {
		return fmt.Errorf("failed to signal job-process: %w", err)
	}
	it, err := launch.FindInit(c.layout, t.job, t.proc)
	if err != nil {
		return errNotRunning
	}
	defer it.Close()
	if err := it.Signal(unix.SIGQUIT); err != nil {
		return errNotRunning
	}
	return nil
}

// runForeground is bpm run: the process runs in the foreground with no pid
// file, its output goes to the terminal and to the log files, and bpm exits
// with its exit status. The lock is held throughout. Signals that bpm gets
// are passed on to the process.
func (c *cli) runForeground(t target, fl parsed) error {
	log, lock, err := c.begin(t, "run")
	if err != nil {
		return err
	}
	defer lock.Close()
	defer log.info("complete")
	p, err := c.loadLogged(log, t)
	if err != nil {
		return err
	}
	var vols []job.Volume
	for _, v := range fl.list("volume") {
		vol, err := job.ParseVolumeFlag(v)
		if err != nil {
			log.error("invalid-volume-definition", err)
			return err
		}
		vols = append(vols, vol)
	}
	env := map[string]string{}
	for _, e := range fl.list("env") {
		k, v, err := job.ParseEnvFlag(e)
		if err != nil {
			log.error("invalid-environment-definition", err)
			return err
		}
		env[k] = v
	}
	if p, err = p.WithRunOverrides(c.layout, vols, env); err != nil {
		return err
	}
	ctx := context.Background()
	if s, err := c.stateOf(ctx, t); err != nil {
		log.error("failed-getting-job", err)
		return err
	} else if s.status == "running" {
		log.info("process-already-running")
		return nil // bpm runs nothing when the process already runs
	}
	if err := c.removeStale(log, t); err != nil {
		return fmt.Errorf("failed to clean up stale job-process: %w", err)
	}
	rp := log.session("run-process")
	rp.info("starting")
	defer rp.info("complete")
	raiseOpenFiles()
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwardedSignals()...)
	defer signal.Stop(sigs)
	r, release := c.runner(p)
	defer release()
	pr, err := r.StartForeground(ctx, c.env.Stdout, c.env.Stderr)
	if err != nil {
		log.error("failed-to-run", err)
		return fmt.Errorf("failed to run job-process: %w", err)
	}
	for {
		select {
		case s := <-sigs:
			_ = pr.Signal(s.(syscall.Signal))
		case ev, ok := <-pr.Events():
			if !ok {
				return nil
			}
			if !ev.Running {
				return runResult(ev.Exit)
			}
		}
	}
}

// runResult turns the run's exit into bpm's error and exit status.
func runResult(e supervise.Exit) error {
	code := e.Code
	switch {
	case e.Err != "":
		return fmt.Errorf("failed to run job-process: %s", e.Err)
	case e.Signal != 0:
		code = 128 + int(e.Signal)
	case code == 0:
		return nil
	}
	return &exitError{code: code, err: fmt.Errorf("failed to run job-process: exit status %d (exit status %d)", code, code)}
}

// forwardedSignals are passed on by run, logs, shell and trace.
func forwardedSignals() []os.Signal {
	return []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGQUIT, unix.SIGHUP, unix.SIGUSR1, unix.SIGUSR2}
}

// raiseOpenFiles does what bpm's wrapper script does with ulimit -n 524288
// (bpm issue #160), so that processes do not inherit monit's 4096. It is
// best effort: without the privilege the limit stays as it is.
func raiseOpenFiles() {
	want := unix.Rlimit{Cur: 524288, Max: 524288}
	if unix.Setrlimit(unix.RLIMIT_NOFILE, &want) == nil {
		return
	}
	var cur unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &cur) == nil {
		// Go raised its own soft limit at startup but hands children the
		// original one unless the limit is set explicitly.
		cur.Cur = cur.Max
		_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &cur)
	}
}

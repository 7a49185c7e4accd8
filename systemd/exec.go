package systemd

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/job"
	"github.com/vigil-bosh/vigil/proc"
	"github.com/vigil-bosh/vigil/supervise"
)

// ExecConfig configures Exec, the body of `vigil exec JOB PROC`: the
// ExecStart of every generated service.
type ExecConfig struct {
	Layout      boshpath.Layout
	Job, Proc   string
	Init        string   // the binary re-executed as the init; "" means this one
	InitEnv     []string // extra environment for the init (tests)
	NoIsolation bool
	Timing      supervise.Timing // the stop ladder; zero means bpm's
	// Signals delivers the signals systemd sends: TERM or INT (KillSignal)
	// starts the stop ladder; any other is passed on to the executable.
	Signals <-chan os.Signal
	// NotifySocket is systemd's $NOTIFY_SOCKET: with health.notify, the
	// executable notifies vigil's own socket (reachable from its sandbox),
	// and Exec relays READY=1 from there to systemd.
	NotifySocket string
}

// Exec runs one process in the foreground exactly as the native back end
// starts it (the same init, pid file, sandbox and signal contract), except
// that systemd runs hooks.pre_start (ExecStartPre) and owns the cgroup. It
// returns the exit status for `vigil exec`: the executable's code, or
// 128+N when a signal ended it.
func Exec(ctx context.Context, c ExecConfig) (int, error) {
	j, _, err := job.Load(c.Layout, c.Job)
	if err != nil {
		return 1, fmt.Errorf("load job %s: %w", c.Job, err)
	}
	p, ok := j.Process(c.Proc)
	if !ok {
		return 1, fmt.Errorf("process %q not present in job configuration (%s)", c.Proc, j.ConfigPath)
	}
	p.Hooks.PreStart = "" // ExecStartPre ran it
	init := c.Init
	if init == "" {
		if init, err = os.Executable(); err != nil {
			return 1, fmt.Errorf("find own binary for the init: %w", err)
		}
	}
	r := proc.NewRunner(p, proc.Options{Layout: c.Layout, Init: init, InitEnv: c.InitEnv,
		NoIsolation: c.NoIsolation, NoCgroup: true})
	pr, err := r.Start(ctx)
	if err != nil {
		return 1, fmt.Errorf("start %s/%s: %w", c.Job, c.Proc, err)
	}
	ready := func() {}
	if c.NotifySocket != "" {
		ready = func() { _ = sdNotify(c.NotifySocket, "READY=1") }
	}
	return waitExit(pr, c.Signals, c.Timing, ready), nil
}

// readyNotifier is a process that reports its executable's own readiness
// notifications (health.notify): true at READY=1, false when its watchdog
// expired.
type readyNotifier interface{ Ready() <-chan bool }

// sdNotify sends one notification to systemd's socket (a path, or an
// abstract name written with a leading @).
func sdNotify(socket, msg string) error {
	addr := &net.UnixAddr{Name: socket, Net: "unixgram"}
	if strings.HasPrefix(socket, "@") {
		addr.Name = "\x00" + socket[1:]
	}
	c, err := net.DialUnix("unixgram", nil, addr)
	if err != nil {
		return fmt.Errorf("notify systemd: %w", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(msg)); err != nil {
		return fmt.Errorf("notify systemd: %w", err)
	}
	return nil
}

// waitExit relays signals until the process exits; a TERM or INT runs
// bpm's stop ladder: that signal, then SIGQUIT, then the kill of the whole
// tree, then of the init. A process that notifies readiness calls ready at
// its READY=1; an expired watchdog aborts it (SIGABRT, then the ladder), as
// systemd's WatchdogSec would.
func waitExit(pr supervise.Process, sigs <-chan os.Signal, t supervise.Timing, ready func()) int {
	stages := []time.Duration{orDefault(t.StopTimeout, 15*time.Second),
		orDefault(t.QuitTimeout, 2*time.Second), orDefault(t.KillTimeout, 5*time.Second)}
	steps := []func(){
		func() { _ = pr.Signal(syscall.SIGQUIT) },
		func() { _ = pr.Kill() },
		func() { _ = pr.ForceKill() },
	}
	var timer *time.Timer
	var fire <-chan time.Time
	stage := -1
	ladder := func(sig syscall.Signal) {
		_ = pr.Signal(sig)
		if stage < 0 {
			stage = 0
			timer = time.NewTimer(stages[0])
			fire = timer.C
		}
	}
	var notices <-chan bool
	if rn, ok := pr.(readyNotifier); ok {
		notices = rn.Ready()
	}
	for {
		select {
		case ok := <-notices:
			if ok {
				ready()
			} else {
				ladder(syscall.SIGABRT)
			}
		case ev, ok := <-pr.Events():
			if !ok {
				return 1
			}
			if !ev.Running {
				if timer != nil {
					timer.Stop()
				}
				return status(ev.Exit)
			}
		case s := <-sigs:
			sig, _ := s.(syscall.Signal)
			if sig == syscall.SIGTERM || sig == syscall.SIGINT {
				ladder(sig)
			} else {
				_ = pr.Signal(sig)
			}
		case <-fire:
			steps[stage]()
			if stage++; stage < len(stages) {
				timer.Reset(stages[stage])
			} else {
				fire = nil
			}
		}
	}
}

func status(e supervise.Exit) int {
	switch {
	case e.Signal != 0:
		return 128 + int(e.Signal)
	case e.Err != "":
		if e.Code != 0 {
			return e.Code
		}
		return 1
	}
	return e.Code
}

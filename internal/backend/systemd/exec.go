package systemd

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/backend"
	"github.com/vigil-bosh/vigil/internal/initimage"
	"github.com/vigil-bosh/vigil/internal/launch"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/supervise/restart"
	"github.com/vigil-bosh/vigil/job"
)

// ExecConfig configures Exec, the body of `vigil exec JOB PROC`: the
// ExecStart of every generated service.
type ExecConfig struct {
	Layout      boshpath.Layout
	Job, Proc   string
	Init        string   // the program executed as the init; "" means the embedded vigil-init
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
	// Stdout and Stderr, when set, get each line the process writes to its
	// log files (the journal, for a unit); nil copies nothing.
	Stdout, Stderr io.Writer
}

// Exec runs one process in the foreground exactly as the native back end
// starts it (the same init, pid file, sandbox and signal contract), under a
// supervisor of its own that never restarts: systemd restarts the unit. The
// supervisor runs bpm's stop ladder and the process's health probes (a
// liveness failure stops the process, so the unit ends and systemd restarts
// it; readiness is relayed as READY=1). systemd runs hooks.pre_start
// (ExecStartPre) and owns the cgroup. It returns the exit status for `vigil
// exec`: the executable's code, or 128+N when a signal ended it.
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
		prog, err := initimage.Resolve()
		if err != nil {
			return 1, err
		}
		defer prog.Close()
		init = prog.Path
	}
	outLog, errLog := c.Layout.StdoutLog(c.Job, c.Proc), c.Layout.StderrLog(c.Job, c.Proc)
	from := logEnds(outLog, errLog)
	stopRelay := func() {}
	defer func() { stopRelay() }()
	started := func() { stopRelay = relayLogs(outLog, errLog, from, c.Stdout, c.Stderr) }
	r := launch.NewRunner(p, launch.Options{Layout: c.Layout, Init: init, InitEnv: c.InitEnv,
		NoIsolation: c.NoIsolation, NoCgroup: true})
	t, probes := backend.Supervision(p, c.Layout, c.Timing, r.StartInside)
	t.Restart = restart.Policy{Mode: restart.Never} // systemd restarts the unit
	ready := func() {}
	if c.NotifySocket != "" {
		ready = func() { _ = sdNotify(c.NotifySocket, "READY=1") }
	}
	return supervised(ctx, supervise.Config{ID: supervise.ID{Job: c.Job, Process: c.Proc}, Timing: t,
		Runner: r, Probes: probes}, c.Signals, started, ready)
}

// supervised runs one supervisor for cfg until its process has come and
// gone, and returns the exit status. TERM and INT (systemd's KillSignal)
// stop it through the ladder; other signals go to the executable; ready is
// called once the process is ready (running, and its readiness probe or
// notification says so); started once the process runs or has ended (its
// directories exist then).
func supervised(ctx context.Context, cfg supervise.Config, sigs <-chan os.Signal, started, ready func()) (int, error) {
	changes := make(chan supervise.Status, 1)
	cfg.OnChange = func(st supervise.Status) { // keep only the latest; never block
		for {
			select {
			case changes <- st:
				return
			default:
				select {
				case <-changes:
				default:
				}
			}
		}
	}
	sup, end := supervise.Start(cfg)
	defer end()
	if _, err := sup.Send(ctx, supervise.VerbStart); err != nil {
		return 1, fmt.Errorf("start %s: %w", cfg.ID, err)
	}
	readied, begun := false, false
	for {
		select {
		case st := <-changes:
			if !begun && (st.ExecPID != 0 || st.Gen > 0 && (st.State == supervise.Stopped || st.State == supervise.Failed)) {
				begun = true // the start made the process's directories
				started()
			}
			if st.Ready && !readied {
				readied = true
				ready()
			}
			if st.Gen > 0 && (st.State == supervise.Stopped || st.State == supervise.Failed) {
				if st.LastExit == nil {
					return 1, nil
				}
				return status(*st.LastExit), nil
			}
		case s := <-sigs:
			sig, _ := s.(syscall.Signal)
			if sig == syscall.SIGTERM || sig == syscall.SIGINT {
				if _, err := sup.Send(ctx, supervise.VerbStop); err != nil {
					return 1, fmt.Errorf("stop %s: %w", cfg.ID, err)
				}
			} else {
				_ = sup.Signal(ctx, sig)
			}
		}
	}
}

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

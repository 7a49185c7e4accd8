package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend/daemon"
	"github.com/vigil-bosh/vigil/internal/launch"
	"github.com/vigil-bosh/vigil/internal/monit"
)

// runMonit is the monit personality: the binary run under the name "monit"
// (the link vigil install makes at ROOT/bosh/bin/monit), or
// "vigil monit ARGS...". The root comes from --root DIR (taken out of the
// arguments), else $VIGIL_ROOT, else /var/vcap, or from -c
// ROOT/bosh/etc/monitrc. The rest is monit's, with monit's exit statuses.
func runMonit(args []string) int {
	root, args := takeRoot(args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	l, err := boshpath.Resolve(root, os.Getenv, "VIGIL_ROOT")
	if err != nil {
		fmt.Fprintln(os.Stderr, "monit:", err)
		return 1
	}
	client := func() *control.Client { return control.NewClient(l.ControlSocket()) }
	cli := &monit.CLI{
		Root: l.Root(), Stdout: os.Stdout, Stderr: os.Stderr,
		Reload: func(ctx context.Context) error {
			_, err := client().Reload(ctx)
			return err
		},
		Quit: func(ctx context.Context) error {
			st, err := client().Status(ctx)
			if err != nil {
				return err
			}
			if err := syscall.Kill(st.Daemon.PID, syscall.SIGTERM); err != nil {
				return fmt.Errorf("signal the daemon: %w", err)
			}
			return nil
		},
	}
	cli.Daemon = func(root string) int {
		// The stemcell's monit service: jobs outlive the daemon (VM mode),
		// so that the agent's kill and restart of monit does not stop them.
		stop() // the daemon handles its own signals
		dl, err := boshpath.New(root)
		if err == nil {
			err = serveDaemon(daemon.Config{
				Layout: dl, Version: vigilVersion(), LeaveRunning: true,
				Log:         daemonLog(os.Stderr),
				NoIsolation: os.Getenv(launch.IsolationEnv) == "off",
			})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "monit:", err)
			return 1
		}
		return 0
	}
	return cli.Run(ctx, args)
}

// runMonitCommand is `vigil monit`.
func runMonitCommand(args []string) error {
	if code := runMonit(args); code != 0 {
		return &exitError{code: code}
	}
	return nil
}

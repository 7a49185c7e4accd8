package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/control"
)

// defineMonitService is `vigil monit-service`, the one process of the
// stemcell's monit.service beside vigil.service (internal/stemcell). The
// BOSH agent reloads monit with `systemctl kill monit` and `systemctl
// start monit`, then waits for the monit API's incarnation to change: at
// its start this asks the daemon to re-read the control files (a reload,
// which makes a new incarnation), says what changed, and then waits until
// SIGTERM or SIGINT, when it exits 0. Under systemd it tells the unit's
// readiness once the daemon has answered (Type=notify). It never signals or
// stops a job, and the agent's kill reaches it alone. A daemon that does
// not answer yet is waited for, up to --wait; then it fails (systemd
// starts it again).
func defineMonitService(c *command) func([]string) error {
	wait := c.Duration("wait", time.Minute, "how long to wait for the daemon to answer")
	return func(pos []string) error {
		l, err := c.layout()
		if err != nil {
			return err
		}
		return monitService(control.NewClient(l.ControlSocket()), l.ControlSocket(), *wait)
	}
}

// monitService reloads the daemon on sock and then waits for SIGTERM or
// SIGINT (defineMonitService's contract).
func monitService(client *control.Client, sock string, wait time.Duration) error {
	ctx, cancel := interruptible()
	defer cancel()
	res, err := reloadWhenUp(ctx, client, sock, wait)
	switch {
	case ctx.Err() != nil:
		return nil // killed before the daemon answered: nothing to undo
	case errors.Is(err, control.ErrNoDaemon):
		return fmt.Errorf("monit-service: %w", err)
	case err != nil:
		// The daemon answered: it re-read the files (a new incarnation)
		// and reports what did not go well, which status shows too.
		fmt.Fprintln(os.Stderr, "vigil monit-service: the reload reported:", err)
	}
	fmt.Fprintf(os.Stderr, "vigil monit-service: the daemon re-read the control files (%d started, %d stopped, %d restarted, %d unchanged, %d problems)\n",
		len(res.Started), len(res.Stopped), len(res.Restarted), len(res.Unchanged), len(res.Problems))
	if err := notifyReady(os.Getenv("NOTIFY_SOCKET")); err != nil {
		fmt.Fprintln(os.Stderr, "vigil monit-service: tell systemd of the reload:", err)
	}
	<-ctx.Done()
	return nil
}

// notifyReady tells systemd, on its notification socket path (from
// $NOTIFY_SOCKET; "" for none, when it does nothing), that the unit is
// ready: monit.service is Type=notify, so the agent's `systemctl start
// monit` returns once the daemon has re-read the control files, and the
// agent's first read of the monit API finds the new incarnation instead of
// waiting a second for its next one.
func notifyReady(path string) error {
	if path == "" {
		return nil
	}
	// A leading @ names an abstract socket, as systemd writes it and as
	// package net reads it.
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("notify socket %s: %w", path, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("READY=1\nSTATUS=the daemon re-read the control files\n")); err != nil {
		return fmt.Errorf("notify socket %s: %w", path, err)
	}
	return nil
}

// reloadWhenUp asks the daemon on sock to reload, waiting up to wait for
// one to answer: it tries again whenever something is created in the
// socket's directory, and each second (a socket bound but not yet
// listening refuses, and no event follows). It ends early with ctx.
func reloadWhenUp(ctx context.Context, client *control.Client, sock string, wait time.Duration) (control.ReloadResult, error) {
	deadline := time.Now().Add(wait)
	dir := filepath.Dir(sock)
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return control.ReloadResult{}, fmt.Errorf("monit-service: inotify: %w", err)
	}
	defer unix.Close(fd)
	watched := false
	said := false
	for {
		if !watched { // set up before each try, so that no creation is missed
			if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_MOVED_TO); err == nil {
				watched = true
			}
		}
		res, err := client.Reload(ctx)
		left := time.Until(deadline)
		if !errors.Is(err, control.ErrNoDaemon) || ctx.Err() != nil || left <= 0 {
			return res, err
		}
		if !said {
			fmt.Fprintf(os.Stderr, "vigil monit-service: waiting up to %s for the daemon on %s\n", wait, sock)
			said = true
		}
		awaitEvent(ctx, fd, min(left, time.Second))
	}
}

// awaitEvent returns when fd has an event to read (and drains it), or
// after d (a second at most: a signal ending ctx is seen by then).
func awaitEvent(ctx context.Context, fd int, d time.Duration) {
	if ctx.Err() != nil {
		return
	}
	n, _ := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(d.Milliseconds()))
	if n > 0 {
		buf := make([]byte, 4096)
		for {
			if k, err := unix.Read(fd, buf); k <= 0 || err != nil {
				break
			}
		}
	}
}

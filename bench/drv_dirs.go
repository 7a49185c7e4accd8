package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// serviceDirs writes one service directory with a run script per child
// under root and returns their paths in order.
func serviceDirs(s spec, root string) ([]string, error) {
	dirs := make([]string, s.N)
	for i := range s.N {
		dirs[i] = filepath.Join(root, s.name(i))
		if err := writeFile(filepath.Join(dirs[i], "run"), runScript(s, i), 0o755); err != nil {
			return nil, err
		}
	}
	return dirs, nil
}

// scanDir is a directory of service directories, one per child, as
// runit, s6 and daemontools scan them.
type scanDir struct {
	root string
	dirs []string
}

// lay writes the service directories under s.Dir/sub.
func (d *scanDir) lay(s spec, sub string) error {
	d.root = filepath.Join(s.Dir, sub)
	dirs, err := serviceDirs(s, d.root)
	d.dirs = dirs
	return err
}

// runitDriver runs runsvdir -P over one service directory per child.
type runitDriver struct{ scanDir }

func (d *runitDriver) Setup(s spec) error { return d.lay(s, "sv") }

func (d *runitDriver) Command() *exec.Cmd { return exec.Command("runsvdir", "-P", d.root) }

func (d *runitDriver) Status(ctx context.Context) (time.Duration, error) {
	_, took, err := timed(ctx, 30*time.Second, "sv", append([]string{"status"}, d.dirs...)...)
	return took, err
}

// StopAll runs sv -w 30 stop over every directory. sv exits non-zero when
// a service did not stop in time; runsv never escalates to KILL, so that is
// an expected outcome with a TERM-ignoring child, not a harness error.
func (d *runitDriver) StopAll(ctx context.Context) error {
	err := run(ctx, 60*time.Second, "sv", append([]string{"-w", "30", "stop"}, d.dirs...)...)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return nil
	}
	return err
}

// Shutdown sends SIGHUP: runsvdir then TERMs every runsv and exits (SIGTERM
// would leave the services running).
func (d *runitDriver) Shutdown(_ context.Context, pid int) error {
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		return fmt.Errorf("signal runsvdir: %w", err)
	}
	return nil
}

func (d *runitDriver) StopNote() string {
	return "`sv -w 30 stop` sends TERM+CONT and waits up to 30 s; runsv never sends KILL (only `sv force-stop` would)"
}

// s6Driver runs s6-svscan over one service directory per child.
type s6Driver struct{ scanDir }

// s6DefaultMax is s6-svscan's default limit on services in s6 2.11; above
// it the harness raises the limit with -c, since s6-svscan would otherwise
// refuse the rest ("too many services").
const s6DefaultMax = 500

func (d *s6Driver) Setup(s spec) error { return d.lay(s, "scan") }

func (d *s6Driver) Command() *exec.Cmd {
	if len(d.dirs) > s6DefaultMax {
		return exec.Command("s6-svscan", "-c", fmt.Sprint(2*len(d.dirs)), d.root)
	}
	return exec.Command("s6-svscan", d.root)
}

// Status runs s6-svstat once per service directory (it takes only one).
func (d *s6Driver) Status(ctx context.Context) (time.Duration, error) {
	var all time.Duration
	for _, dir := range d.dirs {
		_, took, err := timed(ctx, 30*time.Second, "s6-svstat", dir)
		all += took
		if err != nil {
			return all, err
		}
	}
	return all, nil
}

// StopAll runs s6-svc -d on each directory; it returns at once.
func (d *s6Driver) StopAll(ctx context.Context) error {
	for _, dir := range d.dirs {
		if err := run(ctx, 30*time.Second, "s6-svc", "-d", dir); err != nil {
			return err
		}
	}
	return nil
}

func (d *s6Driver) Shutdown(_ context.Context, pid int) error {
	return terminate(pid, "s6-svscan")
}

func (d *s6Driver) StopNote() string {
	return "`s6-svc -d` sends TERM+CONT and returns at once; without a timeout-kill file s6-supervise never sends KILL"
}

func (d *runitDriver) Paced() bool { return false }

func (d *s6Driver) Paced() bool { return false }

// daemontoolsDriver runs svscan over one service directory per child
// (daemontools 0.76: one supervise per service, as runit and s6 do).
type daemontoolsDriver struct{ scanDir }

func (d *daemontoolsDriver) Setup(s spec) error { return d.lay(s, "service") }

func (d *daemontoolsDriver) Command() *exec.Cmd { return exec.Command("svscan", d.root) }

// Status runs svstat once over every directory (it takes many).
func (d *daemontoolsDriver) Status(ctx context.Context) (time.Duration, error) {
	_, took, err := timed(ctx, 30*time.Second, "svstat", d.dirs...)
	return took, err
}

// StopAll runs svc -d over every directory; it returns at once.
func (d *daemontoolsDriver) StopAll(ctx context.Context) error {
	return run(ctx, 30*time.Second, "svc", append([]string{"-d"}, d.dirs...)...)
}

// Shutdown sends SIGTERM, which ends svscan (it has no handler); the
// supervise processes are in its process group, which the teardown kills.
func (d *daemontoolsDriver) Shutdown(_ context.Context, pid int) error {
	return terminate(pid, "svscan")
}

func (d *daemontoolsDriver) StopNote() string {
	return "`svc -d` sends TERM+CONT and returns at once; supervise never sends KILL"
}

func (d *daemontoolsDriver) Paced() bool { return false }

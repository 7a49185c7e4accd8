package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Entry is the way into the confinement of a running process, for what
// runc exec gives bpm (bpm shell, exec health probes): its mount, IPC, UTS
// and PID namespaces (so its root of bind mounts and its processes), and
// its user and group. A process in the caller's namespaces that runs as
// another user (isolation: host) is entered by its user and group alone.
// It holds the process by a pidfd, so a recycled pid is never entered.
// Close releases it.
//
// A command started through an Entry does not get the process's seccomp
// filter, no_new_privs or cgroup; it has no capabilities unless it runs as
// root (a privileged process), as the user change clears them.
type Entry struct {
	pid      int
	pidfd    int
	uid, gid uint32
	join     bool // the process has namespaces of its own, which Start joins
}

// nsKinds are the namespaces an Entry joins.
const nsKinds = unix.CLONE_NEWNS | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWPID

// Enter opens the way into the confinement of the process pid. It returns
// nil and no error when pid shares the caller's mount namespace and runs
// as the caller's real user and group (nothing to enter: not isolated).
func Enter(pid int) (*Entry, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("open process %d: %w", pid, err)
	}
	e := &Entry{pid: pid, pidfd: fd}
	same, err := sameMountNS(pid)
	if err == nil {
		e.uid, e.gid, err = owner(pid)
	}
	// Whatever was read belongs to pid only if it was still alive after.
	if err == nil {
		if err = unix.PidfdSendSignal(fd, 0, nil, 0); err != nil {
			err = fmt.Errorf("process %d: %w", pid, err)
		}
	}
	e.join = !same
	if err != nil || same && int(e.uid) == os.Getuid() && int(e.gid) == os.Getgid() {
		unix.Close(fd)
		return nil, err
	}
	return e, nil
}

// Joins reports whether commands start in namespaces of the process's
// own (a sandbox), rather than the caller's.
func (e *Entry) Joins() bool { return e.join }

// Close releases the process.
func (e *Entry) Close() error { return unix.Close(e.pidfd) }

// Start starts cmd inside the confinement, as the process's user and group
// with no supplementary groups. cmd.Path may be a bare name: it is looked
// up as execvp would in the PATH of cmd.Env inside the process's root;
// cmd.Dir is taken inside too. The caller waits for cmd as usual.
//
// The namespaces are joined by one OS thread that forks cmd and is then
// discarded (it is never unlocked, so it ends with its goroutine): the
// calling program itself stays where it is. That thread is never the
// main one (see startOnThread).
func (e *Entry) Start(cmd *exec.Cmd) error {
	if !strings.Contains(cmd.Path, "/") {
		path, err := e.lookPath(cmd.Path, cmd.Env)
		if err != nil {
			return err
		}
		cmd.Path = path
	}
	attr := cmd.SysProcAttr
	if attr == nil {
		attr = &syscall.SysProcAttr{}
	}
	attr.Credential = &syscall.Credential{Uid: e.uid, Gid: e.gid, Groups: []uint32{}}
	cmd.SysProcAttr = attr
	if !e.join {
		return cmd.Start()
	}
	done := make(chan error, 1)
	go e.startOnThread(cmd, done)
	return <-done
}

// startOnThread locks the calling goroutine to its thread, joins the
// namespaces there and starts cmd, sending the outcome to done; the
// thread is never unlocked, so the runtime ends it with the goroutine.
// Except the main thread: Go keeps that one (wedged, unused) when its
// goroutine ends locked, and the process's /proc/self (its mount table,
// which the cgroups are found in; its namespaces) is the main thread's,
// so it would show the sandbox's from then on: the daemon would find no
// cgroup hierarchy for the starts that follow. On the main thread, it
// holds the thread and does the work from a new goroutine, which the
// runtime must run on another thread meanwhile.
func (e *Entry) startOnThread(cmd *exec.Cmd, done chan<- error) {
	runtime.LockOSThread() // never unlocked past the namespace change
	if unix.Gettid() == unix.Getpid() {
		elsewhere := make(chan error, 1)
		go e.startOnThread(cmd, elsewhere)
		err := <-elsewhere
		runtime.UnlockOSThread() // its namespaces are untouched
		done <- err
		return
	}
	// A thread can change its mount namespace only once it no longer
	// shares its root and working directory with the others.
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		done <- fmt.Errorf("enter process %d: unshare: %w", e.pid, err)
		return
	}
	if err := unix.Setns(e.pidfd, nsKinds); err != nil {
		done <- fmt.Errorf("enter process %d: setns: %w", e.pid, err)
		return
	}
	done <- cmd.Start()
}

// lookPath finds name as execvp would in env's PATH, in the process's root
// (seen from here through /proc/PID/root). Relative PATH entries are
// skipped.
func (e *Entry) lookPath(name string, env []string) (string, error) {
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	root := fmt.Sprintf("/proc/%d/root", e.pid)
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(filepath.Join(root, p)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec %q: %w", name, exec.ErrNotFound)
}

// sameMountNS reports whether pid is in the caller's mount namespace.
func sameMountNS(pid int) (bool, error) {
	theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid))
	if err != nil {
		return false, err
	}
	ours, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return false, err
	}
	return theirs == ours, nil
}

// owner returns the real uid and gid of pid, from /proc/PID/status.
func owner(pid int) (uid, gid uint32, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	var found int
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || (f[0] != "Uid:" && f[0] != "Gid:") {
			continue
		}
		var n uint32
		if _, err := fmt.Sscan(f[1], &n); err != nil {
			return 0, 0, fmt.Errorf("process %d: %s %q: %w", pid, f[0], f[1], err)
		}
		if f[0] == "Uid:" {
			uid = n
		} else {
			gid = n
		}
		found++
	}
	if found != 2 {
		return 0, 0, errors.New("process " + fmt.Sprint(pid) + ": no Uid or Gid in its status")
	}
	return uid, gid, nil
}

package launch

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/launch/procinit"
	"github.com/vigil-bosh/vigil/internal/pidfile"
)

// ErrNoInit means that no live vigil init runs for a process: its pid file
// is missing, or names a process that has exited or is something else.
var ErrNoInit = errors.New("no vigil init runs for the process")

// Init is a live vigil init found through its pid file, whoever started it
// (a daemon or a detached bpm start). It is held by a pidfd, so a signal
// never reaches another process that has since taken the pid. Close it.
type Init struct {
	PID     int
	fd      int
	pidPath string
}

// FindInit opens the init that ROOT/sys/run/bpm/JOB/PROC.pid names, after
// checking that the process is alive and is the vigil init its starter
// recorded for JOB/PROC (see initRecord: owned by root, started at the
// recorded time, executing the recorded binary) with the command line of
// one ("BINARY init JOB/PROC"). Otherwise it returns an error matching
// ErrNoInit: a process another user placed at the pid is never taken for
// the init, nor signalled.
func FindInit(l boshpath.Layout, jobName, procName string) (*Init, error) {
	path := l.PidFile(jobName, procName)
	pid, err := pidfile.Read(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoInit, err)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: pid %d: %w", ErrNoInit, pid, err)
	}
	it := &Init{PID: pid, fd: fd, pidPath: path}
	// The pidfd pins the identity: what is read of /proc/PID while the
	// pidfd's process is still alive afterwards is that process's.
	verr := verifyInit(pid, l.InitRecord(jobName, procName))
	if verr == nil && !isInitFor(pid, jobName+"/"+procName, l.StdoutLog(jobName, procName)) {
		verr = errors.New("its command line is not an init's for the process")
	}
	if verr == nil && it.exited() {
		verr = errors.New("it has exited")
	}
	if verr != nil {
		it.Close()
		return nil, fmt.Errorf("%w: pid %d in %s is not a live vigil init for %s/%s: %w", ErrNoInit, pid, path, jobName, procName, verr)
	}
	return it, nil
}

// RemoveStalePidFile deletes the pid file of JOB/PROC if it names no live
// init for that process. Call it while holding the process's lock.
func RemoveStalePidFile(l boshpath.Layout, jobName, procName string) error {
	path := l.PidFile(jobName, procName)
	before, err := os.ReadFile(path)
	if err != nil {
		return nil // nothing there (or nothing we could read and judge)
	}
	it, err := FindInit(l, jobName, procName)
	if err == nil {
		it.Close()
		return nil
	}
	// Leave a file that changed meanwhile: a new instance wrote it.
	if now, err := os.ReadFile(path); err != nil || !bytes.Equal(now, before) {
		return nil
	}
	return pidfile.Remove(path)
}

// isInitFor reports whether pid is the init for label: its command line is
// "BINARY init LABEL", or, for an init the daemon's pool started before its
// process was known, "BINARY init" with stdout open on the process's log.
func isInitFor(pid int, label, stdoutLog string) bool {
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	b, err := os.ReadFile(filepath.Join(proc, "cmdline"))
	if err != nil {
		return false
	}
	args := strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00")
	switch {
	case len(args) >= 3 && args[1] == "init":
		return args[2] == label
	case len(args) == 2 && args[1] == "init":
		out, err := os.Readlink(filepath.Join(proc, "fd", "1"))
		return err == nil && out == stdoutLog
	}
	return false
}

// Close releases the pidfd.
func (it *Init) Close() { unix.Close(it.fd) }

// Signal sends sig to the init, which forwards it to the executable. An
// init that has exited gives an error matching ErrNoInit.
func (it *Init) Signal(sig syscall.Signal) error {
	err := unix.PidfdSendSignal(it.fd, sig, nil, 0)
	if errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("%w: pid %d has exited", ErrNoInit, it.PID)
	}
	return err
}

// Wait waits up to d for the init to exit and reports whether it has.
func (it *Init) Wait(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left < 0 {
			left = 0
		}
		fds := []unix.PollFd{{Fd: int32(it.fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int((left+time.Millisecond-1)/time.Millisecond))
		switch {
		case n > 0:
			return true
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil || left == 0:
			return false
		}
	}
}

func (it *Init) exited() bool { return it.Wait(0) }

// waitInPoller blocks until the init has exited, waiting in the runtime's
// network poller (a pidfd turns readable at the exit) rather than in a
// thread of its own, so that many adopted inits cost no threads.
func (it *Init) waitInPoller() error {
	dup, err := unix.FcntlInt(uintptr(it.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("wait for init %d: %w", it.PID, err)
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return fmt.Errorf("wait for init %d: %w", it.PID, err)
	}
	f := os.NewFile(uintptr(dup), "pidfd") // non-blocking: registered with the poller
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("wait for init %d: %w", it.PID, err)
	}
	return rc.Read(func(uintptr) bool { return it.exited() })
}

// killChildren sends SIGKILL to each direct child of the init (the
// executable, a running hook, adopted orphans), each through a pidfd taken
// while it is still the init's child. The init reaps them, kills whatever
// else is left below it and exits.
func (it *Init) killChildren() {
	for _, child := range procinit.ChildrenOf(it.PID) {
		fd, err := unix.PidfdOpen(child, 0)
		if err != nil {
			continue
		}
		if ppid, ok := procinit.ParentOf(child); ok && ppid == it.PID {
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
		unix.Close(fd)
	}
}

// removePidFile deletes the pid file if it still names this init, which
// has exited (it removes the file itself unless it was killed outright).
func (it *Init) removePidFile() {
	if !it.exited() {
		return
	}
	_ = pidfile.RemoveIf(it.pidPath, it.PID)
}

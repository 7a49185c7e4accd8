package procinit

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// keptCaps are the capabilities the init still needs once the executable
// runs. CAP_KILL: the executable and its tree run as the job's user, and
// the init signals them, kills what is left of them in its PID namespace
// and in the cgroup. CAP_DAC_OVERRIDE: the job's user owns the log
// directory, where the init reopens and rotates the logs. Everything else
// it does as the owner of root's files (the pid file, the exit record, the
// cgroup directories), which it stays: it keeps uid 0.
const keptCaps = 1<<unix.CAP_KILL | 1<<unix.CAP_DAC_OVERRIDE

// errNoAllThreads: a binary built with cgo cannot change every thread's
// capabilities (syscall.AllThreadsSyscall refuses), so the init keeps
// them; vigil's release build has no cgo.
var errNoAllThreads = errors.New("this binary is built with cgo, which cannot change every thread's capabilities")

// dropCapabilities leaves the init, on every one of its threads, with
// keptCaps alone in the bounding set (so that nothing can regain the rest)
// and as permitted, and none effective, inheritable or ambient: a thread
// makes them effective only for one act that needs them (capState.do). It
// is called once the executable runs, when the init has no more
// namespaces, mounts or identities to set up. Without root it does
// nothing (it holds no capability) and reports false.
func dropCapabilities() (bool, error) {
	if os.Geteuid() != 0 {
		return false, nil
	}
	// The bounding set first: dropping from it needs CAP_SETPCAP, which
	// the capset below gives up.
	if err := boundAllThreads(keptCaps); err != nil {
		return false, err
	}
	if _, _, e := syscall.AllThreadsSyscall6(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0, 0); e != 0 {
		return false, fmt.Errorf("clear the ambient capabilities: %w", e)
	}
	if err := setAllThreads(0); err != nil {
		return false, err
	}
	return true, nil
}

// boundAllThreads drops every capability not in keep from the bounding
// set of every thread of the init.
func boundAllThreads(keep uint64) error {
	for c := uintptr(0); c < 64; c++ {
		if keep&(1<<c) != 0 {
			continue
		}
		_, _, e := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, c, 0)
		switch {
		case e == syscall.ENOTSUP:
			return errNoAllThreads
		case e == syscall.EINVAL:
			return nil // past the kernel's last capability
		case e != 0:
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, e)
		}
	}
	return nil
}

// setAllThreads makes keptCaps permitted and effect effective on every
// thread of the init.
func setAllThreads(effect uint32) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := [2]unix.CapUserData{{Effective: effect, Permitted: keptCaps}}
	_, _, e := syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
	runtime.KeepAlive(&hdr)
	runtime.KeepAlive(&data)
	if e != 0 {
		return fmt.Errorf("set the capabilities: %w", e)
	}
	return nil
}

// capState says whether the init's capabilities are permitted only
// (dropCapabilities), so that an act that needs them raises them on its
// own thread for its duration. The zero value means they are effective
// (not dropped, or restored), as does a nil one: do then just runs the
// act. Safe for concurrent use: restore waits for the acts in flight, so
// that no thread lowers its capabilities again after it.
type capState struct {
	mu      sync.RWMutex // held shared by each act, exclusively to change lowered
	lowered bool
}

// lower records that dropCapabilities left the capabilities permitted
// only.
func (s *capState) lower() {
	s.mu.Lock()
	s.lowered = true
	s.mu.Unlock()
}

// do runs act with keptCaps effective on the calling thread alone, the
// goroutine locked to it meanwhile (a thread the runtime starts from a
// locked one comes from its template thread, which holds none). A thread
// that cannot lower them again stays locked to its goroutine, so that no
// other goroutine runs with them, and the runtime ends it with the
// goroutine.
func (s *capState) do(act func()) {
	if s == nil {
		act()
		return
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.lowered {
		act()
		return
	}
	runtime.LockOSThread()
	raised := setThread(keptCaps) == nil
	act()
	if raised && setThread(0) != nil {
		return
	}
	runtime.UnlockOSThread()
}

// restore makes keptCaps effective on every thread again, for the end of
// the init's life (the last kills, the cgroup's removal, the exit record),
// once the acts in flight are done.
func (s *capState) restore() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.lowered {
		return nil
	}
	if err := setAllThreads(keptCaps); err != nil {
		return err
	}
	s.lowered = false
	return nil
}

// setThread makes keptCaps permitted and effect effective on the calling
// thread.
func setThread(effect uint32) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := [2]unix.CapUserData{{Effective: effect, Permitted: keptCaps}}
	return unix.Capset(&hdr, &data[0])
}

package procinit

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// holdPrivileged leaves the init of a privileged process, on every one of
// its threads, with caps (its executable's, Launch.InitCaps) and nothing
// else in each of its sets, ambient included, all effective: what bpm's
// init (tini) holds in a privileged container, so that /proc/1/status
// reads the same inside both. The capabilities stay effective, as the
// executable's own do: they are no more than what the executable holds,
// and include keptCaps wherever vigil has them. Without root it does
// nothing.
func holdPrivileged(caps []int) error {
	if os.Geteuid() != 0 {
		return nil
	}
	var mask uint64
	for _, c := range caps {
		if c >= 0 && c < 64 {
			mask |= 1 << uint(c)
		}
	}
	if err := boundAllThreads(mask); err != nil {
		return err
	}
	lo, hi := uint32(mask), uint32(mask>>32)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := [2]unix.CapUserData{{Effective: lo, Permitted: lo, Inheritable: lo}, {Effective: hi, Permitted: hi, Inheritable: hi}}
	_, _, e := syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
	runtime.KeepAlive(&hdr)
	runtime.KeepAlive(&data)
	if e != 0 {
		return fmt.Errorf("set the capabilities: %w", e)
	}
	if _, _, e := syscall.AllThreadsSyscall6(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0, 0); e != 0 {
		return fmt.Errorf("clear the ambient capabilities: %w", e)
	}
	for c := uintptr(0); c < 64; c++ {
		if mask&(1<<c) == 0 {
			continue
		}
		if _, _, e := syscall.AllThreadsSyscall6(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, c, 0, 0, 0); e != 0 {
			return fmt.Errorf("raise ambient capability %d: %w", c, e)
		}
	}
	return nil
}

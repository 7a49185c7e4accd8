package sandbox

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/sandbox/seccomp"
)

// CloneFlags are the namespaces the helper is created in. The PID namespace
// is the init's (the init is its PID 1); there is no network namespace, as
// in bpm.
const CloneFlags = unix.CLONE_NEWNS | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS

// Exec is the helper's whole life: it reads a Spec from specFD, writes
// "pid N" (its pid as the host sees it) to statusFD, confines itself and
// execs the executable. It returns only when that fails, after writing
// "error MESSAGE" to statusFD, with the exit code to use. A successful exec
// closes statusFD (it is close-on-exec), which tells the init it worked.
func Exec(specFD, statusFD int) int {
	// Every step from here on changes this thread (its credentials, its
	// seccomp filter) and the exec happens from it.
	runtime.LockOSThread()
	unix.CloseOnExec(specFD)
	unix.CloseOnExec(statusFD)
	status := os.NewFile(uintptr(statusFD), "status")
	fail := func(err error) int {
		fmt.Fprintf(status, "error %v\n", err)
		return 127
	}
	data, err := io.ReadAll(os.NewFile(uintptr(specFD), "spec")) // the init closes its end once the spec is written
	if err != nil {
		return fail(fmt.Errorf("read sandbox spec: %w", err))
	}
	s, err := DecodeSpec(data)
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(status, "pid %d\n", HostPID())
	if err := confine(&s); err != nil {
		return fail(err)
	}
	err = unix.Exec(s.Path, s.Args, s.Env)
	return fail(fmt.Errorf("exec %s: %w", s.Path, err))
}

// HostPID is the calling process's pid in the PID namespace of the mounted
// /proc: the host's pid for a process in a child PID namespace that still
// sees the host's /proc. It falls back to getpid.
func HostPID() int {
	if link, err := os.Readlink("/proc/self"); err == nil {
		if pid, err := strconv.Atoi(link); err == nil {
			return pid
		}
	}
	return os.Getpid()
}

func confine(s *Spec) error {
	for _, dir := range s.Cgroups {
		if err := os.WriteFile(dir+"/cgroup.procs", []byte("0"), 0); err != nil {
			return fmt.Errorf("join cgroup %s: %w", dir, err)
		}
	}
	lastCap := lastCapability()
	if !s.Host {
		if err := buildRoot(s); err != nil {
			return err
		}
	}
	if err := os.Chdir(s.Dir); err != nil {
		return fmt.Errorf("workdir: %w", err)
	}
	for _, r := range s.Rlimits {
		// syscall's Setrlimit, so that exec does not restore the runtime's
		// own NOFILE soft limit over ours.
		if err := syscall.Setrlimit(r.Resource, &syscall.Rlimit{Cur: r.Cur, Max: r.Max}); err != nil {
			return fmt.Errorf("setrlimit %d: %w", r.Resource, err)
		}
	}
	if err := dropPrivileges(s, lastCap); err != nil {
		return err
	}
	if s.Seccomp {
		if err := seccomp.Install(); err != nil {
			return fmt.Errorf("seccomp: %w", err)
		}
	}
	return nil
}

func lastCapability() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err == nil {
		if n, err := strconv.Atoi(string(b[:len(b)-1])); err == nil {
			return n
		}
	}
	return 40
}

// dropPrivileges switches this thread to the spec's identity, keeping only
// the listed capabilities, in every set. The raw calls change this thread
// only, which is all that matters: the exec comes from it.
func dropPrivileges(s *Spec, lastCap int) error {
	keep := map[int]bool{}
	for _, c := range s.Caps {
		keep[c] = true
	}
	for c := 0; c <= lastCap; c++ {
		if !keep[c] {
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
				return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
			}
		}
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
		return fmt.Errorf("setgroups: %w", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(s.GID), uintptr(s.GID), uintptr(s.GID)); e != 0 {
		return fmt.Errorf("setgid %d: %w", s.GID, e)
	}
	if err := unix.Prctl(unix.PR_SET_KEEPCAPS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("keep capabilities: %w", err)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(s.UID), uintptr(s.UID), uintptr(s.UID)); e != 0 {
		return fmt.Errorf("setuid %d: %w", s.UID, e)
	}
	var data [2]unix.CapUserData
	for _, c := range s.Caps {
		bit := uint32(1) << (uint(c) % 32)
		data[c/32].Effective |= bit
		data[c/32].Permitted |= bit
		data[c/32].Inheritable |= bit
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	for _, c := range s.Caps {
		if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, uintptr(c), 0, 0); err != nil {
			return fmt.Errorf("raise ambient capability %d: %w", c, err)
		}
	}
	// A change of credentials clears the parent-death signal.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("parent-death signal: %w", err)
	}
	if s.NoNewPrivs {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("no_new_privs: %w", err)
		}
	}
	return nil
}

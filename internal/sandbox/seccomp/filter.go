// Package seccomp builds and installs vigil's system-call filter: an
// allowlist in the spirit of bpm's (derived from Garden's), written as a
// classic BPF program in pure Go, for amd64 and arm64.
//
// It differs from bpm's where bpm breaks current glibc: the filter answers
// ENOSYS, not EPERM, for clone3 and for every system call newer than the
// ones it knows, so that glibc falls back to the older call; and it allows
// rseq, faccessat2, close_range, epoll_pwait2, fchmodat2, membarrier,
// futex_waitv, pidfd_open and pidfd_send_signal (no more than kill(2) can
// do) and the other calls listed in allow.txt. pidfd_getfd is refused, as
// in bpm: it takes a copy of another process's descriptor. Everything else
// it knows (mount, unshare, setns, ptrace, process_vm_readv, bpf,
// perf_event_open, kexec, module loading, keyctl, ustat, syslog...) fails
// with EPERM, as in bpm. clone is allowed only without namespace flags, and
// personality only for PER_LINUX, PER_LINUX32 and the query value. Every
// difference from bpm's list, call by call, is in SECURITY.md.
package seccomp

//go:generate sh gen.sh

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// newest is the highest system call number the allowlist was reviewed
// against (rseq_slice_yield). Numbers above it answer ENOSYS.
const newest = 471

// Return values.
const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retNOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// Offsets in struct seccomp_data (little-endian on both architectures).
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16 // low 32 bits of the first argument
)

// namespaceFlags are clone's flags that create namespaces.
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
	unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP

// BPF opcodes.
const (
	ldAbs = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	jgt   = unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K
	jset  = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	ret   = unix.BPF_RET | unix.BPF_K
)

func stmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }

func jump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

// Program returns the filter for the architecture vigil was built for.
func Program() []unix.SockFilter {
	p := []unix.SockFilter{
		stmt(ldAbs, offArch),
		jump(jeq, auditArch, 1, 0),
		stmt(ret, retEPERM), // another ABI (e.g. i386 on amd64)
		stmt(ldAbs, offNr),
	}
	if hasX32 {
		p = append(p, jump(jgt, x32Limit, 0, 1), stmt(ret, retEPERM))
	}
	p = append(p,
		// clone3 cannot be inspected (its flags are in memory): glibc
		// falls back to clone on ENOSYS.
		jump(jeq, unix.SYS_CLONE3, 0, 1), stmt(ret, retNOSYS),
		// clone without namespace flags only.
		jump(jeq, unix.SYS_CLONE, 0, 4), stmt(ldAbs, offArg0),
		jump(jset, namespaceFlags, 0, 1), stmt(ret, retEPERM), stmt(ret, retAllow),
		// personality: PER_LINUX, PER_LINUX32 or the query.
		jump(jeq, unix.SYS_PERSONALITY, 0, 6), stmt(ldAbs, offArg0),
		jump(jeq, 0, 3, 0), jump(jeq, 8, 2, 0), jump(jeq, 0xffffffff, 1, 0),
		stmt(ret, retEPERM), stmt(ret, retAllow),
	)
	for _, nr := range allowed() {
		p = append(p, jump(jeq, nr, 0, 1), stmt(ret, retAllow))
	}
	return append(p, jump(jgt, newest, 0, 1), stmt(ret, retNOSYS), stmt(ret, retEPERM))
}

// Install applies the filter to the calling thread, which must already have
// no_new_privs set (or CAP_SYS_ADMIN). It is inherited across fork and exec.
// The caller must keep the goroutine locked to its thread until it execs.
func Install() error {
	prog := Program()
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("install filter: %w", err)
	}
	return nil
}

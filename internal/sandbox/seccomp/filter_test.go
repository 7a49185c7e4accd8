package seccomp

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// run interprets the subset of classic BPF the filter uses against one
// seccomp_data record.
func run(t *testing.T, prog []unix.SockFilter, arch, nr uint32, arg0 uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[offNr:], nr)
	binary.LittleEndian.PutUint32(data[offArch:], arch)
	binary.LittleEndian.PutUint64(data[offArg0:], arg0)
	var a uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case ldAbs:
			a = binary.LittleEndian.Uint32(data[in.K:])
		case ret:
			return in.K
		case jeq, jgt, jset:
			var taken bool
			switch in.Code {
			case jeq:
				taken = a == in.K
			case jgt:
				taken = a > in.K
			default:
				taken = a&in.K != 0
			}
			if taken {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		default:
			t.Fatalf("unexpected opcode %#x at %d", in.Code, pc)
		}
	}
	t.Fatal("fell off the end of the program")
	return 0
}

func TestProgram(t *testing.T) {
	prog := Program()
	if len(prog) > 4096 {
		t.Fatalf("program of %d instructions is too long", len(prog))
	}
	tests := []struct {
		name string
		arch uint32
		nr   uint32
		arg0 uint64
		want uint32
	}{
		{"read", auditArch, unix.SYS_READ, 0, retAllow},
		{"rseq", auditArch, unix.SYS_RSEQ, 0, retAllow},
		{"faccessat2", auditArch, unix.SYS_FACCESSAT2, 0, retAllow},
		{"close_range", auditArch, unix.SYS_CLOSE_RANGE, 0, retAllow},
		{"epoll_pwait2", auditArch, unix.SYS_EPOLL_PWAIT2, 0, retAllow},
		{"statx", auditArch, unix.SYS_STATX, 0, retAllow},
		{"openat2", auditArch, unix.SYS_OPENAT2, 0, retAllow},
		{"clone3", auditArch, unix.SYS_CLONE3, 0, retNOSYS},
		{"newer than known", auditArch, newest + 1, 0, retNOSYS},
		{"clone for a thread", auditArch, unix.SYS_CLONE, unix.CLONE_VM | unix.CLONE_THREAD, retAllow},
		{"clone with a namespace", auditArch, unix.SYS_CLONE, unix.CLONE_NEWNS, retEPERM},
		{"clone high bits ignored", auditArch, unix.SYS_CLONE, 1 << 40, retAllow},
		{"personality query", auditArch, unix.SYS_PERSONALITY, 0xffffffff, retAllow},
		{"personality other", auditArch, unix.SYS_PERSONALITY, 0x0040000, retEPERM},
		{"mount", auditArch, unix.SYS_MOUNT, 0, retEPERM},
		{"unshare", auditArch, unix.SYS_UNSHARE, 0, retEPERM},
		{"ptrace", auditArch, unix.SYS_PTRACE, 0, retEPERM},
		{"bpf", auditArch, unix.SYS_BPF, 0, retEPERM},
		{"pidfd_getfd", auditArch, unix.SYS_PIDFD_GETFD, 0, retEPERM},
		{"pidfd_open", auditArch, unix.SYS_PIDFD_OPEN, 0, retAllow},
		{"process_vm_readv", auditArch, unix.SYS_PROCESS_VM_READV, 0, retEPERM},
		{"process_mrelease", auditArch, unix.SYS_PROCESS_MRELEASE, 0, retEPERM},
		{"syslog", auditArch, unix.SYS_SYSLOG, 0, retEPERM},
		{"chroot (needs CAP_SYS_CHROOT), as bpm", auditArch, unix.SYS_CHROOT, 0, retAllow},
		{"another architecture", unix.AUDIT_ARCH_I386, unix.SYS_READ, 0, retEPERM},
	}
	for _, tt := range tests {
		if got := run(t, prog, tt.arch, tt.nr, tt.arg0); got != tt.want {
			t.Errorf("%s: got %#x, want %#x", tt.name, got, tt.want)
		}
	}
	if hasX32 {
		if got := run(t, prog, auditArch, (x32Limit+1)|unix.SYS_READ, 0); got != retEPERM {
			t.Errorf("x32 read: got %#x, want EPERM", got)
		}
	}
}

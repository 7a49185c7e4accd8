package seccomp

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_X86_64
	// x32 system calls take the x86_64 arch value with numbers above
	// x32Limit: they are refused.
	hasX32   = true
	x32Limit = 0x3fffffff
)

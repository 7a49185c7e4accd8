package seccomp

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_AARCH64
	hasX32    = false // no such ABI
	x32Limit  = 0
)

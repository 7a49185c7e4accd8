package sandbox

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// capNumbers maps capability names (without CAP_) to their numbers in
// linux/capability.h.
func capNumbers() map[string]int {
	names := []string{
		"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL",
		"SETGID", "SETUID", "SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE",
		"NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER",
		"SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT",
		"SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME",
		"SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL",
		"SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM",
		"BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE",
	}
	m := make(map[string]int, len(names))
	for i, n := range names {
		m[n] = i
	}
	return m
}

// PrivilegedCaps is the capability set of unsafe.privileged: every
// capability up to AUDIT_READ (Docker's privileged list, which bpm uses),
// that is all but PERFMON, BPF and CHECKPOINT_RESTORE.
func PrivilegedCaps() []int {
	out := make([]int, 0, 38)
	for i := 0; i <= 37; i++ {
		out = append(out, i)
	}
	return out
}

// CapNumbers resolves capability names (with or without CAP_) to numbers,
// returning the names it does not know.
func CapNumbers(names []string) (nums []int, unknown []string) {
	table := capNumbers()
	for _, n := range names {
		if c, ok := table[strings.TrimPrefix(strings.ToUpper(n), "CAP_")]; ok {
			nums = append(nums, c)
		} else {
			unknown = append(unknown, n)
		}
	}
	return nums, unknown
}

// CapName is the name (without CAP_) of capability c, or its number.
func CapName(c int) string {
	for n, num := range capNumbers() {
		if num == c {
			return n
		}
	}
	return strconv.Itoa(c)
}

// HasCapability reports whether the calling process has capability c in
// its effective set.
func HasCapability(c int) bool { return effectiveCaps()&(1<<uint(c)) != 0 }

// effectiveCaps is the calling thread's effective capability set (capget);
// empty when it cannot be read.
func effectiveCaps() uint64 {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return 0
	}
	return uint64(data[0].Effective) | uint64(data[1].Effective)<<32
}

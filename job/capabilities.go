package job

import (
	"fmt"
	"slices"
	"strings"
)

// capabilities are the Linux capability names (capability.h, up to
// CAP_CHECKPOINT_RESTORE), written as bpm.yml takes them: without CAP_.
var capabilities = []string{
	"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL",
	"SETGID", "SETUID", "SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE",
	"NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER",
	"SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT",
	"SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME",
	"SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL",
	"SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM",
	"BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE",
}

// checkCapability returns "" for a known name, else a message; bpm would
// prepend CAP_ and leave runc to reject or silently drop the name.
func checkCapability(name string) string {
	if slices.Contains(capabilities, name) {
		return ""
	}
	if fixed := strings.TrimPrefix(strings.ToUpper(name), "CAP_"); slices.Contains(capabilities, fixed) {
		return fmt.Sprintf("unknown capability %q (did you mean %q?)", name, fixed)
	}
	return fmt.Sprintf("unknown capability %q: expected a Linux capability name without CAP_, such as NET_BIND_SERVICE", name)
}

package job

import (
	"fmt"
	"strings"
)

// capabilities are the Linux capability names (capability.h, up to
// CAP_CHECKPOINT_RESTORE), written as bpm.yml takes them: without CAP_.
var capabilities = map[string]bool{
	"CHOWN": true, "DAC_OVERRIDE": true, "DAC_READ_SEARCH": true, "FOWNER": true,
	"FSETID": true, "KILL": true, "SETGID": true, "SETUID": true, "SETPCAP": true,
	"LINUX_IMMUTABLE": true, "NET_BIND_SERVICE": true, "NET_BROADCAST": true,
	"NET_ADMIN": true, "NET_RAW": true, "IPC_LOCK": true, "IPC_OWNER": true,
	"SYS_MODULE": true, "SYS_RAWIO": true, "SYS_CHROOT": true, "SYS_PTRACE": true,
	"SYS_PACCT": true, "SYS_ADMIN": true, "SYS_BOOT": true, "SYS_NICE": true,
	"SYS_RESOURCE": true, "SYS_TIME": true, "SYS_TTY_CONFIG": true, "MKNOD": true,
	"LEASE": true, "AUDIT_WRITE": true, "AUDIT_CONTROL": true, "SETFCAP": true,
	"MAC_OVERRIDE": true, "MAC_ADMIN": true, "SYSLOG": true, "WAKE_ALARM": true,
	"BLOCK_SUSPEND": true, "AUDIT_READ": true, "PERFMON": true, "BPF": true,
	"CHECKPOINT_RESTORE": true,
}

// checkCapability returns "" for a known name, else a message; bpm would
// prepend CAP_ and leave runc to reject or silently drop the name.
func checkCapability(name string) string {
	if capabilities[name] {
		return ""
	}
	if fixed := strings.TrimPrefix(strings.ToUpper(name), "CAP_"); capabilities[fixed] {
		return fmt.Sprintf("unknown capability %q (did you mean %q?)", name, fixed)
	}
	return fmt.Sprintf("unknown capability %q: expected a Linux capability name without CAP_, such as NET_BIND_SERVICE", name)
}

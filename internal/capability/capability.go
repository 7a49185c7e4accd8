// Package capability names Linux's capabilities as bpm.yml writes them
// (without CAP_), by their numbers in linux/capability.h, up to
// CAP_CHECKPOINT_RESTORE. The job model validates names with it and the
// sandbox turns them into bits.
package capability

// names is the table, indexed by number.
func names() [41]string {
	return [...]string{
		"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL",
		"SETGID", "SETUID", "SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE",
		"NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER",
		"SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT",
		"SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME",
		"SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL",
		"SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM",
		"BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE",
	}
}

// Number is the number of the capability called name (exactly, without
// CAP_); ok is false for a name it does not know.
func Number(name string) (n int, ok bool) {
	for i, s := range names() {
		if s == name {
			return i, true
		}
	}
	return 0, false
}

// Name is the name of capability n, or "" for a number it does not know.
func Name(n int) string {
	all := names()
	if n < 0 || n >= len(all) {
		return ""
	}
	return all[n]
}

package supervise

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// unixSignalName returns "SIGTERM" for syscall.SIGTERM, or "" when unknown.
func unixSignalName(s syscall.Signal) string { return unix.SignalName(s) }

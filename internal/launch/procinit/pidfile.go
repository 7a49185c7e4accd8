package procinit

import (
	"os"
	"path/filepath"

	"github.com/vigil-bosh/vigil/internal/atomicfile"
	"github.com/vigil-bosh/vigil/internal/pidfile"
	"github.com/vigil-bosh/vigil/internal/sandbox"
)

// writePidFile stores the init's own pid in Launch.PidFile, when one is set.
func (it *initProc) writePidFile() error {
	if it.launch.PidFile == "" {
		return nil
	}
	return pidfile.Write(it.launch.PidFile, sandbox.HostPID())
}

// removePidFile deletes Launch.PidFile if it still names this init: a file
// that another instance has since claimed is left alone.
func (it *initProc) removePidFile() {
	if it.launch.PidFile == "" {
		return
	}
	_ = pidfile.RemoveIf(it.launch.PidFile, sandbox.HostPID())
}

// recordExit leaves r in Launch.ExitFile when no supervisor listens any
// more (the daemon died or let go), for the daemon that adopts this init.
// It writes a temporary file and renames it, so a reader sees all or none.
func (it *initProc) recordExit(r Report) {
	if it.launch.ExitFile == "" || it.cmds != nil {
		return
	}
	b := encodeExitRecord(ExitRecord{PID: sandbox.HostPID(), Report: r})
	dir := filepath.Dir(it.launch.ExitFile)
	if os.MkdirAll(dir, 0o700) != nil {
		return
	}
	_ = atomicfile.Write(it.launch.ExitFile, b, 0o600) // best effort: no one is left to tell of a failure
}

package procinit

import (
	"github.com/vigil-bosh/vigil/sandbox"

	"github.com/vigil-bosh/vigil/pidfile"
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
	if pid, err := pidfile.Read(it.launch.PidFile); err == nil && pid == sandbox.HostPID() {
		_ = pidfile.Remove(it.launch.PidFile)
	}
}

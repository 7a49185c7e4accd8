package procinit

import (
	"github.com/vigil-bosh/vigil/internal/atomicfile"
	"github.com/vigil-bosh/vigil/internal/pidfile"
	"github.com/vigil-bosh/vigil/internal/regfile"
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
// more (the daemon died or let go) and the one that adopted this init
// since has claimed the record: the file there names this init
// (ExitClaim). Without a claim it writes nothing, since nobody would read
// it: once its executable has ended by itself, an init that nobody
// adopted writes nothing into the BOSH root, as bpm's runc writes nothing
// once its container's process has ended. The record replaces the claim
// whole (a temporary file renamed), so a reader sees one or the other.
func (it *initProc) recordExit(r Report) {
	if it.launch.ExitFile == "" || it.cmds != nil {
		return
	}
	b, err := regfile.ReadFile(it.launch.ExitFile, 4096)
	if err != nil || claimant(b) != sandbox.HostPID() {
		return
	}
	b = encodeExitRecord(ExitRecord{PID: sandbox.HostPID(), Report: r})
	_ = atomicfile.Write(it.launch.ExitFile, b, 0o600) // best effort: no one is left to tell of a failure
}

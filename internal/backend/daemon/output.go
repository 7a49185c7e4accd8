package daemon

import (
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

// fillOutput sets the Output of every process in ps from its runner: the
// output bytes its instances have lost to failing log writes (a full disk,
// a removed log directory) and the log rotations they could not make,
// since the runner was made, which is since the daemon started or the
// process's configuration last changed.
func (d *Daemon) fillOutput(ps []control.ProcessStatus) {
	runners := d.cur.Load().runners
	for i := range ps {
		if r := runners[supervise.ID{Job: ps[i].Job, Process: ps[i].Process}]; r != nil {
			ps[i].Output.DroppedStdout, ps[i].Output.DroppedStderr = r.Dropped()
			ps[i].Output.RotationFailures = r.RotationFailures()
		}
	}
}

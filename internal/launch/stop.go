package launch

import (
	"context"
	"fmt"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/supervise/restart"
)

// Stop brings down the live init of JOB/PROC that no daemon supervises (one
// a detached bpm start left running) through the native supervisor's own
// stop ladder: a one-shot supervisor that never restarts adopts the init, as
// the next daemon would, and stops it, with t's stop signal and stages (zero
// values are bpm's). It returns nil once the init has exited and its pid
// file is gone, and an error matching ErrNoInit when no init runs. It
// blocks at most the ladder's length and two more kill stages, then
// reports an init that outlived its kill.
func Stop(l boshpath.Layout, jobName, procName string, t supervise.Timing) error {
	p, err := Adopt(l, jobName, procName)
	if err != nil {
		return err
	}
	t.Restart = restart.Policy{Mode: restart.Never}
	id := supervise.ID{Job: jobName, Process: procName}
	sup, end := supervise.Start(supervise.Config{ID: id, Timing: t, Adopt: p})
	defer end()
	ctx, cancel := context.WithTimeout(context.Background(), t.Stage(0)+t.Stage(1)+3*t.Stage(2))
	defer cancel()
	if _, err := sup.Do(ctx, supervise.VerbStop); err != nil {
		return fmt.Errorf("stop %s: init %d did not exit after SIGKILL: %w", id, p.PID(), err)
	}
	return nil
}

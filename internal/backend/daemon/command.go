package daemon

import (
	"context"
	"os/exec"
	"time"

	"github.com/vigil-bosh/vigil/internal/supervise"
)

// command returns a hook that runs argv (with env) for id without blocking
// the supervisor that calls it (a restart limit's command, a monit test's
// exec action), or nil for an empty argv. The command is bounded by a
// minute and by the daemon's life: Run kills what still runs at its end
// and waits for it.
func (d *Daemon) command(id supervise.ID, argv, env []string) func() {
	if len(argv) == 0 {
		return nil
	}
	return func() {
		d.log.Warn("restart limit reached: running its command", "process", id.String(), "command", argv[0])
		ctx, cancel := context.WithTimeout(d.treeCtx, time.Minute)
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = env
		if err := cmd.Start(); err != nil {
			cancel()
			d.log.Error("restart limit command", "process", id.String(), "err", err)
			return
		}
		d.commands.Go(func() {
			defer cancel()
			if err := cmd.Wait(); err != nil {
				d.log.Error("restart limit command", "process", id.String(), "err", err)
			}
		})
	}
}

package monit

import (
	"context"
	"os"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
)

// spawn runs a program of the engine's (an exec action's, a check's start
// or stop program) without waiting for it: through Options.Spawn when set,
// else in a session of its own that Run ends and waits for on its way out.
// With endOnFailure, the session of a program that fails is ended as it
// exits (Running.Wait).
func (e *Engine) spawn(p *monitrc.Program, env []string, endOnFailure bool) {
	if e.opts.Spawn != nil {
		e.opts.Spawn(p, env, endOnFailure)
		return
	}
	run, err := Spawn(p, env)
	if err != nil {
		return
	}
	e.mu.Lock()
	e.running[run.PID] = true
	e.mu.Unlock()
	e.spawned.Go(func() {
		_ = run.Wait(context.Background(), endOnFailure) // endSpawned ends it at Run's end
		e.mu.Lock()
		delete(e.running, run.PID)
		e.mu.Unlock()
	})
}

// endSpawned ends the sessions of the programs still running and waits
// for them.
func (e *Engine) endSpawned() {
	e.mu.Lock()
	var pids []int
	for pid := range e.running {
		pids = append(pids, pid)
	}
	e.mu.Unlock()
	for _, pid := range pids {
		EndSession(pid, 0)
	}
	e.spawned.Wait()
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}

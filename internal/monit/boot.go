package monit

import (
	"context"
	"strings"
)

// boot starts the services the daemon asked it to start (Booting), as
// monit's first cycle starts what does not run: each in a job of its own,
// once the boot starts of the services it depends on (through `depends
// on`, and EngineOptions.After) have ended, running or failed. An
// unrelated service that fails never holds another's start; a service
// whose prerequisite failed starts once that start has given up, as under
// monit. Until its start has ended a service reads initializing; then it
// shows what it is (running, or monit's failed start) without waiting for
// the next cycle. It also runs the stops a daemon that died left
// unfinished (Stopping), as stop actions.
func (e *Engine) boot(ctx context.Context) {
	jobs := map[string]*job{}
	e.mu.Lock()
	for _, svc := range e.cfg.Order() { // prerequisites first: their jobs exist when a dependant's is claimed
		key := strings.ToLower(svc.Name)
		st := e.states[key]
		if st == nil || !st.booting || e.units[key] == nil {
			continue
		}
		var after []*job
		deps := append([]string(nil), svc.DependsOn...)
		if e.opts.After != nil {
			deps = append(deps, e.opts.After(svc.Name)...)
		}
		for _, d := range deps {
			if p := jobs[strings.ToLower(d)]; p != nil {
				after = append(after, p)
			}
		}
		if hasRates(svc) { // monit's first cycle's start: a restart (after that cycle's rules)
			st.nstart, st.bootRate = st.nstart+1, true
		}
		j := e.claim(map[string]bool{key: true}, after...)
		jobs[key] = j
		e.boots[key] = j
		e.work.Go(func() { e.bootStart(ctx, j, key) })
	}
	for _, name := range e.opts.Stopping {
		key := strings.ToLower(name)
		if u := e.units[key]; u != nil && u.Status().Running && e.pending[key] == PendingNone {
			e.pending[key] = PendingStop
		}
	}
	e.mu.Unlock()
	select {
	case e.posted <- struct{}{}: // the dispatcher runs those stops (the first cycle is due anyway)
	default:
	}
}

// bootStart is one service's boot job: the start, then what the engine
// keeps about it. A start the engine's end cut short leaves the service
// booting, for the next engine (Unbooted).
func (e *Engine) bootStart(ctx context.Context, j *job, key string) {
	defer e.finish(j)
	if !j.wait(ctx) {
		return
	}
	u := e.units[key]
	_ = u.Start(ctx) // a failed start shows in the unit's status
	if ctx.Err() != nil {
		return
	}
	us := u.Status()
	e.mu.Lock()
	st := e.states[key]
	st.lastStarts, st.owed = max(st.lastStarts, us.Starts), false
	st.booting, st.bootDone = false, true
	if us.Monitor != NotMonitored {
		st.init = false // checked by its start: running, or failed to start
	}
	e.mu.Unlock()
	if e.opts.OnChange != nil {
		e.opts.OnChange()
	}
}

// Unbooted names the services whose boot start had not ended when the
// engine ended: the next engine starts them (a reload cut the start
// short, or it was still waiting for its prerequisites).
func (e *Engine) Unbooted() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, svc := range e.cfg.Services {
		if st := e.states[strings.ToLower(svc.Name)]; st != nil && st.booting {
			out = append(out, svc.Name)
		}
	}
	return out
}

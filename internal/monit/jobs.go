package monit

import (
	"context"
	"strings"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
)

// A job is work on a set of services (its scope, lower-cased names) that
// no other work on any of them may overlap: an action posted through the
// API with its dependency cascade, the daemon's start of a service at
// boot, or a cycle's check of a service with the actions its events run.
// Jobs over disjoint scopes run at once, so that a stop never waits for
// another service's signal ladder; a job that overlaps jobs claimed
// before it waits until they are done, so that overlapping work runs in
// the order it was claimed (monit's order, among actions posted
// together).
type job struct {
	scope map[string]bool
	after []*job        // the unfinished jobs it waits for
	done  chan struct{} // closed by finish
}

// claim registers a job over scope, after every unfinished job that
// overlaps it and after extra. Called with e.mu held; the caller waits
// (job.wait), works, then ends it with finish.
func (e *Engine) claim(scope map[string]bool, extra ...*job) *job {
	j := &job{scope: scope, after: extra, done: make(chan struct{})}
	for _, o := range e.jobs {
		if overlaps(o.scope, scope) {
			j.after = append(j.after, o)
		}
	}
	e.jobs = append(e.jobs, j)
	return j
}

// tryClaim claims a job over scope if nothing unfinished overlaps it and
// no action is posted for any of its services, and returns nil otherwise:
// work on one of its services is in flight, or is about to be (an action
// posted takes a check's place, as monit's scheduled action skips the
// service's check, even before the dispatcher has claimed its job).
func (e *Engine) tryClaim(scope map[string]bool) *job {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k := range scope {
		if e.pending[k] != PendingNone {
			return nil
		}
	}
	for _, o := range e.jobs {
		if overlaps(o.scope, scope) {
			return nil
		}
	}
	return e.claim(scope)
}

func overlaps(a, b map[string]bool) bool {
	for k := range b {
		if a[k] {
			return true
		}
	}
	return false
}

// wait blocks until every job j waits for is done; false once ctx is.
func (j *job) wait(ctx context.Context) bool {
	for _, a := range j.after {
		select {
		case <-a.done:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// finish ends j: the jobs waiting for it go on.
func (e *Engine) finish(j *job) {
	e.mu.Lock()
	for i, o := range e.jobs {
		if o == j {
			e.jobs = append(e.jobs[:i], e.jobs[i+1:]...)
			break
		}
	}
	e.mu.Unlock()
	close(j.done)
}

// scope is the set of services (lower-cased) that action on svc acts on,
// its dependency cascade included: a dry run of Do. With exact, a start
// of a process that runs covers the service alone, as Do then only
// monitors it; without, the whole cascade a start could run.
func (e *Engine) scope(svc *monitrc.Service, action string, exact bool) map[string]bool {
	c := &cascade{e: e, done: map[*monitrc.Service]bool{}, verb: action, touched: map[*monitrc.Service]bool{}}
	c.exact = exact
	c.run(svc, action)
	out := map[string]bool{strings.ToLower(svc.Name): true}
	for s := range c.touched {
		out[strings.ToLower(s.Name)] = true
	}
	return out
}

// reachOf is what a cycle's check of svc may act on: the cascades of the
// actions its events and restart-rate rules run, and of a restart of a
// dead process.
func (e *Engine) reachOf(svc *monitrc.Service) map[string]bool {
	out := map[string]bool{}
	for _, a := range []string{"start", "restart", "stop", "unmonitor"} {
		for k := range e.scope(svc, a, false) {
			out[k] = true
		}
	}
	return out
}

// dispatch runs the actions posted through the API until ctx is done:
// each as a job of its own (its cascade's scope) as soon as it is posted,
// those posted together in monit's service order.
func (e *Engine) dispatch(ctx context.Context) {
	for {
		select {
		case <-e.posted:
		case <-ctx.Done():
			return
		}
		for _, svc := range e.cfg.Order() {
			key := strings.ToLower(svc.Name)
			e.mu.Lock()
			code := e.pending[key]
			if code == PendingNone || e.dispatched[key] {
				e.mu.Unlock()
				continue
			}
			e.dispatched[key] = true
			e.mu.Unlock()
			scope := e.scope(svc, actionName(code), false)
			e.mu.Lock()
			j := e.claim(scope)
			e.mu.Unlock()
			e.work.Go(func() { e.runAction(ctx, j, svc, code) })
		}
	}
}

// runAction runs a posted action once the work it overlaps is done,
// clears its pending mark and reports it. An action the engine's end cut
// short stays pending (Unfinished), for the next engine to run.
func (e *Engine) runAction(ctx context.Context, j *job, svc *monitrc.Service, code int) {
	var err error
	if j.wait(ctx) {
		err = e.Do(ctx, svc.Name, actionName(code))
	}
	e.finish(j)
	if ctx.Err() != nil {
		return
	}
	key := strings.ToLower(svc.Name)
	e.mu.Lock()
	delete(e.pending, key)
	delete(e.dispatched, key)
	for k, in := range e.intents {
		if in.by == key {
			delete(e.intents, k)
		}
	}
	e.mu.Unlock()
	if e.onDone != nil {
		e.onDone(svc.Name, actionName(code), err)
	}
}

// kick wakes the dispatcher (an action was posted) and the daemon loop
// (monit's wake-up: a cycle at once).
func (e *Engine) kick() {
	for _, c := range []chan struct{}{e.posted, e.wake} {
		select {
		case c <- struct{}{}:
		default: // woken already
		}
	}
}

// Unfinished returns the actions posted and not carried out when the
// engine ended, by service name: the next engine runs them (Repost).
func (e *Engine) Unfinished() map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]string{}
	for _, svc := range e.cfg.Services {
		if code := e.pending[strings.ToLower(svc.Name)]; code != PendingNone {
			out[svc.Name] = actionName(code)
		}
	}
	return out
}

// Repost posts again the actions another engine left unfinished (a
// reload ended it), for the services this one still has.
func (e *Engine) Repost(actions map[string]string) {
	for name, action := range actions {
		_ = e.Post(name, action) // a service gone, or one with an action pending already
	}
}

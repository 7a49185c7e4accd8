package monit

import (
	"strings"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
)

// intent is what a posted action means for a service its cascade covers,
// from the moment it is posted until it is done: whether the service ends
// up not monitored, and which posted action (its service's key) said so.
type intent struct {
	down bool
	by   string
}

// intend records what action on svc means for every service its cascade
// covers, before it runs: a daemon killed meanwhile leaves that intent
// for the next one (Persisted). A stop also marks its services stopping
// until their processes are gone; a start, restart or monitor ends that.
// Called with e.mu held; scope is the action's (exact) scope.
func (e *Engine) intend(svc *monitrc.Service, action string, scope map[string]bool) {
	by := strings.ToLower(svc.Name)
	down := action == "stop" || action == "unmonitor"
	for k := range scope {
		e.intents[k] = intent{down: down, by: by}
		switch s, _ := e.cfg.Lookup(k); {
		case action == "stop" && s != nil && s.Type == monitrc.TypeProcess:
			e.stopping[k] = true
		case action == "start" || action == "restart" || action == "monitor":
			delete(e.stopping, k)
		}
	}
}

// Persisted is what the next daemon must honour, by service name: the
// services not monitored (or about to be, by an action posted and not yet
// done), and those whose stop was asked for and whose process may still
// run (the next daemon stops them again). A service the daemon is about to
// start at boot counts as monitored.
func (e *Engine) Persisted() (unmonitored, stopping []string) {
	for _, svc := range e.cfg.Services {
		key := strings.ToLower(svc.Name)
		var us UnitStatus
		if u := e.units[key]; u != nil {
			us = u.Status()
		}
		e.mu.Lock()
		in, intended := e.intents[key]
		stop := e.stopping[key]
		booting := e.states[key] != nil && e.states[key].booting
		down := us.Monitor == NotMonitored && !booting
		if intended {
			down = in.down
		}
		if stop && !us.Running && !intended {
			delete(e.stopping, key) // done: nothing of it is left
			stop = false
		}
		e.mu.Unlock()
		if down {
			unmonitored = append(unmonitored, svc.Name)
		}
		if stop {
			stopping = append(stopping, svc.Name)
		}
	}
	return unmonitored, stopping
}

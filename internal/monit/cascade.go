package monit

import (
	"context"
	"strings"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
)

// run carries out action on svc with its cascade; false for an action
// that is not monit's.
func (c *cascade) run(svc *monitrc.Service, action string) bool {
	switch action {
	case "start":
		if c.exact {
			if u := c.e.units[strings.ToLower(svc.Name)]; u != nil && u.Status().Running && svc.Type == monitrc.TypeProcess {
				c.unit(svc, func(u Unit) error { return u.Monitor(c.ctx) }) // running: only monitor it again
				break
			}
		}
		c.depend(svc, "stop")
		c.start(svc)
		c.depend(svc, "start")
	case "stop":
		c.depend(svc, "stop")
		c.stop(svc)
	case "restart":
		c.depend(svc, "stop")
		if c.stop(svc) {
			c.start(svc)
			c.depend(svc, "start")
		}
	case "monitor":
		c.monitor(svc)
	case "unmonitor":
		c.depend(svc, "unmonitor")
		c.unit(svc, func(u Unit) error { return u.Unmonitor(c.ctx) })
	default:
		return false
	}
	return true
}

type cascade struct {
	e    *Engine
	ctx  context.Context
	err  error
	done map[*monitrc.Service]bool // started or monitored once already
	verb string                    // the action the cascade runs
	// exact: a start of a running process only monitors it (Do's, and an
	// exact scope's); otherwise a dry run covers the whole cascade.
	exact bool
	// touched, when set, makes the cascade a dry run: it records the
	// services it would act on and acts on none (Engine.scope).
	touched map[*monitrc.Service]bool
}

func (c *cascade) note(err error) bool {
	if err != nil && c.err == nil {
		c.err = err
	}
	return err == nil
}

// unit applies f to s's unit, then brings what the cycles keep about s in
// line: its starts are the engine's own (not a crash's restart), a service
// no longer monitored forgets its events and counts (monit's
// Util_monitorUnset), one monitored again is initializing until its next
// check.
func (c *cascade) unit(s *monitrc.Service, f func(Unit) error) bool {
	if c.touched != nil {
		c.touched[s] = true
		return true
	}
	u := c.e.units[strings.ToLower(s.Name)]
	if u == nil {
		return true
	}
	before := u.Status().Monitor
	ok := c.note(f(u))
	st := u.Status()
	// A restart's stop keeps the events (monit's soft unmonitor); a stop
	// or unmonitor forgets them.
	forget := st.Monitor == NotMonitored && (c.verb == "stop" || c.verb == "unmonitor")
	c.e.settle(s, st, before == NotMonitored && st.Monitor != NotMonitored, forget)
	return ok
}

// up starts or monitors (verb) the prerequisites of s, then s, each service
// once per action.
func (c *cascade) up(s *monitrc.Service, verb func(Unit) error) {
	if c.done[s] {
		return
	}
	c.done[s] = true
	for _, d := range s.DependsOn {
		if p, ok := c.e.cfg.Lookup(d); ok {
			c.up(p, verb)
		}
	}
	c.unit(s, verb)
}

func (c *cascade) start(s *monitrc.Service) { c.up(s, func(u Unit) error { return u.Start(c.ctx) }) }

func (c *cascade) monitor(s *monitrc.Service) {
	c.up(s, func(u Unit) error { return u.Monitor(c.ctx) })
}

func (c *cascade) stop(s *monitrc.Service) bool {
	return c.unit(s, func(u Unit) error { return u.Stop(c.ctx) })
}

// depend applies action to every service that depends on s, transitively:
// start and monitor top-down (s's dependants, then theirs), stop and
// unmonitor bottom-up (the deepest dependants first).
func (c *cascade) depend(s *monitrc.Service, action string) {
	for _, child := range c.e.cfg.Dependants(s.Name) {
		switch action {
		case "start":
			c.start(child)
			c.depend(child, action)
		case "monitor":
			c.monitor(child)
			c.depend(child, action)
		case "stop":
			c.depend(child, action)
			c.stop(child)
		case "unmonitor":
			c.depend(child, action)
			c.unit(child, func(u Unit) error { return u.Unmonitor(c.ctx) })
		}
	}
}

package monitrc

import (
	"fmt"
	"slices"
	"strings"
)

// Dependencies: the loops and unknown names a load drops, the order
// services start in, the services that depend on one.

type badDep struct {
	svc *Service
	err *Error
}

// badDependencies returns the services with an unknown dependency or in a
// loop (in config order), or nil.
func badDependencies(svcs []*Service) []badDep {
	idx := map[string]*Service{}
	for _, s := range svcs {
		idx[strings.ToLower(s.Name)] = s
	}
	var out []badDep
	for _, s := range svcs {
		for i, d := range s.DependsOn {
			if idx[strings.ToLower(d)] == nil {
				line := s.Line
				if i < len(s.DependLines) {
					line = s.DependLines[i]
				}
				out = append(out, badDep{s, &Error{File: s.File, Line: line,
					Msg: fmt.Sprintf("depend service '%s' is not defined in the control file (needed by %s)", d, s.Name)}})
				break
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	const (
		white = iota
		grey
		black
	)
	color := map[*Service]int{}
	var loop []*Service
	var visit func(s *Service, path []*Service) bool
	visit = func(s *Service, path []*Service) bool {
		color[s] = grey
		path = append(path, s)
		for _, d := range s.DependsOn {
			t := idx[strings.ToLower(d)]
			switch color[t] {
			case grey:
				loop = slices.Clone(path[slices.Index(path, t):])
				return true
			case white:
				if visit(t, path) {
					return true
				}
			}
		}
		color[s] = black
		return false
	}
	for _, s := range svcs {
		if color[s] == white && visit(s, nil) {
			break
		}
	}
	for _, s := range loop {
		out = append(out, badDep{s, &Error{File: s.File, Line: s.Line,
			Msg: fmt.Sprintf("found a depend loop in the control file involving service '%s'", s.Name)}})
	}
	return out
}

// Order returns the services so that each comes after everything it
// depends on, as monit sorts them (check_depend): passes over the config
// order, each taking every service whose prerequisites are taken already.
// Services in a loop (dropped at load) come last, in config order.
func (c *Config) Order() []*Service {
	taken := map[*Service]bool{}
	var out []*Service
	for found := true; found && len(out) < len(c.Services); {
		found = false
		for _, s := range c.Services {
			if taken[s] {
				continue
			}
			ready := true
			for _, d := range s.DependsOn {
				if t, ok := c.Lookup(d); ok && !taken[t] {
					ready = false
				}
			}
			if ready {
				taken[s], found = true, true
				out = append(out, s)
			}
		}
	}
	for _, s := range c.Services {
		if !taken[s] {
			out = append(out, s)
		}
	}
	return out
}

// Dependants returns the services that depend on name directly.
func (c *Config) Dependants(name string) []*Service {
	var out []*Service
	for _, s := range c.Services {
		if slices.ContainsFunc(s.DependsOn, func(d string) bool { return strings.EqualFold(d, name) }) {
			out = append(out, s)
		}
	}
	return out
}

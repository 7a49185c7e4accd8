package monit

import (
	"slices"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
)

// svcState is what the engine keeps about one service between cycles.
// The counters belong to the engine's goroutine; the fields after mu's
// comment are read by Status under Engine.mu.
type svcState struct {
	nstart, ncycle int  // restarts seen and cycles counted, for the restart-rate rules
	nevery         int  // cycles skipped (every N cycles)
	lastStarts     int  // the unit's starts when last looked at
	owed           bool // a restart counted whose start is still to be seen in the unit's starts
	bootDone       bool // its boot start ended since its last check (tests nothing if that is the first cycle)
	bootRate       bool // its boot start counted for the rates as the first cycle's: that cycle counts no cycle
	cpu            cpuSample
	memo           fileMemo // what change tests compare with
	pid, ppid      int      // for the pid and ppid change tests

	// Under Engine.mu.
	booting   bool                   // the engine starts it at boot (boot.go), and has not finished
	events    map[string]*eventState // by test
	order     []string               // event keys, newest first (monit's event list)
	bits      int                    // failed events (monit's error)
	hints     int                    // of bits, the changes (monit's error_hint)
	init      bool                   // initializing until the next check
	collected time.Time
	file      *FileInfo
	system    *SystemInfo
	ports     []PortResult
	pings     []PortResult // each ICMP test's result
	cpuPct    [2]float64   // the process's and its tree's, from the last two cycles
	cpuKnown  bool         // cpuPct has been measured
}

// state returns s's state (never nil for a service of the configuration).
func (e *Engine) state(s *monitrc.Service) *svcState {
	e.mu.Lock()
	defer e.mu.Unlock()
	key := strings.ToLower(s.Name)
	st := e.states[key]
	if st == nil {
		st = &svcState{init: true, events: map[string]*eventState{}}
		e.states[key] = st
	}
	return st
}

// settle records the result of an action on s, its unit's status us
// after it: its starts so far (the engine's own, not a crash's restart),
// and whether it became monitored again or unmonitored (every event and
// count forgotten, as monit's Util_monitorUnset). A process monitored
// again reads initializing until its next check, unless it runs: its
// start was its check (monit waits for its next cycle; the agent waits
// on initializing).
func (e *Engine) settle(s *monitrc.Service, us UnitStatus, monitored, unmonitored bool) {
	st := e.state(s)
	if us.Starts > st.lastStarts {
		st.lastStarts, st.owed = us.Starts, false
	}
	if unmonitored {
		st.nstart, st.ncycle = 0, 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case unmonitored:
		st.forget()
	case monitored:
		st.init = !(us.Running && s.Type == monitrc.TypeProcess && us.Monitor == Monitored)
	}
}

// forget drops the events and what was seen of the object (monit's
// Util_monitorUnset; the hints stay, as monit's do). Called with
// Engine.mu held.
func (st *svcState) forget() {
	st.events, st.order, st.bits = map[string]*eventState{}, nil, 0
	st.file, st.system, st.ports, st.pings, st.cpuPct, st.cpuKnown = nil, nil, nil, nil, [2]float64{}, false
}

// posted is one test's result in a cycle.
type posted struct {
	key     string // which test (its index, or a built-in check)
	bit     int    // its event
	failed  bool   // failed, or changed for a change test
	change  bool   // a change test: failed means changed
	message string
	fail    Rate // what its failure needs
	ok      Rate // what its recovery needs
	action  monitrc.Action
	recover monitrc.Action
}

// handled is an event whose action runs; changed: its state changed
// (it is alerted).
type handled struct {
	p               posted
	failed, changed bool
}

// post records a cycle's results under Engine.mu and returns the events
// whose actions run, in the order posted.
func (e *Engine) post(st *svcState, results []posted) []handled {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []handled
	for _, r := range results {
		ev := st.events[r.key]
		if ev == nil {
			if !r.failed {
				continue // successes before any failure are not remembered
			}
			ev = &eventState{}
			st.events[r.key] = ev
			st.order = slices.Insert(st.order, 0, r.key)
		}
		fail := r.fail
		if r.change {
			fail = Rate{} // a change is handled at once
		}
		act, changed := ev.post(r.failed, r.message, fail, r.ok)
		if !act {
			continue
		}
		if r.failed {
			st.bits |= r.bit
			if r.change {
				st.hints |= r.bit
			} else {
				st.hints &^= r.bit
			}
		} else {
			st.bits &^= r.bit // the hint stays: monit changes it only on a failure
		}
		out = append(out, handled{p: r, failed: r.failed, changed: changed || r.change})
	}
	return out
}

// message is the text of the newest event that stands failed.
func (st *svcState) message() string {
	for _, k := range st.order {
		if ev := st.events[k]; ev.failing() && ev.message != "" {
			return ev.message
		}
	}
	return ""
}

// statusOf is a service's status: its unit's, with what the cycles found
// (events, the object's attributes, connection results).
func statusOf(e *Engine, svc *monitrc.Service) UnitStatus {
	var us UnitStatus
	if u, ok := e.Unit(svc.Name); ok {
		us = u.Status()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.states[strings.ToLower(svc.Name)]
	if st == nil {
		return us
	}
	if !st.collected.IsZero() {
		us.Collected = st.collected
	}
	us.Hints = st.hints
	if us.Monitor == NotMonitored && st.booting {
		// The daemon starts it as monit's first cycle would: monit shows
		// every service initializing until that cycle has looked at it.
		us.Monitor = Initializing
	}
	if us.Monitor == NotMonitored {
		us.Events, us.Message = 0, ""
		return us
	}
	if st.init && us.Monitor == Monitored {
		us.Monitor = Initializing
	}
	if m := st.message(); m != "" && (us.Message == "" || us.Events == 0) {
		us.Message = m
	}
	us.Events |= st.bits
	us.File, us.System, us.Ports, us.Pings = st.file, st.system, st.ports, st.pings
	if us.Running && st.cpuKnown {
		us.CPUPct, us.CPUPctTotal = st.cpuPct[0], st.cpuPct[1]
	}
	return us
}

// shownState is what of a service's state its status shows besides its
// unit's: the failed events, and whether it is still initializing.
type shownState struct {
	bits          int
	init, booting bool
}

// shown is st's shownState; the caller holds Engine.mu.
func (st *svcState) shown() shownState {
	return shownState{bits: st.bits, init: st.init, booting: st.booting}
}

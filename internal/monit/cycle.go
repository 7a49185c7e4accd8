package monit

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
)

// Run is monit's daemon loop (monitor.c, validate.c) until ctx is done: a
// cycle at once, then one every set daemon interval, and one at once when
// an action is posted. It starts the services of EngineOptions.Booting
// (boot.go) and runs each posted action as it comes (jobs.go), beside the
// cycles. Run returns once the actions and starts in flight (cut short by
// ctx) and the programs it started itself have ended (their sessions are
// killed then).
func (e *Engine) Run(ctx context.Context) {
	defer e.endSpawned()
	defer func() {
		e.work.Wait()
		e.mu.Lock()
		e.ended = true
		e.mu.Unlock()
	}()
	cycle := e.cfg.Cycle
	if cycle <= 0 {
		cycle = monitrc.DefaultCycle
	}
	e.boot(ctx) // its jobs first: actions posted meanwhile wait for them
	e.work.Go(func() { e.dispatch(ctx) })
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.wake:
		case <-timer.C:
		}
		e.cycle(ctx)
		if ctx.Err() != nil {
			return
		}
		timer.Reset(cycle)
	}
}

// cycle is monit's validate: every service checked once, prerequisites
// first (monit's service list is sorted by dependencies), each recorded
// as looked at. A service that an action is working on (or one its check
// could act on) is not checked: that work takes the check's place, as a
// scheduled action takes it in monit's cycle. The first cycle checks the
// others first, says so (Checked), then waits for each boot start still
// under way and checks its service, as monit's first cycle makes the
// starts before it goes on: a start that ends within the first cycle is
// that cycle's, however long it took.
func (e *Engine) cycle(ctx context.Context) {
	e.cycles++
	if e.cycles == 2 {
		for _, st := range e.states {
			st.bootRate = false // the boot's starts were the first cycle's
		}
	}
	sys := &systemSampler{}
	changed := false
	var later []*monitrc.Service // the first cycle's services held by their boot starts
	for _, svc := range e.cfg.Order() {
		if ctx.Err() != nil {
			return
		}
		if !e.check(ctx, svc, sys, &changed) && e.cycles == 1 && e.boots[strings.ToLower(svc.Name)] != nil {
			later = append(later, svc)
		}
	}
	if e.cycles == 1 {
		close(e.checked)
	}
	for _, svc := range later {
		select {
		case <-e.boots[strings.ToLower(svc.Name)].done:
		case <-ctx.Done():
			return
		}
		e.check(ctx, svc, sys, &changed)
	}
	if changed && e.opts.OnChange != nil {
		e.opts.OnChange()
	}
}

// check checks svc unless work on what its check could act on is in
// flight (false then), noting in changed whether its status changed.
func (e *Engine) check(ctx context.Context, svc *monitrc.Service, sys *systemSampler, changed *bool) bool {
	j := e.tryClaim(e.reach[strings.ToLower(svc.Name)])
	if j == nil {
		return false
	}
	defer e.finish(j)
	st := e.state(svc)
	e.mu.Lock()
	before := st.shown()
	e.mu.Unlock()
	e.checkService(ctx, svc, sys)
	e.mu.Lock()
	st.collected = time.Now()
	*changed = *changed || st.shown() != before
	e.mu.Unlock()
	return true
}

// checkService is validate()'s body for one service: every N cycles, the
// restart-rate rules, then the service's own check and the actions of the
// events it posts. A monitored service is no longer initializing after it.
func (e *Engine) checkService(ctx context.Context, svc *monitrc.Service, sys *systemSampler) {
	u, ok := e.Unit(svc.Name)
	if !ok {
		return
	}
	st := e.state(svc)
	if u.Status().Monitor == NotMonitored {
		return
	}
	if svc.Every > 1 {
		if st.nevery++; st.nevery < svc.Every {
			return
		}
		st.nevery = 0
	}
	if e.rates(ctx, svc, st) {
		return
	}
	var results []posted
	switch svc.Type {
	case monitrc.TypeProcess:
		results = e.checkProcess(ctx, svc, st, u, sys)
	case monitrc.TypeHost:
		results = e.checkHost(ctx, svc, st)
	case monitrc.TypeSystem:
		results = e.checkSystem(svc, st, sys)
	default:
		results = e.checkPath(svc, st)
	}
	if ctx.Err() != nil {
		return // a test cut short by the engine's end proves nothing
	}
	for _, h := range e.post(st, results) {
		e.handle(ctx, svc, st, h)
	}
	if u.Status().Monitor != NotMonitored {
		e.mu.Lock()
		st.init = false
		e.mu.Unlock()
	}
}

// checkProcess is monit's check_process. A process found dead (the
// supervisor restarts it) or restarted since the last cycle is the
// restart monit's cycle makes of a dead process: it counts, once a cycle,
// for the restart-rate rules, and its dependants are stopped and started
// again around it (the cycle waits for the process to run, as monit's
// does). A boot start (counted by boot, as the first cycle's) is no
// restart; checked in the first cycle, its tests wait for the next one, as
// after monit's first-cycle start. Then the process's tests run while it
// runs.
func (e *Engine) checkProcess(ctx context.Context, svc *monitrc.Service, st *svcState, u Unit, sys *systemSampler) []posted {
	us := u.Status()
	dead := (!us.Running || !alive(us.PID)) && svc.Mode != "passive" && !passiveExist(svc)
	fresh := us.Starts > st.lastStarts
	st.lastStarts = max(st.lastStarts, us.Starts)
	if st.bootDone {
		st.bootDone = false
		if e.cycles == 1 { // monit's first cycle ends its check with the start: no tests yet
			st.pid, st.ppid = 0, 0
			return nil
		}
	}
	count := false
	switch {
	case fresh && st.owed: // the restart counted when it was found dead
		st.owed = false
	case fresh:
		count = true
	}
	if dead && !count {
		count, st.owed = true, true // found dead: its supervisor owes the start monit makes now
	}
	if count {
		// monit's check ends with the restart of a dead process: its
		// tests wait for the next cycle.
		e.restarted(ctx, svc, st, u)
		st.pid, st.ppid = 0, 0 // the restart's process is new to the change tests
		return nil
	}
	if !us.Running || !alive(us.PID) { // monit's own look: the supervisor may not have seen the death yet
		st.pid, st.ppid = 0, 0 // monit forgets the process it no longer finds
		if a := existAction(svc); a.Kind != monitrc.ActRestart && a.Kind != monitrc.ActStart {
			return []posted{{key: "exist", bit: EventNonexist, failed: true, message: "process is not running",
				action: a, recover: monitrc.Action{Kind: monitrc.ActAlert}}}
		}
		return nil
	}
	if us.MemKB == 0 && e.opts.Stats != nil {
		e.opts.Stats(us.PID, &us)
	}
	e.sampleCPU(st, us)
	e.mu.Lock()
	us.CPUPct, us.CPUPctTotal = st.cpuPct[0], st.cpuPct[1]
	e.mu.Unlock()
	out := []posted{{key: "exist", bit: EventNonexist, message: "process is running with pid " + strconv.Itoa(us.PID),
		action: existAction(svc), recover: monitrc.Action{Kind: monitrc.ActAlert}}}
	out = append(out, e.pidTests(svc, st, us)...)
	for _, i := range reversed(svc, monitrc.TestResource) {
		t := svc.Tests[i]
		var si *SystemInfo
		if strings.HasPrefix(t.Resource, "loadavg") {
			si, _ = sys.get(e)
		}
		out = append(out, testResult(i, t, resourceCheck(t, &us, si)))
	}
	return append(out, e.connections(ctx, svc, st)...)
}

// restarted counts a restart and restarts the dependants around it.
func (e *Engine) restarted(ctx context.Context, svc *monitrc.Service, st *svcState, u Unit) {
	if hasRates(svc) {
		st.nstart++
	}
	if hasRates(svc) || len(e.cfg.Dependants(svc.Name)) > 0 {
		e.restartCascade(ctx, svc)
	}
	if us := u.Status(); us.Starts > st.lastStarts {
		st.lastStarts, st.owed = us.Starts, false
	}
}

// restartCascade is what remains of monit's restart of a dead svc, whose
// supervisor restarts it (or did): the services that depend on it are
// stopped (the deepest first), svc is started (waiting until it runs),
// then they are started again.
func (e *Engine) restartCascade(ctx context.Context, svc *monitrc.Service) {
	c := &cascade{e: e, ctx: ctx, done: map[*monitrc.Service]bool{}}
	c.depend(svc, "stop")
	c.start(svc)
	c.depend(svc, "start")
}

// alive reports whether pid is a live process (not a zombie): monit's
// look at the process, which the supervisor's last status may lag behind.
func alive(pid int) bool {
	_, err := StartTime(pid)
	return pid > 0 && err == nil
}

// passiveExist reports an "if not exist" test whose action is not a
// restart: the supervisor leaves the dead process down.
func passiveExist(svc *monitrc.Service) bool {
	a := existAction(svc)
	return a.Kind != monitrc.ActRestart && a.Kind != monitrc.ActStart
}

// rates applies the restart-rate rules (monit's check_timeout): once the
// service restarted, the cycles are counted; a rule holds while the
// restarts reach its count within its cycles, and its action runs each
// cycle it holds; past the longest window the counts start over. It
// reports whether the service is no longer monitored.
func (e *Engine) rates(ctx context.Context, svc *monitrc.Service, st *svcState) bool {
	rules := reversed(svc, monitrc.TestRestarts)
	if len(rules) == 0 {
		return false
	}
	// The boot's start counts after the first cycle's rules, as monit's
	// first cycle makes it after its own.
	counting := st.nstart > 0 && !st.bootRate
	if counting {
		st.ncycle++
	}
	longest := 0
	var results []posted
	for _, i := range rules {
		t := svc.Tests[i]
		longest = max(longest, t.Cycles)
		a := t.Action
		if a.Kind == monitrc.ActTimeout {
			a = monitrc.Action{Kind: monitrc.ActUnmonitor}
		}
		if !(counting && st.nstart >= max(t.Failures, 1) && st.ncycle <= t.Cycles) {
			continue
		}
		// monit 5.2.5 posts this event only while the rule holds, never its
		// recovery: Timeout stays in the status until a stop or an
		// unmonitor forgets it, as monit shows it.
		results = append(results, posted{key: "rate" + strconv.Itoa(i), bit: EventTimeout, failed: true,
			message: fmt.Sprintf("service restarted %d times within %d cycles(s) - %s", st.nstart, st.ncycle, a.Kind),
			action:  a, recover: monitrc.Action{}})
	}
	if st.ncycle > longest {
		st.nstart, st.ncycle = 0, 0
	}
	for _, h := range e.post(st, results) {
		e.handle(ctx, svc, st, h)
	}
	u, _ := e.Unit(svc.Name)
	return u == nil || u.Status().Monitor == NotMonitored
}

// reversed lists the indexes of svc's tests of kind, the last written
// first: monit prepends each to its list, so it checks them in that order
// (resources, timestamps, sizes, filesystem usage, ports, restart rates).
func reversed(svc *monitrc.Service, kind monitrc.TestKind) []int {
	var out []int
	for i := len(svc.Tests) - 1; i >= 0; i-- {
		if svc.Tests[i].Kind == kind {
			out = append(out, i)
		}
	}
	return out
}

func hasRates(svc *monitrc.Service) bool {
	for _, t := range svc.Tests {
		if t.Kind == monitrc.TestRestarts {
			return true
		}
	}
	return false
}

// existAction is what a service does when it does not exist: restart,
// unless an "if not exist" test says otherwise.
func existAction(svc *monitrc.Service) monitrc.Action {
	for _, t := range svc.Tests {
		if t.Kind == monitrc.TestExist {
			return t.Action
		}
	}
	return monitrc.Action{Kind: monitrc.ActRestart}
}

// testResult is the posted result of svc.Tests[i] for a check that found
// failed (or, for a change test, changed) with msg.
func testResult(i int, t monitrc.Test, c checked) posted {
	return posted{key: "test" + strconv.Itoa(i), bit: c.bit, failed: c.failed, change: t.Changed,
		message: c.message, fail: Rate{t.Failures, t.Cycles}, ok: Rate{t.RecoveryFailures, t.RecoveryCycles},
		action: t.Action, recover: t.Recovery}
}

// checked is what one test found.
type checked struct {
	bit     int
	failed  bool
	message string
}

// handle runs the action of an event: a change of its state is alerted (as
// monit mails it); restart, start, stop and unmonitor go through Do with
// their dependency cascades (a passive service is never started or
// stopped); exec runs the program.
func (e *Engine) handle(ctx context.Context, svc *monitrc.Service, st *svcState, h handled) {
	a := h.p.action
	if !h.failed {
		a = h.p.recover
	}
	if a.Kind == "" {
		return
	}
	if e.opts.Alert != nil && h.changed {
		e.opts.Alert(Alert{Service: svc.Name, Event: EventText(h.p.bit, h.failed, h.p.change),
			Action: string(a.Kind), Description: h.p.message})
	}
	switch a.Kind {
	case monitrc.ActExec:
		if a.Exec != nil {
			pid := 0
			if u, ok := e.Unit(svc.Name); ok {
				pid = u.Status().PID
			}
			e.spawn(a.Exec, Env(svc, e.opts.Host, EventText(h.p.bit, h.failed, h.p.change), h.p.message, pid), false)
		}
	case monitrc.ActRestart, monitrc.ActStart, monitrc.ActStop:
		if a.Kind != monitrc.ActStop && hasRates(svc) {
			st.nstart++
		}
		if svc.Mode == "passive" {
			return
		}
		_ = e.Do(ctx, svc.Name, string(a.Kind))
		if a.Kind != monitrc.ActStart && svc.Path != "" {
			e.mu.Lock()
			st.file = &FileInfo{Timestamp: time.Unix(0, 0)} // monit's Util_resetInfo at the stop
			e.mu.Unlock()
		}
	case monitrc.ActUnmonitor:
		_ = e.Do(ctx, svc.Name, "unmonitor")
	}
}

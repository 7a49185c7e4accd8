// Package monitext is the monit personality as an extension the daemon
// hosts: at each reload it reads the monit control files the BOSH agent
// installs, says what runs (the bpm processes that check processes start
// through the bpm shim, and the other check processes, run monit's way),
// sets those supervisors' restarts to monit's pace, orders their starts by
// `depends on`, and after the reload puts a monit engine in force over
// them (which runs monit's cycles: the tests, the restart-rate rules, the
// file, host and system checks), with the agent's HTTP API, alert mails and
// what it persists (monit.state). Without control files it adds nothing.
package monitext

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend"
	"github.com/vigil-bosh/vigil/internal/monit"
	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

// Host is what the daemon lends the personality.
type Host struct {
	Layout boshpath.Layout
	Log    *slog.Logger
	// Supervisor finds the supervisor of id.
	Supervisor func(supervise.ID) (*supervise.Supervisor, bool)
	// Usage is the daemon's shared pass over /proc, for monit's memory
	// figures and resource tests.
	Usage *backend.UsageCache
	// Command returns a hook that runs argv (with env) for id without
	// blocking, bounded by the daemon's life; nil for an empty argv.
	Command func(id supervise.ID, argv, env []string) func()
	// Changed wakes the daemon's watchers of changes.
	Changed func()
	// Started is when the daemon started serving (monit's uptime).
	Started func() time.Time
	// Asked, when set, is told of each action asked through monit's HTTP
	// API (the BOSH agent, monit's command line) once it has run, with
	// the service's process and what was done ("stop", "stop: failed: ...").
	Asked func(id supervise.ID, what string)
}

// Extension is the monit personality of one daemon. Its reload methods
// (Load, Wanted, Configure, Apply, Settled) must be called one reload at a
// time, in that order; the observers it installs run on supervisors'
// goroutines and never block.
type Extension struct {
	host  Host
	state stateFile
	next  *load                // read by the latest Load; nil without control files
	cur   atomic.Pointer[load] // in force, for the observers
	// The engine in force and what stops it (ending its loop, so two
	// engines never act at once), and the HTTP API, started once.
	engine     atomic.Pointer[monit.Engine]
	engineStop func()
	applied    bool // an engine was put in force since the last Settled
	settled    bool // a Settled has run: the daemon's first load is behind
	srv        *monit.Server
	srvDone    chan error
	programs   programs // the engines' programs, ended and waited for by Wait
	alerts     alertState
}

// New returns the personality for a daemon; nothing is read until Load.
func New(h Host) *Extension {
	return &Extension{host: h, state: stateFile{path: monitStatePath(h.Layout), log: h.Log, mu: &sync.Mutex{}}}
}

// Load reads the control files for a reload, given the bpm processes the
// jobs define and, by process, those its bpm.yml depends on (depends_on),
// and says whether any exist: without them every bpm process runs as it
// is, and the daemon remembers operators' stops itself; with them
// monit.state does.
func (x *Extension) Load(bpm []supervise.ID, after map[supervise.ID][]supervise.ID) (active bool, problems []control.Problem) {
	saved := x.state.load()
	since := monitrc.Since{Owners: saved.Owners}
	if cur := x.cur.Load(); cur != nil {
		since.Previous = cur.cfg
	}
	l, problems := read(x.host.Layout, since)
	if l != nil {
		problems = append(problems, l.checkBPM(bpm)...)
		l.unmonitored, l.stopping = names(saved.Unmonitored), names(saved.Stopping)
		l.after = after
	}
	x.next = l
	return l != nil, problems
}

// Wanted is what runs under the load read last: the bpm processes its
// checks start, and by id the programs it runs monit's way, each with a
// text that changes whenever the program's configuration does.
func (x *Extension) Wanted() (bpm []supervise.ID, programs map[supervise.ID]string) {
	if x.next == nil {
		return nil, nil
	}
	return x.next.run, x.next.fingerprints()
}

// Configure lays the load's settings for id onto cfg: a program's runner
// and timing, monit's tests as probes and restart limit, and an observer
// that turns the supervisor's changes into alerts. It says whether the
// supervisor begins unmonitored: the service was left not monitored, or
// its mode is manual. Call it for every supervisor the daemon makes, with
// control files or without (their alerts follow the load in force).
func (x *Extension) Configure(id supervise.ID, cfg *supervise.Config) (unmonitored bool) {
	observe := cfg.OnChange
	cfg.OnChange = func(st supervise.Status) {
		if observe != nil {
			observe(st)
		}
		x.alert(st)
	}
	l := x.next
	if l == nil {
		return false
	}
	svc := l.programs[id]
	name := l.serviceOf(id)
	if svc != nil {
		r := &monit.ProgramRunner{Service: svc, Host: hostname(), OnForeign: x.foreign(name)}
		cfg.Runner, cfg.Timing = r, r.Timing(cfg.Timing)
		if cfg.Adopt == nil {
			cfg.Adopt = r.Adopt() // the process a daemon that died left running
		}
	}
	withTiming(l, id, cfg)
	unmonitored = l.unmonitored[strings.ToLower(name)] || l.mode(id) == "manual"
	s, ok := l.cfg.Lookup(name)
	switch {
	case !ok:
	case cfg.Adopt != nil:
		l.adopted = append(l.adopted, name)
	case !unmonitored && !passive(s):
		// Started now because it does not run, as monit's first cycle
		// would: the engine starts it (and counts that start for the
		// restart-rate rules).
		l.booting = append(l.booting, name)
	}
	return unmonitored
}

// Apply puts the load read last in force once the reload's supervisors
// are in place: the engine of the previous load ends, and a new one (with
// a new incarnation) drives the services; the HTTP API starts the first
// time, serving until ctx is done. An error is a problem of the reload.
func (x *Extension) Apply(ctx context.Context) error {
	if x.engineStop != nil {
		x.engineStop()
		x.engineStop = nil
	}
	l := x.next
	x.cur.Store(l)
	if l == nil {
		x.engine.Store(nil)
		return nil
	}
	x.setAlerter(ctx, l.cfg)
	x.programs.ctx, x.programs.log = ctx, x.host.Log
	old := x.engine.Load()
	e := x.buildEngine(l, old)
	ectx, cancel := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { defer close(ran); e.Run(ectx) }()
	x.engineStop = func() { cancel(); <-ran } // an action in flight ends with ectx
	x.engine.Store(e)
	x.applied = true
	// Record the incarnation now; the not-monitored set stays as it was
	// until the first action (the new services have not started yet).
	st := x.state.load()
	st.Incarnation, st.Owners = e.Incarnation(), owners(l.cfg)
	if err := x.state.save(st); err != nil {
		x.host.Log.Error("monit state", "error", err)
	}
	err := x.serve(ctx, e)
	if old != nil { // once e answers the API: the old engine takes no action since
		e.Repost(old.Unfinished()) // the actions the reload cut short
	}
	return err
}

// Settled says the reload has done what the daemon does itself: the
// engine in force starts its services on its own (each once its
// prerequisites have, never waiting for an unrelated one). At the
// daemon's first load Settled returns once the engine's first cycle has
// run (the daemon is ready then: the services that run read running), or
// once ctx is done; at a later reload it returns at once, as monit's
// reload does not wait for a cycle.
func (x *Extension) Settled(ctx context.Context) {
	if !x.applied {
		return
	}
	x.applied = false
	first := !x.settled
	x.settled = true
	if e := x.engine.Load(); e != nil && first {
		select {
		case <-e.Checked():
		case <-ctx.Done():
		}
	}
}

// Stop ends the engine in force: no monit action runs once it returns.
func (x *Extension) Stop() {
	if x.engineStop != nil {
		x.engineStop()
		x.engineStop = nil
	}
}

// Wait returns once the HTTP API has ended (after the ctx given to Apply
// is done) with its error, and the engines' programs have ended (their
// sessions are killed then).
func (x *Extension) Wait() error {
	x.programs.wg.Wait()
	if x.srvDone == nil {
		return nil
	}
	return <-x.srvDone
}

// foreign is what the extension does when a pid file of service names a
// process that is not the service's: it logs it and mails monit's alert.
func (x *Extension) foreign(service string) func(error) {
	return func(err error) {
		x.host.Log.Warn("monit pid file names a foreign process: nothing signalled", "service", service, "error", err)
		x.send(monit.Alert{Service: service, Event: "PID failed", Action: "alert", Description: err.Error()})
	}
}

// names is a set of lower-cased service names.
func names(list []string) map[string]bool {
	out := map[string]bool{}
	for _, n := range list {
		out[strings.ToLower(n)] = true
	}
	return out
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}

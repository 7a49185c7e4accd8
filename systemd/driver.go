package systemd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/daemon"
	"github.com/vigil-bosh/vigil/job"
	"github.com/vigil-bosh/vigil/pidfile"
)

// Config configures a Driver. Zero values pick the defaults noted.
type Config struct {
	Layout     boshpath.Layout
	Jobs       []string // only these jobs; empty means all
	UnitDir    string   // where units are installed; "" means /etc/systemd/system
	RuntimeDir string   // runtime drop-ins (unmonitor); "" means /run/systemd/system
	Systemctl  string   // the systemctl binary; "" means systemctl from PATH
	Units      Options  // the translation's options (Vigil: the vigil binary)
	Version    string
	Log        *slog.Logger // nil means discard
	// Watch is how Changes learns of a change: "" (or "dbus") by systemd's
	// D-Bus signals, polling systemctl show where the system bus cannot be
	// reached; "poll" by the poll alone. Status never waits for either.
	Watch string
	// Poll is the interval of the poll; zero means 2 s.
	Poll time.Duration
	// ControlOptions are passed to the control server (e.g. a request
	// observer for the metrics).
	ControlOptions []control.ServeOption
}

// Driver runs the jobs as systemd units. It implements control.Manager.
type Driver struct {
	cfg     Config
	ctl     systemctl
	log     *slog.Logger
	started time.Time
	usage   daemon.UsageCache // resource use in statuses, one /proc pass a second
	mu      sync.Mutex        // serialises reloads and actions
	cur     atomic.Pointer[loaded]
	changes chan struct{} // replaced at each change; guarded by chMu
	chMu    sync.Mutex
	wmu     sync.Mutex
	down    map[string]bool // units an operator stopped (wanted down); guarded by wmu
	// snap is the latest status of each process ("JOB/PROC"), for monit's
	// engine, whose status reads must not wait on systemctl.
	snap atomic.Pointer[map[string]control.ProcessStatus]
}

// loaded is the configuration in force; Reload replaces it.
type loaded struct {
	jobs     map[string]*job.Job
	services []service // sorted by unit name
	problems []control.Problem
}

// service is one process's unit.
type service struct {
	job, proc, unit string
}

var _ control.Manager = (*Driver)(nil)

// New returns a driver for cfg. Nothing happens until Reload or Run.
func New(cfg Config) *Driver {
	if cfg.UnitDir == "" {
		cfg.UnitDir = "/etc/systemd/system"
	}
	if cfg.RuntimeDir == "" {
		cfg.RuntimeDir = "/run/systemd/system"
	}
	if cfg.Systemctl == "" {
		cfg.Systemctl = "systemctl"
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 2 * time.Second
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Driver{cfg: cfg, ctl: systemctl{cfg.Systemctl}, log: log, started: time.Now(),
		changes: make(chan struct{}), down: map[string]bool{}}
	d.cur.Store(&loaded{jobs: map[string]*job.Job{}})
	return d
}

// Run installs and starts the units, serves the control API on the BOSH
// root's socket and watches for changes until ctx is done. The units keep
// running after Run returns: systemd owns them.
func (d *Driver) Run(ctx context.Context) error {
	ln, err := control.Listen(d.cfg.Layout.ControlSocket())
	if err != nil {
		return err
	}
	d.started = time.Now()
	served := make(chan error, 1)
	go func() { served <- control.Serve(ctx, ln, d, 5*time.Second, d.cfg.ControlOptions...) }()
	if _, err := d.Reload(ctx); err != nil {
		d.log.Error("initial load", "error", err)
	}
	if _, err := d.Status(ctx); err != nil { // the first snapshot, for monit
		d.log.Error("status", "error", err)
	}
	monitDone, err := d.serveMonit(ctx)
	if err != nil {
		d.log.Error("monit", "error", err)
	}
	d.log.Info("supervising", "root", d.cfg.Layout.Root(), "backend", "systemd")
	d.watchChanges(ctx)
	err = <-served
	if monitDone != nil {
		if merr := <-monitDone; err == nil {
			err = merr
		}
	}
	return err
}

// Reload implements control.Manager: it regenerates the units, stops and
// removes those of processes that are gone, installs the others, reloads
// systemd when a file changed, restarts the services whose unit changed
// and starts the new ones (and, at every reload, any that is not up).
func (d *Driver) Reload(ctx context.Context) (control.ReloadResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var res control.ReloadResult
	jobs, warns, errs := job.LoadAll(d.cfg.Layout, d.cfg.Jobs)
	next := &loaded{jobs: map[string]*job.Job{}, problems: daemon.Problems(errs, warns)}
	for _, j := range jobs {
		next.jobs[j.Name] = j
	}
	// A job that failed to load keeps its previous configuration, or with
	// none, whatever units it has installed.
	prev := d.cur.Load()
	var keep []string
	for _, err := range errs {
		var le *job.LoadError
		if errors.As(err, &le) {
			keep = append(keep, d.cfg.Layout.BPMConfig(le.Job))
			if prev.jobs[le.Job] != nil {
				next.jobs[le.Job] = prev.jobs[le.Job]
			}
		}
	}
	all := make([]*job.Job, 0, len(next.jobs))
	for _, j := range next.jobs {
		all = append(all, j)
	}
	units := Units(d.cfg.Layout, all, d.cfg.Units)
	for _, j := range all {
		if !j.Errand {
			for _, p := range j.Processes {
				next.services = append(next.services, service{p.Job, p.Name, ServiceName(p.Job, p.Name)})
			}
		}
	}
	slices.SortFunc(next.services, func(a, b service) int { return strings.Compare(a.unit, b.unit) })

	stale := d.stale(units, keep)
	if len(stale) > 0 {
		if _, err := d.ctl.run(ctx, append([]string{"stop", "--"}, stale...)...); err != nil {
			next.problems = append(next.problems, control.Problem{Severity: "error", Message: err.Error()})
		}
	}
	ch, err := Install(d.cfg.UnitDir, units, keep...)
	if err != nil {
		next.problems = append(next.problems, control.Problem{Severity: "error", Message: err.Error()})
	}
	if ch.Changed() {
		if _, err := d.ctl.run(ctx, "daemon-reload"); err != nil {
			d.cur.Store(next)
			res.Problems = next.problems
			return res, fmt.Errorf("reload systemd: %w", err)
		}
	}
	written := map[string]bool{}
	for _, n := range ch.Written {
		written[n] = true
	}
	existed := map[string]bool{}
	for _, s := range prev.services {
		existed[s.unit] = true
	}
	var start, restart []string
	for _, s := range next.services {
		id := s.job + "/" + s.proc
		switch {
		case written[s.unit] && existed[s.unit]:
			restart = append(restart, s.unit)
			res.Restarted = append(res.Restarted, id)
		case written[s.unit] || !existed[s.unit]:
			start = append(start, s.unit)
			res.Started = append(res.Started, id)
		default:
			start = append(start, s.unit) // a no-op for a unit that is up
			res.Unchanged = append(res.Unchanged, id)
		}
	}
	for _, u := range stale {
		i := slices.IndexFunc(prev.services, func(s service) bool { return s.unit == u })
		if i >= 0 {
			res.Stopped = append(res.Stopped, prev.services[i].job+"/"+prev.services[i].proc)
		} else {
			res.Stopped = append(res.Stopped, u)
		}
	}
	d.setWanted(true, append(start, restart...)...)
	d.cur.Store(next)
	var failed []error
	for _, c := range []struct {
		verb  string
		units []string
	}{{"restart", restart}, {"start", start}} {
		if len(c.units) > 0 {
			if _, err := d.ctl.run(ctx, append([]string{c.verb, "--"}, c.units...)...); err != nil {
				failed = append(failed, err)
			}
		}
	}
	res.Problems = next.problems
	d.notify()
	return res, errors.Join(failed...)
}

// stale lists the generated services installed in the unit directory that
// units no longer has (those generated from a source in keep excepted).
func (d *Driver) stale(units []Unit, keep []string) []string {
	want := map[string]bool{}
	for _, u := range units {
		want[u.Name] = true
	}
	entries, _ := os.ReadDir(d.cfg.UnitDir)
	var out []string
	for _, e := range entries {
		n := e.Name()
		if want[n] || !strings.HasSuffix(n, ".service") {
			continue
		}
		if src, ok := source(filepath.Join(d.cfg.UnitDir, n)); ok && !slices.Contains(keep, src) {
			out = append(out, n)
		}
	}
	return out
}

// Status implements control.Manager with one systemctl show for every unit.
func (d *Driver) Status(ctx context.Context) (control.Status, error) {
	cur := d.cur.Load()
	st := control.Status{
		Daemon: control.DaemonInfo{PID: os.Getpid(), Version: d.cfg.Version, Root: d.cfg.Layout.Root(),
			Backend: "systemd", Started: d.started},
		Processes: []control.ProcessStatus{},
		Problems:  cur.problems,
	}
	names := make([]string, len(cur.services))
	for i, s := range cur.services {
		names[i] = s.unit
	}
	states, err := d.ctl.show(ctx, names)
	if err != nil {
		return st, control.Errorf(control.ErrFailed, "%v", err)
	}
	for _, s := range cur.services {
		st.Processes = append(st.Processes, d.processStatus(s, states[s.unit]))
	}
	if err := d.usage.Fill(st.Processes); err != nil {
		d.log.Debug("usage", "error", err)
	}
	snap := map[string]control.ProcessStatus{}
	for _, ps := range st.Processes {
		snap[ps.Job+"/"+ps.Process] = ps
	}
	d.snap.Store(&snap)
	return st, nil
}

func (d *Driver) processStatus(s service, u unitState) control.ProcessStatus {
	ps := control.ProcessStatus{
		Job: s.job, Process: s.proc, State: State(u.Active, u.Sub), Wanted: "up",
		Restarts: u.NRestarts, Since: u.Since, Unmonitored: d.unmonitored(s.unit),
	}
	if d.wantedDown(s.unit) {
		ps.Wanted = "down"
	}
	if ps.State == "running" {
		ps.PID, _ = pidfile.Read(d.cfg.Layout.PidFile(s.job, s.proc))
		// A notify unit is active only once READY=1 has come.
		ps.Ready = true
	}
	ps.LastExit = u.lastExit()
	return ps
}

// Changes returns a channel closed at the next change the watcher sees.
func (d *Driver) Changes() <-chan struct{} {
	d.chMu.Lock()
	defer d.chMu.Unlock()
	return d.changes
}

func (d *Driver) notify() {
	d.chMu.Lock()
	defer d.chMu.Unlock()
	close(d.changes)
	d.changes = make(chan struct{})
}

// watch polls the units' states every cfg.Poll and notifies on a change,
// until ctx is done. It is the only poller; Status reads systemd directly.
func (d *Driver) watch(ctx context.Context) {
	t := time.NewTicker(d.cfg.Poll)
	defer t.Stop()
	var last string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := d.Status(ctx)
		if err != nil {
			continue
		}
		var b strings.Builder
		for _, p := range st.Processes {
			fmt.Fprintf(&b, "%s/%s %s %d %d;", p.Job, p.Process, p.State, p.Restarts, p.PID)
		}
		if s := b.String(); s != last {
			last = s
			d.notify()
		}
	}
}

package systemd

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/job"
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
	// Watcher says when units may have changed, for Changes and Events;
	// nil means systemd's D-Bus signals (BusWatcher), polling systemctl
	// every Poll where the system bus cannot be reached. Status never waits
	// for it.
	Watcher Watcher
	// Poll is the interval of the poll; zero means 2 s.
	Poll time.Duration
	// ControlOptions are passed to the control server (e.g. a request
	// observer for the metrics).
	ControlOptions []control.ServeOption
}

// Driver runs the jobs as systemd units. It implements control.Manager
// and control.EventSource.
type Driver struct {
	cfg     Config
	ctl     systemctl
	log     *slog.Logger
	started time.Time
	usage   backend.UsageCache // resource use in statuses, one /proc pass a second
	mu      sync.Mutex         // serialises reloads and actions
	cur     atomic.Pointer[loaded]
	changes backend.Notifier
	events  backend.Hub
	obs     sync.Mutex // serialises refreshes, so the hub sees each unit's states in order
	last    string     // what the latest refresh saw, to notify on a change; guarded by obs
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
	texts    map[supervise.ID]string
	problems []control.Problem
}

// service is one process's unit.
type service struct {
	job, proc, unit string
}

func (s service) id() supervise.ID { return supervise.ID{Job: s.job, Process: s.proc} }

var (
	_ control.Manager     = (*Driver)(nil)
	_ control.EventSource = (*Driver)(nil)
)

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
	if cfg.Watcher == nil {
		cfg.Watcher = BusWatcher{Fallback: Poller(cfg.Poll), Log: log}
	}
	d := &Driver{cfg: cfg, ctl: systemctl{cfg.Systemctl}, log: log, started: time.Now(), down: map[string]bool{}}
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
	d.refresh(ctx) // the first snapshot, for monit, and the first events
	monitDone, err := d.serveMonit(ctx)
	if err != nil {
		d.log.Error("monit", "error", err)
	}
	d.log.Info("supervising", "root", d.cfg.Layout.Root(), "backend", "systemd")
	d.cfg.Watcher.Watch(ctx, d.unitNames, func() { d.refresh(ctx) })
	err = <-served
	if monitDone != nil {
		if merr := <-monitDone; err == nil {
			err = merr
		}
	}
	return err
}

// unitNames lists the services of the configuration in force.
func (d *Driver) unitNames() []string {
	cur := d.cur.Load()
	names := make([]string, len(cur.services))
	for i, s := range cur.services {
		names[i] = s.unit
	}
	return names
}

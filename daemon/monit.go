package daemon

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/job"
	"github.com/vigil-bosh/vigil/monitcompat"
	"github.com/vigil-bosh/vigil/monitrc"
	"github.com/vigil-bosh/vigil/supervise"
)

// monitLoad is what the monit control files decide, for one load.
type monitLoad struct {
	cfg *monitrc.Config
	// bpm maps each check process that starts through the bpm shim to the
	// bpm process it names; the native supervisor runs it.
	bpm map[string]supervise.ID // by lower-cased service name
	// programs are the other check processes, run monit's way.
	programs map[supervise.ID]*monitrc.Service
	// ids maps every process service to its supervisor.
	ids map[string]supervise.ID // by lower-cased service name
}

// BPMShim returns the job and process a start program names when it is
// the bpm shim (ROOT/jobs/bpm/bin/bpm start JOB [-p PROC]).
func BPMShim(l boshpath.Layout, p *monitrc.Program) (supervise.ID, bool) {
	if p == nil || len(p.Argv) < 3 || p.Argv[1] != "start" {
		return supervise.ID{}, false
	}
	bin := filepath.Clean(p.Argv[0])
	if bin != "/var/vcap/jobs/bpm/bin/bpm" && bin != filepath.Join(l.JobDir("bpm"), "bin", "bpm") {
		return supervise.ID{}, false
	}
	id := supervise.ID{Job: p.Argv[2], Process: p.Argv[2]}
	rest := p.Argv[3:]
	switch {
	case len(rest) == 0:
	case len(rest) == 2 && (rest[0] == "-p" || rest[0] == "--process"):
		id.Process = rest[1]
	case len(rest) == 1 && strings.HasPrefix(rest[0], "--process="):
		id.Process = strings.TrimPrefix(rest[0], "--process=")
	default:
		return supervise.ID{}, false
	}
	if boshpath.CheckName(id.Job) != nil || boshpath.CheckName(id.Process) != nil {
		return supervise.ID{}, false
	}
	return id, true
}

var jobFilePrefix = regexp.MustCompile(`^[0-9]{4}_`)

// fileJob names the job a control file belongs to: ROOT/jobs/JOB/monit,
// or NNNN_JOB.monitrc as the agent installs it.
func fileJob(path string) string {
	base := filepath.Base(path)
	if base == "monit" || strings.HasSuffix(base, ".monit") {
		return filepath.Base(filepath.Dir(path))
	}
	return jobFilePrefix.ReplaceAllString(strings.TrimSuffix(base, ".monitrc"), "")
}

// loadMonit reads the control files. It returns nil when there are none:
// then every bpm job runs, as without monit.
func (d *Daemon) loadMonit() (*monitLoad, []control.Problem) {
	cfg, found, err := monitrc.Load(d.cfg.Layout.Root())
	if err != nil {
		return nil, []control.Problem{{Severity: "error", Message: err.Error()}}
	}
	if !found {
		return nil, nil
	}
	var probs []control.Problem
	for _, p := range cfg.Problems {
		probs = append(probs, control.Problem{Severity: "error", File: p.File, Line: p.Line, Message: p.Msg})
	}
	m := &monitLoad{cfg: cfg, bpm: map[string]supervise.ID{}, programs: map[supervise.ID]*monitrc.Service{},
		ids: map[string]supervise.ID{}}
	for _, s := range cfg.Services {
		if s.Type != monitrc.TypeProcess {
			continue
		}
		key := strings.ToLower(s.Name)
		if id, ok := BPMShim(d.cfg.Layout, s.Start); ok {
			m.bpm[key], m.ids[key] = id, id
			continue
		}
		id := supervise.ID{Job: fileJob(s.File), Process: s.Name}
		if boshpath.CheckName(id.Job) != nil || boshpath.CheckName(id.Process) != nil {
			id = supervise.ID{Job: "monit", Process: strings.Map(safeRune, s.Name)}
		}
		if _, dup := m.programs[id]; dup {
			probs = append(probs, control.Problem{Severity: "error", File: s.File, Line: s.Line,
				Message: fmt.Sprintf("service %s: another service already runs as %s", s.Name, id)})
			continue
		}
		m.programs[id], m.ids[key] = s, id
	}
	return m, probs
}

func safeRune(r rune) rune {
	if r == '/' || r == 0 {
		return '_'
	}
	return r
}

// sameService reports whether a program service is unchanged, apart from
// where it was written.
func sameService(a, b *monitrc.Service) bool {
	if a == nil || b == nil {
		return false
	}
	x, y := *a, *b
	x.File, x.Line, y.File, y.Line = "", 0, "", 0
	return reflect.DeepEqual(x, y)
}

// buildEngine makes the monit engine for a load, over the supervisors of
// the tree; the engine's cycles check the other services (files, hosts,
// the system) through check units, kept from the engine before while
// their service is unchanged. booting names the services the reload
// starts because they do not run (their first start counts for the
// restart-rate rules, as in monit).
func (d *Daemon) buildEngine(m *monitLoad, old *monitcompat.Engine, booting []string, booted <-chan struct{}) *monitcompat.Engine {
	units := map[string]monitcompat.Unit{}
	unmonitored := d.readMonitState()
	for _, s := range m.cfg.Services {
		key := strings.ToLower(s.Name)
		if id, ok := m.ids[key]; ok {
			if sup, ok := d.tree.Get(id); ok {
				u := &monitcompat.SupervisorUnit{Sup: sup, Stats: d.procStats, Passive: passive(s)}
				if s.Start != nil {
					u.StartTimeout = s.Start.Timeout
				}
				if s.Stop != nil {
					u.StopTimeout = s.Stop.Timeout + 30*time.Second // the kill stages after the stop program
				}
				units[s.Name] = u
			}
			continue
		}
		if old != nil {
			if u, ok := old.Unit(s.Name); ok {
				if was, ok := old.Config().Lookup(s.Name); ok && sameService(was, s) {
					if cu, ok := u.(*monitcompat.CheckUnit); ok {
						units[s.Name] = cu
						continue
					}
				}
			}
		}
		units[s.Name] = monitcompat.NewCheckUnit(s, !unmonitored[key] && s.Mode != "manual")
	}
	inc := time.Now().Unix()
	last := d.loadMonitState().Incarnation
	if old != nil {
		last = old.Incarnation()
	}
	if inc <= last {
		inc = last + 1 // the agent waits for a different one
	}
	return monitcompat.NewEngineWith(m.cfg, units, monitcompat.EngineOptions{Started: d.started, Incarnation: inc,
		OnDone: d.actionDone, Alert: d.sendAlert, Spawn: d.spawnProgram, Booting: booting, Host: hostname(),
		Stats: d.procStats, Booted: booted, OnChange: d.changes.notify})
}

// passive reports whether the supervisor of a process service must not
// restart it: monit's mode passive, or an "if not exist" test whose action
// is not a restart (the engine runs that action).
func passive(s *monitrc.Service) bool {
	if s.Mode == "passive" {
		return true
	}
	for _, t := range s.Tests {
		if t.Kind == monitrc.TestExist && t.Action.Kind != monitrc.ActRestart && t.Action.Kind != monitrc.ActStart {
			return true
		}
	}
	return false
}

// sendAlert mails an alert of the engine's, when the control files name a
// mail server; it never blocks.
func (d *Daemon) sendAlert(a monitcompat.Alert) {
	if al := d.alerts.cur.Load(); al != nil {
		al.Send(a)
	}
}

// spawnProgram runs a program of the engine's (an exec action, a check's
// start or stop program) in a session of its own, owned by the daemon:
// bounded by the supervisors' life (the session is ended then) and waited
// for before Run returns.
func (d *Daemon) spawnProgram(p *monitrc.Program, env []string) {
	run, err := monitcompat.Spawn(p, env)
	if err != nil {
		d.log.Error("monit program", "program", p.Argv[0], "error", err)
		return
	}
	d.log.Info("monit program", "program", p.Argv[0], "pid", run.PID)
	d.commands.Go(func() {
		select {
		case err = <-run.Done:
		case <-d.treeCtx.Done():
			monitcompat.EndSession(run.PID, 0)
			err = <-run.Done
		}
		if err != nil {
			d.log.Warn("monit program", "program", p.Argv[0], "error", err)
		}
	})
}

func (d *Daemon) actionDone(svc, action string, err error) {
	if e := d.engine.Load(); e != nil {
		if werr := d.writeMonitState(e); werr != nil {
			d.log.Error("monit state", "error", werr)
		}
	}
	if err != nil {
		d.log.Error("monit action", "service", svc, "action", action, "error", err)
		return
	}
	d.log.Info("monit action", "service", svc, "action", action)
	d.changes.notify()
}

// Engine returns the monit engine in force, or nil without control files.
func (d *Daemon) Engine() *monitcompat.Engine { return d.engine.Load() }

// checkedOnly keeps the bpm processes that a check process starts through
// the shim: with control files, they decide what runs.
func checkedOnly(want map[supervise.ID]job.Process, m *monitLoad) (map[supervise.ID]job.Process, []control.Problem) {
	out := map[supervise.ID]job.Process{}
	var probs []control.Problem
	for _, s := range m.cfg.Services {
		id, ok := m.bpm[strings.ToLower(s.Name)]
		if !ok {
			continue
		}
		p, ok := want[id]
		if !ok {
			probs = append(probs, control.Problem{Severity: "error", Job: id.Job, File: s.File, Line: s.Line,
				Message: fmt.Sprintf("service %s starts bpm process %s, which no valid bpm.yml defines", s.Name, id)})
			continue
		}
		out[id] = p
	}
	return out, probs
}

// programOf returns the program service supervised as id in l, or nil.
func programOf(l *loaded, id supervise.ID) *monitrc.Service {
	if l == nil || l.monit == nil {
		return nil
	}
	return l.monit.programs[id]
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}

// swapEngine puts the monit engine of next in force (and starts the HTTP
// API the first time). Called with mu held.
func (d *Daemon) swapEngine(next *loaded, booting []string, booted <-chan struct{}) error {
	if d.engineStop != nil {
		d.engineStop()
		d.engineStop = nil
	}
	if next.monit == nil {
		d.engine.Store(nil)
		return nil
	}
	d.setAlerter(next.monit.cfg)
	e := d.buildEngine(next.monit, d.engine.Load(), booting, booted)
	ctx, cancel := context.WithCancel(d.monitCtx)
	ran := make(chan struct{})
	go func() { defer close(ran); e.Run(ctx) }()
	d.engineStop = func() { cancel(); <-ran } // an action in flight ends with ctx
	d.engine.Store(e)
	// Record the incarnation now; the not-monitored set stays as it was
	// until the first action (the new services have not started yet).
	st := d.loadMonitState()
	st.Incarnation = e.Incarnation()
	if werr := d.saveMonitState(st); werr != nil {
		d.log.Error("monit state", "error", werr)
	}
	if e.Config().HTTPD == nil {
		return nil
	}
	if d.monitSrv != nil {
		return d.monitSrv.Swap(e)
	}
	srv, err := monitcompat.NewServer(e, time.Now)
	if err != nil {
		return fmt.Errorf("monit http api: %w", err)
	}
	ln, err := net.Listen("tcp", monitcompat.Addr(e.Config().HTTPD))
	if err != nil {
		return fmt.Errorf("monit http api: %w", err)
	}
	d.monitSrv = srv
	d.monitDone = make(chan error, 1)
	go func() { d.monitDone <- srv.Serve(d.monitCtx, ln) }()
	d.log.Info("monit api", "address", ln.Addr().String())
	return nil
}

// startInOrder starts ids as startAll does, but with control files in
// waves: a service starts once everything it depends on has settled, as
// monit starts prerequisites first.
func (d *Daemon) startInOrder(ctx context.Context, m *monitLoad, ids []supervise.ID) error {
	if m == nil {
		return d.startAll(ctx, ids)
	}
	level := map[string]int{}
	var depth func(s *monitrc.Service, seen int) int
	depth = func(s *monitrc.Service, seen int) int {
		key := strings.ToLower(s.Name)
		if l, ok := level[key]; ok || seen > len(m.cfg.Services) {
			return l
		}
		l := 0
		for _, dep := range s.DependsOn {
			if p, ok := m.cfg.Lookup(dep); ok {
				l = max(l, depth(p, seen+1)+1)
			}
		}
		level[key] = l
		return l
	}
	waves := map[int][]supervise.ID{}
	top := 0
	for _, id := range ids {
		l := 0
		if name := m.serviceOf(id); name != "" {
			if s, ok := m.cfg.Lookup(name); ok {
				l = depth(s, 0)
			}
		}
		waves[l] = append(waves[l], id)
		top = max(top, l)
	}
	deps := d.cur.Load().deps // bpm.yml's depends_on orders each monit wave
	for l := 0; l <= top; l++ {
		if err := d.startWaves(ctx, deps, waves[l]); err != nil {
			return err
		}
	}
	return nil
}

package monitext

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/monit"
	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

// load is what the monit control files decide, for one reload. It is not
// changed once read.
type load struct {
	cfg *monitrc.Config
	// bpm maps each check process that starts through the bpm shim to the
	// bpm process it names; the native supervisor runs it.
	bpm map[string]supervise.ID // by lower-cased service name
	// programs are the other check processes, run monit's way.
	programs map[supervise.ID]*monitrc.Service
	// ids maps every process service to its supervisor.
	ids map[string]supervise.ID // by lower-cased service name
	// run lists the bpm processes that checks start and some bpm.yml defines.
	run []supervise.ID
	// failed gives, by lower-cased service name, why each check that
	// starts a bpm process no valid bpm.yml defines cannot start.
	failed map[string]string
	// unmonitored and stopping hold the lower-cased names monit.state
	// recorded as not monitored, and as asked to stop (a stop a daemon
	// that died may not have finished).
	unmonitored, stopping map[string]bool
	// after gives, by bpm process, those its bpm.yml depends on.
	after map[supervise.ID][]supervise.ID
	// booting names the services Configure saw that the engine starts
	// because they do not run; adopted, those found running.
	booting, adopted []string
}

// fileJob names the job a control file belongs to: ROOT/jobs/JOB/monit,
// or NNNN_JOB.monitrc as the agent installs it.
func fileJob(path string) string {
	base := filepath.Base(path)
	if base == "monit" || strings.HasSuffix(base, ".monit") {
		return filepath.Base(filepath.Dir(path))
	}
	return monitrc.TrimAgentNumber(strings.TrimSuffix(base, ".monitrc"))
}

// read reads the control files after since (what was in force: two files
// defining one name keep the definition that ran). It returns nil when
// there are none.
func read(l boshpath.Layout, since monitrc.Since) (*load, []control.Problem) {
	cfg, found, err := monitrc.LoadSince(l.Root(), since)
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
	m := &load{cfg: cfg, bpm: map[string]supervise.ID{}, programs: map[supervise.ID]*monitrc.Service{},
		ids: map[string]supervise.ID{}}
	for _, s := range cfg.Services {
		if s.Type != monitrc.TypeProcess {
			continue
		}
		key := strings.ToLower(s.Name)
		if id, ok := monit.BPMShim(l, s.Start); ok {
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

// checkBPM keeps, of the bpm processes the jobs define, those that a check
// process starts through the shim (with control files, they decide what
// runs), and reports each check that names one no valid bpm.yml defines
// (which the engine shows as a start that fails).
func (m *load) checkBPM(defined []supervise.ID) []control.Problem {
	var probs []control.Problem
	m.failed = map[string]string{}
	for _, s := range m.cfg.Services {
		key := strings.ToLower(s.Name)
		id, ok := m.bpm[key]
		if !ok {
			continue
		}
		if !slices.Contains(defined, id) {
			probs = append(probs, control.Problem{Severity: "error", Job: id.Job, File: s.File, Line: s.Line,
				Message: fmt.Sprintf("service %s starts bpm process %s, which no valid bpm.yml defines", s.Name, id)})
			m.failed[key] = fmt.Sprintf("no valid bpm.yml defines bpm process %s", id)
			continue
		}
		if !slices.Contains(m.run, id) {
			m.run = append(m.run, id)
		}
	}
	return probs
}

// fingerprints gives each program the text of its configuration, apart
// from where it was written: equal texts mean an unchanged program.
func (m *load) fingerprints() map[supervise.ID]string {
	out := map[supervise.ID]string{}
	for id, s := range m.programs {
		x := *s
		x.File, x.Line = "", 0
		b, err := json.Marshal(x)
		if err != nil { // not for these plain values; then it counts as changed
			b = fmt.Appendf(nil, "%p", s)
		}
		out[id] = string(b)
	}
	return out
}

// serviceOf names the service supervised as id, or "".
func (m *load) serviceOf(id supervise.ID) string {
	for _, s := range m.cfg.Services {
		if m.ids[strings.ToLower(s.Name)] == id {
			return s.Name
		}
	}
	return ""
}

// mode is the monit mode of the service supervised as id.
func (m *load) mode(id supervise.ID) string {
	if s, ok := m.cfg.Lookup(m.serviceOf(id)); ok {
		return s.Mode
	}
	return ""
}

// afterOf names the services whose boot starts service's waits for
// beyond its `depends on`: those running the bpm processes its own bpm
// process depends on (depends_on).
func (m *load) afterOf(service string) []string {
	var out []string
	for _, dep := range m.after[m.ids[strings.ToLower(service)]] {
		if n := m.serviceOf(dep); n != "" {
			out = append(out, n)
		}
	}
	return out
}

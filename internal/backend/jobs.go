package backend

import (
	"errors"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/job"
)

// Jobs is one reading of the jobs' configuration, for a reload.
type Jobs struct {
	// Jobs is what runs, by name: a job whose new configuration cannot be
	// used keeps the one in force.
	Jobs map[string]*job.Job
	// Failed names the jobs whose bpm.yml failed to load: what they run is
	// left as it is.
	Failed   []string
	Problems []control.Problem
	Errs     []error // the load errors, one per failed job
}

// LoadJobs reads the jobs under l (only those named, when only is not
// empty) over prev, the jobs in force, and logs each error and warning. A
// job whose bpm.yml fails to load keeps its previous configuration, and one
// whose bpm.yml now lists no processes (as a reader sees it while it is
// rewritten in place) keeps the previous one too; both say so in the
// problems. A job is removed by removing its bpm.yml.
func LoadJobs(l boshpath.Layout, only []string, prev map[string]*job.Job, log *slog.Logger) Jobs {
	jobs, warns, errs := job.LoadAll(l, only)
	out := Jobs{Jobs: map[string]*job.Job{}, Problems: Problems(errs, warns), Errs: errs}
	for _, j := range jobs {
		out.Jobs[j.Name] = j
	}
	for _, err := range errs {
		var le *job.LoadError
		if errors.As(err, &le) {
			out.Failed = append(out.Failed, le.Job)
			if prev[le.Job] != nil {
				out.Jobs[le.Job] = prev[le.Job] // keep what runs
				out.Problems = append(out.Problems, control.Problem{Severity: "error", Job: le.Job,
					Message: "the new configuration is invalid: the job keeps running with its previous one"})
			}
		}
		log.Error("configuration", "error", err)
	}
	for _, w := range warns {
		log.Warn("configuration", "warning", w.String())
	}
	out.keepEmptied(prev, log)
	return out
}

// keepEmptied keeps the previous configuration of every job whose bpm.yml
// now lists no processes although it listed some: taking the job's
// processes down on a moment's partial write would stop them for nothing.
func (js *Jobs) keepEmptied(prev map[string]*job.Job, log *slog.Logger) {
	for name, j := range js.Jobs {
		was := prev[name]
		if len(j.Processes) > 0 || was == nil || len(was.Processes) == 0 {
			continue
		}
		js.Jobs[name] = was
		msg := "bpm.yml lists no processes (is it being written?): the job keeps running with its previous configuration"
		js.Problems = append(js.Problems, control.Problem{Severity: "error", Job: name, File: j.ConfigPath, Message: msg})
		log.Error("configuration", "job", name, "error", msg)
	}
}

// Problems turns load errors and warnings into control.Problems, one per
// configuration error so that each names its file, line and field.
func Problems(errs []error, warns []job.Warning) []control.Problem {
	var out []control.Problem
	for _, err := range errs {
		name := ""
		var le *job.LoadError
		if errors.As(err, &le) {
			name = le.Job
		}
		var list job.ErrorList
		if errors.As(err, &list) {
			for _, ce := range list {
				out = append(out, control.Problem{Severity: "error", Job: name, File: ce.File,
					Line: ce.Line, Field: ce.Field, Message: ce.Msg})
			}
			continue
		}
		msg := err.Error()
		if le != nil {
			msg = le.Err.Error()
		}
		out = append(out, control.Problem{Severity: "error", Job: name, Message: msg})
	}
	for _, w := range warns {
		out = append(out, control.Problem{Severity: "warning", Job: jobOfFile(w.File), File: w.File,
			Line: w.Line, Field: w.Field, Message: w.Msg})
	}
	return out
}

// jobOfFile recovers the job name from ROOT/jobs/JOB/config/bpm.yml.
func jobOfFile(path string) string { return filepath.Base(filepath.Dir(filepath.Dir(path))) }

// ConfigEvent is the event of a job whose configuration failed to load.
func ConfigEvent(err error) control.Event {
	ev := control.Event{Kind: control.EventConfigError, Message: err.Error()}
	var le *job.LoadError
	if errors.As(err, &le) {
		ev.Job = le.Job
	}
	return ev
}

// Unsupervised are the warnings for what jobs define and nothing runs
// while monit control files decide what runs (run): a job none of whose
// processes a check starts, and a process of a job that runs others.
// Errands are left out: nothing starts them anyway.
func Unsupervised(jobs map[string]*job.Job, run map[supervise.ID]job.Process) []control.Problem {
	const onlyMonit = "once jobs have monit files, only what their checks start runs, as under monit"
	var out []control.Problem
	for _, name := range slices.Sorted(maps.Keys(jobs)) {
		j := jobs[name]
		if j.Errand {
			continue
		}
		var left []string
		for _, p := range j.Processes {
			if _, ok := run[supervise.ID{Job: name, Process: p.Name}]; !ok {
				left = append(left, p.Name)
			}
		}
		switch {
		case len(left) == 0:
		case len(left) == len(j.Processes):
			out = append(out, control.Problem{Severity: "warning", Job: name, Kind: control.ProblemUnsupervised,
				Message: "not supervised: no monit file starts it (" + onlyMonit + ")"})
		default:
			for _, p := range left {
				out = append(out, control.Problem{Severity: "warning", Job: name, Process: p, Kind: control.ProblemUnsupervised,
					Message: "not supervised: no monit check starts it with bpm start " + name + " -p " + p + " (" + onlyMonit + ")"})
			}
		}
	}
	return out
}

package backend

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/suggest"
	"github.com/vigil-bosh/vigil/job"
)

// CheckTarget checks the names of an action's target (a process name may
// be empty: every process of the job), with a bad-request error.
func CheckTarget(jobName, procName string) error {
	if err := boshpath.CheckName(jobName); err != nil {
		return control.Errorf(control.ErrBadRequest, "job: %v", err)
	}
	if procName != "" {
		if err := boshpath.CheckName(procName); err != nil {
			return control.Errorf(control.ErrBadRequest, "process: %v", err)
		}
	}
	return nil
}

// KnownAction reports whether a is one of the control API's actions.
func KnownAction(a string) bool {
	switch a {
	case control.ActionStart, control.ActionStop, control.ActionRestart, control.ActionMonitor, control.ActionUnmonitor:
		return true
	}
	return false
}

// SignalOf checks a signal request as both back ends take it: a known
// signal, for one named process.
func SignalOf(req control.SignalRequest) (syscall.Signal, error) {
	sig, err := control.ParseSignal(req.Signal)
	if err != nil {
		return 0, control.Errorf(control.ErrBadRequest, "%v", err)
	}
	if req.Process == "" {
		return 0, control.Errorf(control.ErrBadRequest, "signal needs a process")
	}
	if err := CheckTarget(req.Job, req.Process); err != nil {
		return 0, err
	}
	return sig, nil
}

// NotFound is the error for a target that names no supervised process,
// saying why from the configuration in force (its jobs and problems): the
// job's configuration has errors (ErrConfig, with them), it is left
// unsupervised by monit's control files, it is an errand (it runs only on
// demand), or there is no such job or process, with the name meant when
// one is close and the names otherwise.
func NotFound(l boshpath.Layout, jobs map[string]*job.Job, problems []control.Problem, jobName, procName string) error {
	var errs []string
	for _, p := range problems {
		if p.Job == jobName && p.Severity == "error" {
			errs = append(errs, ProblemText(p))
		}
	}
	if len(errs) > 0 {
		return control.Errorf(control.ErrConfig, "job %s cannot run: its configuration has errors: %s", jobName, strings.Join(errs, "; "))
	}
	if i := slices.IndexFunc(problems, func(p control.Problem) bool {
		return p.Kind == control.ProblemUnsupervised && p.Job == jobName && (p.Process == "" || p.Process == procName)
	}); i >= 0 {
		return control.Errorf(control.ErrNotFound, "%s", ProblemText(problems[i]))
	}
	j, ok := jobs[jobName]
	switch {
	case !ok:
		return control.Errorf(control.ErrNotFound, "no job %s is supervised (looked for %s)%s", jobName, l.BPMConfig(jobName),
			suggest.Phrase(jobName, slices.Sorted(maps.Keys(jobs)), "jobs"))
	case j.Errand:
		return control.Errorf(control.ErrNotFound, "job %s is an errand: run it with bpm run", jobName)
	}
	var names []string
	for _, p := range j.Processes {
		names = append(names, p.Name)
	}
	return control.Errorf(control.ErrNotFound, "process %q not present in job configuration (%s)%s", procName, j.ConfigPath,
		suggest.Phrase(procName, names, "processes of "+jobName))
}

// ProblemText is a problem as one line: "FILE:LINE: FIELD: message", or
// with the job or process it concerns where it names no file.
func ProblemText(p control.Problem) string {
	var b strings.Builder
	switch {
	case p.File != "":
		b.WriteString(p.File)
		if p.Line > 0 {
			b.WriteString(":" + strconv.Itoa(p.Line))
		}
		b.WriteString(": ")
	case p.Process != "":
		b.WriteString("process " + p.Job + "/" + p.Process + ": ")
	case p.Job != "":
		b.WriteString("job " + p.Job + ": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

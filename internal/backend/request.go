package backend

import (
	"slices"
	"syscall"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
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
// job's configuration has errors, there is no such job, it is an errand
// (it runs only on demand), or it has no such process.
func NotFound(l boshpath.Layout, jobs map[string]*job.Job, problems []control.Problem, jobName, procName string) error {
	if i := slices.IndexFunc(problems, func(p control.Problem) bool {
		return p.Job == jobName && p.Severity == "error"
	}); i >= 0 {
		return control.Errorf(control.ErrNotFound, "job %s has configuration errors (%s)", jobName, problems[i].File)
	}
	j, ok := jobs[jobName]
	switch {
	case !ok:
		return control.Errorf(control.ErrNotFound, "no job %s is supervised (looked for %s)", jobName, l.BPMConfig(jobName))
	case j.Errand:
		return control.Errorf(control.ErrNotFound, "job %s is an errand: run it with bpm run", jobName)
	}
	return control.Errorf(control.ErrNotFound, "process %q not present in job configuration (%s)", procName, j.ConfigPath)
}

package backend

import (
	"syscall"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
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

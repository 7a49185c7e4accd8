package backend

import (
	"context"
	"os/exec"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/health"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/supervise/restart"
	"github.com/vigil-bosh/vigil/job"
)

// Supervision is how a bpm process is supervised, the same on both back
// ends: base (the back end's stop ladder and restart policy) with the
// process's shutdown signal, its restart key laid over the policy, its
// notification, and its probes. start starts an exec probe's command
// inside the process's isolation (launch.Runner.StartInside).
func Supervision(p job.Process, l boshpath.Layout, base supervise.Timing, start func(*exec.Cmd) error) (supervise.Timing, []supervise.Probe) {
	t := base
	t.StopSignal = p.ShutdownSignal
	t.Restart = RestartPolicy(t.Restart, p.Restart)
	t.Health.Notify = p.Health.Notify != ""
	return t, ProbesOf(p, l, start) // supervise.New derives the thresholds from them
}

// ProbesOf turns a process's health key into a supervisor's probes. An exec
// probe runs with the process's environment and working directory, and
// inside its isolation when it has one (start starts it there).
func ProbesOf(p job.Process, l boshpath.Layout, start func(*exec.Cmd) error) []supervise.Probe {
	var out []supervise.Probe
	roles := []struct {
		role supervise.ProbeRole
		spec *job.ProbeSpec
	}{{supervise.Startup, p.Health.Startup}, {supervise.Liveness, p.Health.Liveness}, {supervise.Readiness, p.Health.Readiness}}
	for _, r := range roles {
		if r.spec == nil {
			continue
		}
		hp := healthProbe(r.spec, p, l)
		if hp.Exec != nil {
			hp.Exec.Start = start
		}
		timeout := r.spec.Timeout
		out = append(out, supervise.Probe{
			Role: r.role, Period: r.spec.Period, Timeout: timeout, InitialDelay: r.spec.InitialDelay,
			FailureThreshold: r.spec.FailureThreshold, SuccessThreshold: r.spec.SuccessThreshold,
			Check: func(ctx context.Context) supervise.ProbeResult {
				res := hp.Check(ctx, timeout)
				return supervise.ProbeResult{OK: res.OK, Latency: res.Latency, Message: res.Message, At: res.At}
			},
		})
	}
	return out
}

func healthProbe(s *job.ProbeSpec, p job.Process, l boshpath.Layout) health.Probe {
	var hp health.Probe
	switch {
	case s.HTTP != nil:
		h := s.HTTP
		hp.HTTP = &health.HTTP{Host: h.Host, Port: h.Port, Path: h.Path, Method: h.Method, Headers: h.Headers,
			StatusMin: h.StatusMin, StatusMax: h.StatusMax, Body: h.Body}
	case s.TCP != nil:
		hp.TCP = &health.TCP{Host: s.TCP.Host, Port: s.TCP.Port}
	case s.Unix != "":
		hp.Unix = s.Unix
	case len(s.Exec) > 0:
		hp.Exec = &health.Exec{Argv: s.Exec, Env: p.Environ(l), Dir: workdirOf(p, l)}
	}
	return hp
}

func workdirOf(p job.Process, l boshpath.Layout) string {
	if p.Workdir != "" {
		return p.Workdir
	}
	return l.JobDir(p.Job)
}

// RestartPolicy lays a process's restart key over a default policy (the
// daemon's; the systemd back end's, which maps what systemd can express).
func RestartPolicy(base restart.Policy, r job.RestartSpec) restart.Policy {
	p := base
	switch r.Policy {
	case "always":
		p.Mode = restart.Always
	case "on-failure":
		p.Mode = restart.OnFailure
	case "never":
		p.Mode = restart.Never
	}
	if r.Backoff.Initial > 0 {
		p.Initial = r.Backoff.Initial
	}
	if r.Backoff.Max > 0 {
		p.Max = r.Backoff.Max
	}
	if r.Backoff.ResetAfter > 0 {
		p.ResetAfter = r.Backoff.ResetAfter
	}
	if r.Limit.Count > 0 {
		p.Limit = restart.Limit{Count: r.Limit.Count, Within: r.Limit.Within, Exec: r.Limit.Exec}
		switch r.Limit.Then {
		case "leave-running":
			p.Limit.Then = restart.LeaveRunning
		case "exec":
			p.Limit.Then = restart.Exec
		}
	}
	return p
}

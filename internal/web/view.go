package web

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/control"
)

// statusView is what the "status" template renders: the daemon, the
// BOSH instance it runs on, its configuration problems and every job with
// its processes.
type statusView struct {
	Daemon   control.DaemonInfo
	Host     string
	Instance instance
	Up       string // the daemon's uptime
	Token    string // the CSRF token the forms carry
	Graphs   bool   // a history feeds the graphs
	Problems []control.Problem
	// Summary counts the problems for the line that stands for them when
	// they are folded (a phone folds them): "1 error, 2 warnings".
	Summary string
	// Shared are the warnings every process has (isolation the host
	// cannot give, say): said once, not on each process.
	Shared []string
	Jobs   []jobView
	Error  string // the status could not be read
}

// jobView is one job: its processes in status order.
type jobView struct {
	Name      string
	Token     string
	Running   int
	Processes []procView
	can       can // what its buttons may do: what any of its processes may
}

// procView is one process, every figure already formatted.
type procView struct {
	Job, Process string
	Token        string
	State        string
	// Why says what a state does not: "by an operator" for a stop that
	// was asked for, "not restarted" for an exit the policy leaves down,
	// "gave up" for a failure.
	Why         string
	Unmonitored bool
	Unisolated  bool // isolation: host: in the host's namespaces, not bpm's sandbox
	PID         string
	Uptime      string // "" unless running
	AgeMS       int64  // age of Uptime at render, for the page's ticking clock
	RetryIn     string // in backoff: the time to the next start
	RetryInMS   int64
	Restarts    int
	LastExit    string
	ExitAgo     string // the last exit's age
	ExitAgeMS   int64
	Health      string
	Readiness   string // "ready", "not ready", or "" when not up
	Probes      []probeView
	Memory      string
	MemoryLimit string // "" without limits.memory
	LimitBytes  int64  // the same in bytes, for the memory graph
	CPU         string
	Warnings    []string
	Dropped     string // "" when nothing was dropped
	can         can
}

// probeView is one probe's latest result, shown on every screen size.
type probeView struct {
	Text string
	OK   bool
}

// can is which of start, stop and restart make sense in a state: start
// unless it is up and kept up; stop and restart unless nothing runs and
// it is wanted down (a stop of a failed process still says "leave it
// down", which its wanted-state metric and the next daemon heed).
type can struct{ start, stop, restart bool }

func canOf(p control.ProcessStatus) can {
	up := p.Wanted == "up" && !p.Unmonitored && (p.State == "running" || p.State == "starting")
	down := (p.State == "stopped" || p.State == "failed") && p.Wanted == "down"
	return can{start: !up, stop: !down, restart: !down}
}

func (c can) or(d can) can { return can{c.start || d.start, c.stop || d.stop, c.restart || d.restart} }

// target is what an action form names: a job, or one of its processes,
// and which of its buttons are enabled.
type target struct {
	Token, Job, Process        string
	NoStart, NoStop, NoRestart bool
}

// Target is the job's action form.
func (j jobView) Target() target { return j.can.target(j.Token, j.Name, "") }

// Target is the process's action form.
func (p procView) Target() target { return p.can.target(p.Token, p.Job, p.Process) }

func (c can) target(token, job, proc string) target {
	return target{Token: token, Job: job, Process: proc, NoStart: !c.start, NoStop: !c.stop, NoRestart: !c.restart}
}

// spark is a small graph's placeholder, which the page's script draws:
// the series of a process ("JOB/PROC") or the sum of a job's ("JOB").
type spark struct{ Key, Metric, Label string }

func sparkOf(key, metric, label string) spark { return spark{key, metric, label + ", last hour"} }

// cpuSample is a process's CPU time at one render, for the next render's
// rate. An event stream keeps the samples of its latest render.
type cpuSample struct {
	pid     int
	seconds float64
	at      time.Time
}

// buildView turns a status into what the templates show. prev holds the
// CPU samples of the previous render of the same stream (nil for none);
// the samples of this render are returned for the next.
func buildView(st control.Status, token string, now time.Time, prev map[string]cpuSample) (statusView, map[string]cpuSample) {
	v := statusView{Daemon: st.Daemon, Token: token, Problems: st.Problems}
	v.Host, _ = os.Hostname()
	if !st.Daemon.Started.IsZero() {
		v.Up = formatDuration(now.Sub(st.Daemon.Started))
	}
	samples := map[string]cpuSample{}
	index := map[string]int{}
	for _, ps := range st.Processes {
		i, ok := index[ps.Job]
		if !ok {
			i = len(v.Jobs)
			index[ps.Job] = i
			v.Jobs = append(v.Jobs, jobView{Name: ps.Job, Token: token})
		}
		pv := procViewOf(ps, token, now)
		if ps.State == "running" {
			v.Jobs[i].Running++
		}
		if u := ps.Usage; u != nil {
			key := ps.Job + "/" + ps.Process
			s := cpuSample{pid: ps.PID, seconds: u.CPUSeconds, at: now}
			if p, ok := prev[key]; ok && p.pid == s.pid && now.After(p.at) && s.seconds >= p.seconds {
				pv.CPU += fmt.Sprintf(" (%.0f%%)", 100*(s.seconds-p.seconds)/now.Sub(p.at).Seconds())
			}
			samples[key] = s
		}
		v.Jobs[i].can = v.Jobs[i].can.or(pv.can)
		v.Jobs[i].Processes = append(v.Jobs[i].Processes, pv)
	}
	v.Summary = problemSummary(st.Problems)
	v.shareWarnings(st.Processes)
	return v, samples
}

// shareWarnings moves the warnings every process has (with more than
// one process) out of each process's notes into Shared.
func (v *statusView) shareWarnings(ps []control.ProcessStatus) {
	if len(ps) < 2 {
		return
	}
	for _, w := range ps[0].Warnings {
		if !slices.ContainsFunc(ps, func(p control.ProcessStatus) bool { return !slices.Contains(p.Warnings, w) }) {
			v.Shared = append(v.Shared, w)
		}
	}
	for i := range v.Jobs {
		for j := range v.Jobs[i].Processes {
			p := &v.Jobs[i].Processes[j]
			p.Warnings = slices.DeleteFunc(slices.Clone(p.Warnings), func(w string) bool { return slices.Contains(v.Shared, w) })
		}
	}
}

// problemSummary counts problems: "1 error, 2 warnings (2 not
// supervised)"; "" for none.
func problemSummary(probs []control.Problem) string {
	var errs, warns, unsupervised int
	for _, p := range probs {
		if p.Severity == "error" {
			errs++
		} else {
			warns++
		}
		if p.Kind == control.ProblemUnsupervised {
			unsupervised++
		}
	}
	var parts []string
	for _, c := range []struct {
		n    int
		word string
	}{{errs, "error"}, {warns, "warning"}} {
		if c.n > 0 {
			parts = append(parts, plural(c.n, c.word))
		}
	}
	s := strings.Join(parts, ", ")
	if unsupervised > 0 {
		s += fmt.Sprintf(" (%d not supervised)", unsupervised)
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// procViewOf formats one process's status at now.
func procViewOf(ps control.ProcessStatus, token string, now time.Time) procView {
	pv := procView{Job: ps.Job, Process: ps.Process, Token: token, State: ps.State, Unmonitored: ps.Unmonitored,
		Restarts: ps.Restarts, Health: ps.Health, Warnings: ps.Warnings, can: canOf(ps), Unisolated: ps.Isolation == "host",
		PID: "—", LastExit: "—", Memory: "—", CPU: "—"}
	switch {
	case ps.State == "stopped" && ps.Wanted == "down":
		pv.Why = "by an operator"
	case ps.State == "stopped":
		pv.Why = "not restarted"
	case ps.State == "failed":
		pv.Why = "gave up"
	}
	if ps.PID > 0 {
		pv.PID = fmt.Sprint(ps.PID)
	}
	if ps.State == "running" && !ps.Since.IsZero() {
		age := now.Sub(ps.Since)
		pv.Uptime, pv.AgeMS = formatDuration(age), age.Milliseconds()
	}
	if ps.State == "backoff" && !ps.RetryAt.IsZero() {
		in := max(ps.RetryAt.Sub(now), 0)
		pv.RetryIn, pv.RetryInMS = formatSeconds(in.Seconds()), in.Milliseconds()
	}
	if ps.State == "running" || ps.State == "starting" {
		pv.Readiness = "not ready"
		if ps.Ready {
			pv.Readiness = "ready"
		}
	}
	if e := ps.LastExit; e != nil {
		pv.LastExit = e.Description
		if !e.At.IsZero() {
			age := now.Sub(e.At)
			pv.ExitAgo, pv.ExitAgeMS = formatDuration(age)+" ago", age.Milliseconds()
		}
	}
	for _, p := range ps.Probes {
		pv.Probes = append(pv.Probes, probeView{Text: probeText(p), OK: p.OK})
	}
	if u := ps.Usage; u != nil {
		pv.Memory, pv.CPU = formatBytes(u.RSSBytes), formatCPU(u.CPUSeconds)
	}
	if ps.MemoryLimitBytes > 0 {
		pv.MemoryLimit, pv.LimitBytes = formatBytes(ps.MemoryLimitBytes), ps.MemoryLimitBytes
	}
	if o := ps.Output; o.DroppedStdout > 0 || o.DroppedStderr > 0 {
		pv.Dropped = fmt.Sprintf("dropped output: %s of stdout, %s of stderr", formatBytes(o.DroppedStdout), formatBytes(o.DroppedStderr))
	}
	return pv
}

func probeText(p control.ProbeResult) string {
	ok := "ok"
	if !p.OK {
		ok = fmt.Sprintf("failing (%d in a row)", p.Failures)
	}
	s := fmt.Sprintf("%s: %s, %.1f ms", p.Role, ok, p.LatencyMS)
	if p.Message != "" {
		s += ": " + p.Message
	}
	return s
}

package web

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/control"
)

// statusView is what the "status" template renders: the daemon, its
// configuration problems and every job with its processes.
type statusView struct {
	Daemon   control.DaemonInfo
	Host     string
	Up       string // the daemon's uptime
	Token    string // the CSRF token the forms carry
	Problems []control.Problem
	Jobs     []jobView
	Error    string // the status could not be read
}

// jobView is one job: its processes in status order.
type jobView struct {
	Name      string
	Token     string
	Running   int
	Processes []procView
}

// target is what an action form names: a job, or one of its processes.
type target struct{ Token, Job, Process string }

// Target is the job's action form.
func (j jobView) Target() target { return target{Token: j.Token, Job: j.Name} }

// Target is the process's action form.
func (p procView) Target() target { return target{Token: p.Token, Job: p.Job, Process: p.Process} }

// procView is one process, every figure already formatted.
type procView struct {
	Job, Process string
	Token        string
	State        string
	Unmonitored  bool
	PID          string
	Uptime       string // "" unless running
	AgeMS        int64  // age of Uptime at render, for the page's ticking clock
	Restarts     int
	LastExit     string
	Health       string
	Readiness    string // "ready", "not ready", or "" when not up
	Probes       []string
	Memory       string
	CPU          string
	Warnings     []string
	Dropped      string // "" when nothing was dropped
}

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
		pv := procView{Job: ps.Job, Process: ps.Process, Token: token, State: ps.State, Unmonitored: ps.Unmonitored,
			Restarts: ps.Restarts, Health: ps.Health, Warnings: ps.Warnings,
			PID: "—", LastExit: "—", Memory: "—", CPU: "—"}
		if ps.PID > 0 {
			pv.PID = fmt.Sprint(ps.PID)
		}
		if ps.State == "running" && !ps.Since.IsZero() {
			age := now.Sub(ps.Since)
			pv.Uptime, pv.AgeMS = formatDuration(age), age.Milliseconds()
			v.Jobs[i].Running++
		}
		if ps.State == "running" || ps.State == "starting" {
			pv.Readiness = "not ready"
			if ps.Ready {
				pv.Readiness = "ready"
			}
		}
		if ps.LastExit != nil {
			pv.LastExit = ps.LastExit.Description
		}
		for _, p := range ps.Probes {
			pv.Probes = append(pv.Probes, probeText(p))
		}
		if u := ps.Usage; u != nil {
			pv.Memory = formatBytes(u.RSSBytes)
			pv.CPU = formatCPU(u.CPUSeconds)
			key := ps.Job + "/" + ps.Process
			s := cpuSample{pid: ps.PID, seconds: u.CPUSeconds, at: now}
			if p, ok := prev[key]; ok && p.pid == s.pid && now.After(p.at) && s.seconds >= p.seconds {
				pv.CPU += fmt.Sprintf(" (%.0f%%)", 100*(s.seconds-p.seconds)/now.Sub(p.at).Seconds())
			}
			samples[key] = s
		}
		if o := ps.Output; o.DroppedStdout > 0 || o.DroppedStderr > 0 {
			pv.Dropped = fmt.Sprintf("dropped output: %s of stdout, %s of stderr", formatBytes(o.DroppedStdout), formatBytes(o.DroppedStderr))
		}
		v.Jobs[i].Processes = append(v.Jobs[i].Processes, pv)
	}
	return v, samples
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

// stateLabel is a state's CSS class: one of a fixed set, whatever the
// backend says.
func stateLabel(state string) string {
	switch state {
	case "running", "starting", "backoff", "stopping", "stopped", "failed":
		return "state-" + state
	}
	return "state-other"
}

// formatDuration shows the two largest units: 3d 4h, 4h 12m, 12m 5s, 5s.
func formatDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d / time.Second)
	parts := []struct {
		n    int64
		unit string
	}{{s / 86400, "d"}, {s % 86400 / 3600, "h"}, {s % 3600 / 60, "m"}, {s % 60, "s"}}
	for i, p := range parts[:3] {
		if p.n > 0 {
			return fmt.Sprintf("%d%s %d%s", p.n, p.unit, parts[i+1].n, parts[i+1].unit)
		}
	}
	return fmt.Sprintf("%ds", s)
}

// formatCPU shows CPU time: 0.03 s, 12.5 s, 3m 20s.
func formatCPU(sec float64) string {
	switch {
	case sec < 10:
		return fmt.Sprintf("%.2f s", sec)
	case sec < 60:
		return fmt.Sprintf("%.1f s", sec)
	}
	return formatDuration(time.Duration(sec * float64(time.Second)))
}

// formatBytes shows a size in binary units with one decimal.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// problemText is a problem as file:line: field: message.
func problemText(p control.Problem) string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d", p.Line)
		}
		b.WriteString(": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

package metrics

import (
	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/promtext"
)

// states are the values of vigil_process_state's state label.
func states() [6]string {
	return [...]string{"starting", "running", "backoff", "stopping", "stopped", "failed"}
}

// Labels of every per-process series. They are not job and process:
// Prometheus puts its scrape job's name in job on every series it scrapes
// (and renames a target's own job to exported_job).
const (
	labelJob     = "bosh_job"
	labelProcess = "bosh_process"
)

// families are the per-process metrics, labelled bosh_job and
// bosh_process, in one exposition.
type families struct {
	up, state, ready, wanted, restarts, exit, exits, start, cpu, rss, memLimit, fds, tasks, probeOK, probeLat,
	dropped, rotFailed, isolation *promtext.Family
}

func newFamilies(s *promtext.Set) families {
	return families{
		up:       s.Gauge("vigil_process_up", "1 when the process runs, else 0."),
		state:    s.Gauge("vigil_process_state", "1 for the process's current state, 0 for the others."),
		ready:    s.Gauge("vigil_process_ready", "1 when the process runs and is ready."),
		wanted:   s.Gauge("vigil_process_wanted_up", "1 when vigil keeps the process up (it is wanted up and monitored), 0 when it was stopped or unmonitored on purpose."),
		restarts: s.Counter("vigil_process_restarts_total", "Automatic restarts by the current supervisor."),
		exit:     s.Gauge("vigil_process_last_exit_code", "Exit code of the last exit; 128+N after signal N. Absent before the first exit or when the process never ran."),
		exits:    s.Counter("vigil_process_exits_total", "Exits seen by these metrics, by reason: success (code 0), failure (another code), signal, oom (the kernel's OOM killer), stop (ended by a stop that was asked for), spawn_error (it could not be started)."),
		start:    s.Gauge("vigil_process_start_time_seconds", "Unix time the running process came up."),
		cpu:      s.Counter("vigil_process_cpu_seconds_total", "User and system CPU of the running process and its descendants."),
		rss:      s.Gauge("vigil_process_resident_memory_bytes", "Resident memory of the running process and its descendants."),
		memLimit: s.Gauge("vigil_process_memory_limit_bytes", "The process's limits.memory; absent without one."),
		fds:      s.Gauge("vigil_process_open_fds", "Descriptors open in the running executable."),
		tasks:    s.Gauge("vigil_process_tree_processes", "Processes in the running executable's tree: it and its descendants."),
		probeOK:  s.Gauge("vigil_process_probe_success", "1 when the latest result of the probe passed, else 0."),
		probeLat: s.Gauge("vigil_process_probe_latency_seconds", "How long the latest check of the probe took."),
		dropped:  s.Counter("vigil_process_output_dropped_bytes_total", "Output the log could not take, by stream."),
		rotFailed: s.Counter("vigil_process_log_rotation_failures_total",
			"Rotations of the process's logs (the logs key) that failed; the output went on into the file it had."),
		isolation: s.Gauge("vigil_process_isolation_info", "Always 1: the isolation bpm.yml asks for the process, sandbox (bpm's) or host (unisolated, in the host's namespaces). Absent for what is not a bpm process."),
	}
}

// addProcesses adds what the status st says: each process's series (its
// exits by reason from exitsOf), the configuration problems, the build.
func addProcesses(s *promtext.Set, st control.Status, b build, exitsOf func(job, process string) [reasonCount]int) {
	s.Gauge("vigil_build_info", "Always 1: the daemon's version, the revision it was built from and the Go that built it, and its back end.").
		Add(1, "version", st.Daemon.Version, "revision", b.revision, "goversion", b.goVersion, "backend", st.Daemon.Backend)
	f := newFamilies(s)
	for _, p := range st.Processes {
		f.add(p, exitsOf(p.Job, p.Process))
	}
	bySeverity := map[string]int{"error": 0, "warning": 0}
	for _, p := range st.Problems {
		bySeverity[p.Severity]++
	}
	problems := s.Gauge("vigil_config_problems", "Configuration problems in force, by severity.")
	for sev, n := range bySeverity {
		problems.Add(float64(n), "severity", sev)
	}
}

// add adds the series of one process.
func (f families) add(p control.ProcessStatus, exits [reasonCount]int) {
	k := key{p.Job, p.Process}
	running := p.State == "running"
	k.add(f.up, bool01(running))
	for _, s := range states() {
		k.addWith(f.state, bool01(p.State == s), "state", s)
	}
	k.add(f.ready, bool01(p.Ready))
	k.add(f.wanted, bool01(p.Wanted == "up" && !p.Unmonitored))
	k.add(f.restarts, float64(p.Restarts))
	if e := p.LastExit; e != nil && e.Error == "" {
		code := e.Code
		if e.Signal != "" {
			code = 128 + int(unix.SignalNum(e.Signal))
		}
		k.add(f.exit, float64(code))
	}
	for r := range reasonCount {
		k.addWith(f.exits, float64(exits[r]), "reason", reason(r).String())
	}
	if running && !p.Since.IsZero() {
		k.add(f.start, float64(p.Since.UnixMilli())/1000)
	}
	if u := p.Usage; u != nil {
		k.add(f.cpu, u.CPUSeconds)
		k.add(f.rss, float64(u.RSSBytes))
		k.add(f.fds, float64(u.OpenFDs))
		k.add(f.tasks, float64(u.Processes))
	}
	if p.MemoryLimitBytes > 0 {
		k.add(f.memLimit, float64(p.MemoryLimitBytes))
	}
	if p.Isolation != "" {
		k.addWith(f.isolation, 1, "isolation", p.Isolation)
	}
	for _, r := range p.Probes {
		k.addWith(f.probeOK, bool01(r.OK), "role", r.Role)
		k.addWith(f.probeLat, r.LatencyMS/1000, "role", r.Role)
	}
	k.addWith(f.dropped, float64(p.Output.DroppedStdout), "stream", "stdout")
	k.addWith(f.dropped, float64(p.Output.DroppedStderr), "stream", "stderr")
	k.add(f.rotFailed, float64(p.Output.RotationFailures))
}

// key is a process's labels.
type key struct{ job, process string }

func (k key) add(f *promtext.Family, v float64) { f.Add(v, labelJob, k.job, labelProcess, k.process) }

// addWith adds a series with one label more.
func (k key) addWith(f *promtext.Family, v float64, name, value string) {
	f.Add(v, labelJob, k.job, labelProcess, k.process, name, value)
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

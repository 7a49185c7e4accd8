package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/control"
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

// descs are the per-process metrics, labelled bosh_job and bosh_process,
// and the daemon's build.
type descs struct {
	up, state, ready, wanted, restarts, exit, exits, start, cpu, rss, memLimit, fds, tasks, probeOK, probeLat,
	dropped, problems, build *prometheus.Desc
}

func newDescs() descs {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, append([]string{labelJob, labelProcess}, labels...), nil)
	}
	return descs{
		up:       desc("vigil_process_up", "1 when the process runs, else 0."),
		state:    desc("vigil_process_state", "1 for the process's current state, 0 for the others.", "state"),
		ready:    desc("vigil_process_ready", "1 when the process runs and is ready."),
		wanted:   desc("vigil_process_wanted_up", "1 when vigil keeps the process up (it is wanted up and monitored), 0 when it was stopped or unmonitored on purpose."),
		restarts: desc("vigil_process_restarts_total", "Automatic restarts by the current supervisor."),
		exit:     desc("vigil_process_last_exit_code", "Exit code of the last exit; 128+N after signal N. Absent before the first exit or when the process never ran."),
		exits:    desc("vigil_process_exits_total", "Exits seen by these metrics, by reason: success (code 0), failure (another code), signal, oom (the kernel's OOM killer), stop (ended by a stop that was asked for), spawn_error (it could not be started).", "reason"),
		start:    desc("vigil_process_start_time_seconds", "Unix time the running process came up."),
		cpu:      desc("vigil_process_cpu_seconds_total", "User and system CPU of the running process and its descendants."),
		rss:      desc("vigil_process_resident_memory_bytes", "Resident memory of the running process and its descendants."),
		memLimit: desc("vigil_process_memory_limit_bytes", "The process's limits.memory; absent without one."),
		fds:      desc("vigil_process_open_fds", "Descriptors open in the running executable."),
		tasks:    desc("vigil_process_tree_processes", "Processes in the running executable's tree: it and its descendants."),
		probeOK:  desc("vigil_process_probe_success", "1 when the latest result of the probe passed, else 0.", "role"),
		probeLat: desc("vigil_process_probe_latency_seconds", "How long the latest check of the probe took.", "role"),
		dropped:  desc("vigil_process_output_dropped_bytes_total", "Output the log could not take, by stream.", "stream"),
		problems: prometheus.NewDesc("vigil_config_problems", "Configuration problems in force, by severity.", []string{"severity"}, nil),
		build: prometheus.NewDesc("vigil_build_info", "Always 1: the daemon's version, the revision it was built from and the Go that built it, and its back end.",
			[]string{"version", "revision", "goversion", "backend"}, nil),
	}
}

// processCollector reads the status at each scrape, so the series follow
// the processes supervised.
type processCollector struct {
	src   StatusSource
	m     *Metrics
	d     descs
	build build
}

func (c *processCollector) Describe(ch chan<- *prometheus.Desc) {
	d := c.d
	for _, x := range []*prometheus.Desc{d.up, d.state, d.ready, d.wanted, d.restarts, d.exit, d.exits, d.start,
		d.cpu, d.rss, d.memLimit, d.fds, d.tasks, d.probeOK, d.probeLat, d.dropped, d.problems, d.build} {
		ch <- x
	}
}

// statusTimeout bounds the status a scrape reads (under the systemd back
// end it runs systemctl): a hung source never piles up scrapes.
const statusTimeout = 10 * time.Second

func (c *processCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	st, err := c.src.Status(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.d.up, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.d.build, prometheus.GaugeValue, 1,
		st.Daemon.Version, c.build.revision, c.build.goVersion, st.Daemon.Backend)
	for _, p := range st.Processes {
		c.collectProcess(ch, p)
	}
	bySeverity := map[string]int{"error": 0, "warning": 0}
	for _, p := range st.Problems {
		bySeverity[p.Severity]++
	}
	for sev, n := range bySeverity {
		ch <- prometheus.MustNewConstMetric(c.d.problems, prometheus.GaugeValue, float64(n), sev)
	}
}

func (c *processCollector) collectProcess(ch chan<- prometheus.Metric, p control.ProcessStatus) {
	d, l := c.d, []string{p.Job, p.Process}
	gauge := func(x *prometheus.Desc, v float64, more ...string) {
		ch <- prometheus.MustNewConstMetric(x, prometheus.GaugeValue, v, append(l, more...)...)
	}
	counter := func(x *prometheus.Desc, v float64, more ...string) {
		ch <- prometheus.MustNewConstMetric(x, prometheus.CounterValue, v, append(l, more...)...)
	}
	running := p.State == "running"
	gauge(d.up, bool01(running))
	for _, s := range states() {
		gauge(d.state, bool01(p.State == s), s)
	}
	gauge(d.ready, bool01(p.Ready))
	gauge(d.wanted, bool01(p.Wanted == "up" && !p.Unmonitored))
	counter(d.restarts, float64(p.Restarts))
	if e := p.LastExit; e != nil && e.Error == "" {
		code := e.Code
		if e.Signal != "" {
			code = 128 + int(unix.SignalNum(e.Signal))
		}
		gauge(d.exit, float64(code))
	}
	exits := c.m.exitsOf(p.Job, p.Process)
	for r := range reasonCount {
		counter(d.exits, float64(exits[r]), reason(r).String())
	}
	if running && !p.Since.IsZero() {
		gauge(d.start, float64(p.Since.UnixMilli())/1000)
	}
	if u := p.Usage; u != nil {
		counter(d.cpu, u.CPUSeconds)
		gauge(d.rss, float64(u.RSSBytes))
		gauge(d.fds, float64(u.OpenFDs))
		gauge(d.tasks, float64(u.Processes))
	}
	if p.MemoryLimitBytes > 0 {
		gauge(d.memLimit, float64(p.MemoryLimitBytes))
	}
	for _, r := range p.Probes {
		gauge(d.probeOK, bool01(r.OK), r.Role)
		gauge(d.probeLat, r.LatencyMS/1000, r.Role)
	}
	counter(d.dropped, float64(p.Output.DroppedStdout), "stdout")
	counter(d.dropped, float64(p.Output.DroppedStderr), "stderr")
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

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

// descs are the per-process metrics, labelled job and process.
type descs struct {
	up, state, ready, restarts, exit, oom, start, cpu, rss, fds, tasks, probeOK, probeLat, dropped, problems *prometheus.Desc
}

func newDescs() descs {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, append([]string{"job", "process"}, labels...), nil)
	}
	return descs{
		up:       desc("vigil_process_up", "1 when the process runs, else 0."),
		state:    desc("vigil_process_state", "1 for the process's current state, 0 for the others.", "state"),
		ready:    desc("vigil_process_ready", "1 when the process runs and is ready."),
		restarts: desc("vigil_process_restarts_total", "Automatic restarts by the current supervisor."),
		exit:     desc("vigil_process_last_exit_code", "Exit code of the last exit; 128+N after signal N. Absent before the first exit or when the process never ran."),
		oom:      desc("vigil_process_oom_kills_total", "Exits by the kernel's OOM killer seen by these metrics."),
		start:    desc("vigil_process_start_time_seconds", "Unix time the running process came up."),
		cpu:      desc("vigil_process_cpu_seconds_total", "User and system CPU of the running process and its descendants."),
		rss:      desc("vigil_process_resident_memory_bytes", "Resident memory of the running process and its descendants."),
		fds:      desc("vigil_process_open_fds", "Descriptors open in the running executable."),
		tasks:    desc("vigil_process_processes", "The running executable and its descendants."),
		probeOK:  desc("vigil_probe_success", "1 when the latest result of the probe passed, else 0.", "role"),
		probeLat: desc("vigil_probe_latency_seconds", "How long the latest check of the probe took.", "role"),
		dropped:  desc("vigil_process_output_dropped_bytes_total", "Output the log could not take, by stream.", "stream"),
		problems: prometheus.NewDesc("vigil_config_problems", "Configuration problems in force, by severity.", []string{"severity"}, nil),
	}
}

// processCollector reads the status at each scrape, so the series follow
// the processes supervised.
type processCollector struct {
	src StatusSource
	m   *Metrics
	d   descs
}

func (c *processCollector) Describe(ch chan<- *prometheus.Desc) {
	d := c.d
	for _, x := range []*prometheus.Desc{d.up, d.state, d.ready, d.restarts, d.exit, d.oom, d.start,
		d.cpu, d.rss, d.fds, d.tasks, d.probeOK, d.probeLat, d.dropped, d.problems} {
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
	counter(d.restarts, float64(p.Restarts))
	if e := p.LastExit; e != nil && e.Error == "" {
		code := e.Code
		if e.Signal != "" {
			code = 128 + int(unix.SignalNum(e.Signal))
		}
		gauge(d.exit, float64(code))
	}
	counter(d.oom, float64(c.m.oomKills(p.Job, p.Process)))
	if running && !p.Since.IsZero() {
		gauge(d.start, float64(p.Since.UnixMilli())/1000)
	}
	if u := p.Usage; u != nil {
		counter(d.cpu, u.CPUSeconds)
		gauge(d.rss, float64(u.RSSBytes))
		gauge(d.fds, float64(u.OpenFDs))
		gauge(d.tasks, float64(u.Processes))
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

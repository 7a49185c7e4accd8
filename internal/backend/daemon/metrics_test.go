package daemon

import (
	"context"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/metrics"
	"github.com/vigil-bosh/vigil/internal/metrics/metricstest"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

// TestMetricsOfRealProcesses scrapes the metrics of a daemon running real
// processes: up, resource use, a restart after a kill with its latency,
// and a configuration load error after an invalid bpm.yml is reloaded.
func TestMetricsOfRealProcesses(t *testing.T) {
	h := newHarness(t)
	h.writeJob("web", pr{"server", "serve", nil})
	h.start(supervise.Timing{})
	first := h.rep.Expect(t, "ready")
	m := metrics.New()
	ctx, stopFollowing := context.WithCancel(t.Context())
	followed := make(chan error, 1)
	go func() { followed <- m.Follow(ctx, h.d) }()
	watch, err := h.d.Events(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}

	server := []string{"bosh_job", "web", "bosh_process", "server"}
	fams := metricstest.Scrape(t, m.Handler(h.d))
	for _, c := range []struct {
		name string
		ok   func(float64) bool
	}{
		{"vigil_process_up", func(v float64) bool { return v == 1 }},
		{"vigil_process_restarts_total", func(v float64) bool { return v == 0 }},
		{"vigil_process_resident_memory_bytes", func(v float64) bool { return v > 0 }},
		{"vigil_process_open_fds", func(v float64) bool { return v >= 3 }},
		{"vigil_process_tree_processes", func(v float64) bool { return v == 1 }},
		{"vigil_process_wanted_up", func(v float64) bool { return v == 1 }},
		{"vigil_process_start_time_seconds", func(v float64) bool { return v > 0 }},
	} {
		if v, ok := metricstest.Value(fams, c.name, server...); !ok || !c.ok(v) {
			t.Errorf("before the kill: %s = %v (found: %v)", c.name, v, ok)
		}
	}

	unix.Kill(first.PID, unix.SIGKILL)
	expectEvents(t, watch, "web/server", control.EventExited, control.EventRestarted)
	h.rep.Expect(t, "ready")
	h.writeFile("web", "processes:\n- name: server\n  executable: [unclosed\n")
	if _, err := h.c.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, watch, "web/", control.EventConfigError)
	// Every event so far is in Follow's buffer too: ending it observes them all.
	stopFollowing()
	if err := <-followed; err != nil {
		t.Fatal(err)
	}

	fams = metricstest.Scrape(t, m.Handler(h.d))
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"vigil_process_up", server, 1},
		{"vigil_process_restarts_total", server, 1},
		{"vigil_process_last_exit_code", server, 128 + 9},
		{"vigil_process_exits_total", append(server, "reason", "signal"), 1},
		{"vigil_process_exits_total", append(server, "reason", "stop"), 0},
		{"vigil_restart_latency_seconds", nil, 1},
		{"vigil_config_load_errors_total", nil, 1},
		{"vigil_config_problems", []string{"severity", "error"}, 2}, // the parse error, and "keeps running"
	} {
		if got, ok := metricstest.Value(fams, c.name, c.labels...); !ok || got != c.want {
			t.Errorf("after the kill: %s%v = %v (found: %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if v, ok := metricstest.Value(fams, "vigil_process_cpu_seconds_total", server...); !ok || v < 0 {
		t.Errorf("cpu seconds %v %v", v, ok)
	}
}

package metrics

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/metrics/metricstest"
)

// fixedStatus is a StatusSource answering st (or err).
type fixedStatus struct {
	st  control.Status
	err error
}

func (f fixedStatus) Status(context.Context) (control.Status, error) { return f.st, f.err }

// replay is an EventSource that sends its events and ends the stream.
type replay []control.Event

func (r replay) Events(_ context.Context, recent int) (<-chan control.Event, error) {
	if recent == 0 {
		return nil, errors.New("the metrics must ask for the recent events")
	}
	ch := make(chan control.Event, len(r))
	for _, ev := range r {
		ch <- ev
	}
	close(ch)
	return ch, nil
}

func TestProcessMetrics(t *testing.T) {
	since := time.Unix(1_800_000_000, 500_000_000)
	st := control.Status{
		Processes: []control.ProcessStatus{
			{Job: "web", Process: "server", State: "running", Wanted: "up", Ready: true, Restarts: 3, Since: since, MemoryLimitBytes: 1 << 30,
				Isolation: "host",
				LastExit:  &control.Exit{Signal: "SIGKILL", OOM: true},
				Usage:     &control.Usage{CPUSeconds: 1.5, RSSBytes: 4096, OpenFDs: 9, Processes: 2},
				Probes: []control.ProbeResult{{Role: "liveness", OK: true, LatencyMS: 2.5},
					{Role: "readiness", OK: false, LatencyMS: 1000}},
				Output: control.Output{DroppedStderr: 77, RotationFailures: 4}},
			{Job: "web", Process: "worker", State: "backoff", Wanted: "up", LastExit: &control.Exit{Code: 3}, Isolation: "sandbox"},
			{Job: "db", Process: "pg", State: "failed", Wanted: "up", Unmonitored: true, LastExit: &control.Exit{Error: "no such file"}},
			{Job: "db", Process: "admin", State: "stopped", Wanted: "down"},
		},
		Problems: []control.Problem{{Severity: "error", Job: "bad"}, {Severity: "warning"}, {Severity: "warning"}},
		Daemon:   control.DaemonInfo{Version: "1.2.3", Backend: "native"},
	}
	m := New()
	if err := m.Follow(t.Context(), replay{
		{Kind: control.EventOOMKilled, Job: "web", Process: "server"},
		{Kind: control.EventExited, Job: "web", Process: "server", Exit: &control.Exit{Signal: "SIGKILL"}},
		{Kind: control.EventExited, Job: "web", Process: "server", Exit: &control.Exit{Code: 0}},
		{Kind: control.EventExited, Job: "web", Process: "server", Exit: &control.Exit{Code: 2}},
		{Kind: control.EventExited, Job: "web", Process: "server", Exit: &control.Exit{Error: "exec: no such file"}},
		{Kind: control.EventStopping, Job: "web", Process: "server"},
		{Kind: control.EventExited, Job: "web", Process: "server", Exit: &control.Exit{Signal: "SIGTERM"}},
		{Kind: control.EventStopped, Job: "web", Process: "server"},
		{Kind: control.EventExited, Job: "web", Process: "server", Exit: &control.Exit{Signal: "SIGTERM"}},
		{Kind: control.EventRestarted, Job: "web", Process: "server", DownSeconds: 0.004},
		{Kind: control.EventRestarted, Job: "web", Process: "server", DownSeconds: 0.2},
		{Kind: control.EventConfigError, Job: "bad"},
		{Kind: control.EventLost, Lost: 5},
		{Kind: control.EventDrained, Job: "web"},
		{Kind: control.EventDrainFailed, Job: "router"},
		{Kind: control.EventDrainFailed, Job: "router"},
	}); err != nil {
		t.Fatal(err)
	}
	fams := metricstest.Scrape(t, m.Handler(fixedStatus{st: st}))
	server := []string{"bosh_job", "web", "bosh_process", "server"}
	worker := []string{"bosh_job", "web", "bosh_process", "worker"}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"vigil_process_up", server, 1},
		{"vigil_process_state", append(server, "state", "running"), 1},
		{"vigil_process_state", append(server, "state", "backoff"), 0},
		{"vigil_process_ready", server, 1},
		{"vigil_process_restarts_total", server, 3},
		{"vigil_process_last_exit_code", server, 137},
		{"vigil_process_wanted_up", server, 1},
		{"vigil_process_exits_total", append(server, "reason", "oom"), 1},
		{"vigil_process_exits_total", append(server, "reason", "signal"), 2}, // the SIGKILL, and the SIGTERM after the stop
		{"vigil_process_exits_total", append(server, "reason", "success"), 1},
		{"vigil_process_exits_total", append(server, "reason", "failure"), 1},
		{"vigil_process_exits_total", append(server, "reason", "spawn_error"), 1},
		{"vigil_process_exits_total", append(server, "reason", "stop"), 1},
		{"vigil_process_memory_limit_bytes", server, 1 << 30},
		{"vigil_process_isolation_info", append(server, "isolation", "host"), 1},
		{"vigil_process_isolation_info", append(worker, "isolation", "sandbox"), 1},
		{"vigil_process_start_time_seconds", server, 1_800_000_000.5},
		{"vigil_process_cpu_seconds_total", server, 1.5},
		{"vigil_process_resident_memory_bytes", server, 4096},
		{"vigil_process_open_fds", server, 9},
		{"vigil_process_tree_processes", server, 2},
		{"vigil_process_probe_success", append(server, "role", "liveness"), 1},
		{"vigil_process_probe_success", append(server, "role", "readiness"), 0},
		{"vigil_process_probe_latency_seconds", append(server, "role", "liveness"), 0.0025},
		{"vigil_process_output_dropped_bytes_total", append(server, "stream", "stderr"), 77},
		{"vigil_process_output_dropped_bytes_total", append(server, "stream", "stdout"), 0},
		{"vigil_process_log_rotation_failures_total", server, 4},
		{"vigil_process_up", worker, 0},
		{"vigil_process_wanted_up", worker, 1},
		{"vigil_process_state", append(worker, "state", "backoff"), 1},
		{"vigil_process_last_exit_code", worker, 3},
		{"vigil_process_exits_total", append(worker, "reason", "oom"), 0}, // every reason is there from the start
		{"vigil_process_wanted_up", []string{"bosh_process", "pg"}, 0},    // unmonitored
		{"vigil_process_wanted_up", []string{"bosh_process", "admin"}, 0}, // stopped on purpose
		{"vigil_build_info", []string{"version", "1.2.3", "backend", "native", "goversion", runtime.Version()}, 1},
		{"vigil_config_problems", []string{"severity", "warning"}, 2},
		{"vigil_config_problems", []string{"severity", "error"}, 1},
		{"vigil_config_load_errors_total", nil, 1},
		{"vigil_restart_latency_seconds", nil, 2},
		{"vigil_metrics_events_lost_total", nil, 5},
		{"vigil_drains_total", []string{"bosh_job", "web", "outcome", "succeeded"}, 1},
		{"vigil_drains_total", []string{"bosh_job", "web", "outcome", "failed"}, 0},
		{"vigil_drains_total", []string{"bosh_job", "router", "outcome", "failed"}, 2},
	} {
		if got, ok := metricstest.Value(fams, c.name, c.labels...); !ok || got != c.want {
			t.Errorf("%s%v = %v (found: %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	for _, absent := range []struct {
		name   string
		labels []string
	}{
		{"vigil_process_last_exit_code", []string{"bosh_process", "pg"}}, // it never ran
		{"vigil_process_resident_memory_bytes", worker},
		{"vigil_process_start_time_seconds", worker},
		{"vigil_process_memory_limit_bytes", worker},                     // it has none
		{"vigil_process_isolation_info", []string{"bosh_process", "pg"}}, // not a bpm process
	} {
		if v, ok := metricstest.Value(fams, absent.name, absent.labels...); ok {
			t.Errorf("%s%v = %v, want no sample", absent.name, absent.labels, v)
		}
	}
	// The daemon's own process and Go runtime.
	if v, ok := metricstest.Value(fams, "process_open_fds"); !ok || v <= 0 {
		t.Errorf("process_open_fds = %v %v", v, ok)
	}
	if _, ok := metricstest.Value(fams, "go_goroutines"); !ok {
		t.Error("no go_goroutines")
	}
	if b := fams["vigil_restart_latency_seconds"].GetMetric()[0].GetHistogram().GetBucket(); len(b) == 0 ||
		b[2].GetUpperBound() != 0.005 || b[2].GetCumulativeCount() != 1 {
		t.Errorf("restart latency buckets %v", b)
	}
}

// TestRequestDurations: the control server's observer feeds the request
// histogram, by route.
func TestRequestDurations(t *testing.T) {
	m := New()
	m.ObserveRequest("GET /v1/status", 200, 300*time.Microsecond)
	m.ObserveRequest("GET /v1/status", 200, 2*time.Millisecond)
	m.ObserveRequest("", 403, time.Millisecond)
	fams := metricstest.Scrape(t, m.Handler(fixedStatus{}))
	if v, _ := metricstest.Value(fams, "vigil_control_request_duration_seconds", "route", "GET /v1/status"); v != 2 {
		t.Errorf("status requests observed: %v", v)
	}
	if v, _ := metricstest.Value(fams, "vigil_control_request_duration_seconds", "route", "unmatched"); v != 1 {
		t.Errorf("unmatched requests observed: %v", v)
	}
}

func TestStatusError(t *testing.T) {
	rec := httptest.NewRecorder()
	New().Handler(fixedStatus{err: errors.New("gone")}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("scrape with a failing status: %d %s", rec.Code, rec.Body)
	}
}

// BenchmarkScrape is one scrape of a daemon with 1000 processes, each
// with usage, a limit and a probe: the per-process series dominate.
func BenchmarkScrape(b *testing.B) {
	st := control.Status{Daemon: control.DaemonInfo{Version: "bench", Backend: "native"}}
	for i := range 1000 {
		st.Processes = append(st.Processes, control.ProcessStatus{
			Job: "job" + strconv.Itoa(i/10), Process: "p" + strconv.Itoa(i%10), State: "running", Wanted: "up", Ready: true,
			Since: time.Unix(1_800_000_000, 0), MemoryLimitBytes: 1 << 30, LastExit: &control.Exit{Code: 1},
			Usage:  &control.Usage{CPUSeconds: 12.5, RSSBytes: 1 << 24, OpenFDs: 12, Processes: 3},
			Probes: []control.ProbeResult{{Role: "liveness", OK: true, LatencyMS: 1.5}}})
	}
	m := New()
	h := m.Handler(fixedStatus{st: st})
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	size := 0
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("scrape: %d", rec.Code)
		}
		size = rec.Body.Len()
	}
	b.ReportMetric(float64(size), "bytes/scrape")
}

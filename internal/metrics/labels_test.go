package metrics

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/metrics/metricstest"
)

// richStatus has a process of each kind the metrics describe.
func richStatus() control.Status {
	return control.Status{
		Daemon: control.DaemonInfo{Version: "test", Backend: "native"},
		Processes: []control.ProcessStatus{
			{Job: "web", Process: "server", State: "running", Wanted: "up", Ready: true, Since: time.Now(), MemoryLimitBytes: 1 << 30,
				LastExit: &control.Exit{Code: 1}, Usage: &control.Usage{CPUSeconds: 1, RSSBytes: 1 << 20, OpenFDs: 5, Processes: 1},
				Probes: []control.ProbeResult{{Role: "liveness", OK: true, LatencyMS: 1}}},
			{Job: "db", Process: "pg", State: "stopped", Wanted: "down"},
		},
		Problems: []control.Problem{{Severity: "warning"}},
	}
}

// TestLabelNames scrapes through Prometheus' text parser: every series of
// a process names it by bosh_job and bosh_process, and no series carries
// a label Prometheus sets itself on what it scrapes (job, instance).
func TestLabelNames(t *testing.T) {
	fams := metricstest.Scrape(t, New().Handler(fixedStatus{st: richStatus()}))
	perProcess := 0
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			labels := map[string]bool{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
			if labels["job"] || labels["instance"] || labels["process"] {
				t.Errorf("%s has a label Prometheus sets or the old name: %v", name, m.GetLabel())
			}
			if strings.HasPrefix(name, "vigil_process_") {
				perProcess++
				if !labels["bosh_job"] || !labels["bosh_process"] {
					t.Errorf("%s without bosh_job and bosh_process: %v", name, m.GetLabel())
				}
			}
		}
	}
	if perProcess == 0 {
		t.Fatal("no per-process series")
	}
}

// TestPromtoolLintsTheMetrics runs Prometheus' own linter (promtool
// check metrics, from Debian's prometheus package) over a whole scrape:
// names, units, suffixes and help texts as Prometheus' conventions want
// them, the Go runtime's and the process's series included.
func TestPromtoolLintsTheMetrics(t *testing.T) {
	promtool := needPromtool(t)
	rec := httptest.NewRecorder()
	New().Handler(fixedStatus{st: richStatus()}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if !strings.Contains(rec.Body.String(), "\ngo_goroutines ") { // the Go runtime's and the process's too
		t.Fatalf("a scrape without go_goroutines:\n%s", rec.Body)
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = rec.Body
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// needPromtool finds promtool ($VIGIL_PROMTOOL, else on PATH) or skips.
func needPromtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if env := envPromtool(); env != "" {
		p, err = env, nil
	}
	if err != nil {
		t.Skip("no promtool on PATH (Debian: apt-get install prometheus): the test needs Prometheus' own tool")
	}
	return p
}

func envPromtool() string { return os.Getenv("VIGIL_PROMTOOL") }

package metrics

import (
	"compress/gzip"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/metrics/metricstest"
	"github.com/vigil-bosh/vigil/internal/procstat"
)

// runtimeSeries are the Go runtime's and the daemon process's families, as
// Prometheus' Go client names them (README lists the same).
func runtimeSeries() []string {
	return []string{
		"go_gc_duration_seconds", "go_gc_gomemlimit_bytes", "go_goroutines", "go_info",
		"go_memstats_alloc_bytes", "go_memstats_alloc_bytes_total", "go_memstats_buck_hash_sys_bytes",
		"go_memstats_frees_total", "go_memstats_gc_sys_bytes", "go_memstats_heap_alloc_bytes",
		"go_memstats_heap_idle_bytes", "go_memstats_heap_inuse_bytes", "go_memstats_heap_objects",
		"go_memstats_heap_released_bytes", "go_memstats_heap_sys_bytes", "go_memstats_last_gc_time_seconds",
		"go_memstats_mallocs_total", "go_memstats_mcache_inuse_bytes", "go_memstats_mcache_sys_bytes",
		"go_memstats_mspan_inuse_bytes", "go_memstats_mspan_sys_bytes", "go_memstats_next_gc_bytes",
		"go_memstats_other_sys_bytes", "go_memstats_stack_inuse_bytes", "go_memstats_stack_sys_bytes",
		"go_memstats_sys_bytes", "go_sched_gomaxprocs_threads", "go_threads",
		"process_cpu_seconds_total", "process_max_fds", "process_open_fds", "process_resident_memory_bytes",
		"process_start_time_seconds", "process_virtual_memory_bytes", "process_virtual_memory_max_bytes",
	}
}

// TestRuntimeSeries: a scrape has exactly the Go runtime's and the
// process's families above, with this process's figures.
func TestRuntimeSeries(t *testing.T) {
	runtime.GC() // so that the pauses' summary has a pause
	fams := metricstest.Scrape(t, New().Handler(fixedStatus{}))
	var got []string
	for name := range maps.Keys(fams) {
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
			got = append(got, name)
		}
	}
	slices.Sort(got)
	if want := runtimeSeries(); !slices.Equal(got, want) {
		t.Errorf("runtime families:\n%v\nwant:\n%v", got, want)
	}
	value := func(name string, labels ...string) float64 {
		t.Helper()
		v, ok := metricstest.Value(fams, name, labels...)
		if !ok {
			t.Errorf("no %s%v", name, labels)
		}
		return v
	}
	var nofile unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile); err != nil {
		t.Fatal(err)
	}
	boot, err := procstat.BootTime()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"go_goroutines", value("go_goroutines") >= 1},
		{"go_threads", value("go_threads") >= 1},
		{"go_info", value("go_info", "version", runtime.Version()) == 1},
		{"go_sched_gomaxprocs_threads", value("go_sched_gomaxprocs_threads") == float64(runtime.GOMAXPROCS(0))},
		{"go_memstats_sys_bytes", value("go_memstats_sys_bytes") >= value("go_memstats_heap_sys_bytes")},
		{"go_memstats_alloc_bytes_total", value("go_memstats_alloc_bytes_total") >= value("go_memstats_alloc_bytes")},
		{"go_memstats_last_gc_time_seconds", value("go_memstats_last_gc_time_seconds") > float64(boot.Unix())},
		{"process_open_fds", value("process_open_fds") >= 3},
		{"process_max_fds", value("process_max_fds") == float64(nofile.Cur)},
		{"process_resident_memory_bytes", value("process_resident_memory_bytes") > 0},
		{"process_virtual_memory_bytes", value("process_virtual_memory_bytes") >= value("process_resident_memory_bytes")},
		{"process_start_time_seconds", value("process_start_time_seconds") >= float64(boot.Unix()) &&
			value("process_start_time_seconds") <= float64(time.Now().Unix()+1)},
	} {
		if !c.ok {
			t.Errorf("%s is wrong: %v", c.name, fams[c.name].GetMetric())
		}
	}
	gc := fams["go_gc_duration_seconds"]
	if gc.GetType() != dto.MetricType_SUMMARY || len(gc.GetMetric()[0].GetSummary().GetQuantile()) != 5 ||
		gc.GetMetric()[0].GetSummary().GetSampleCount() < 1 {
		t.Errorf("go_gc_duration_seconds: %v", gc)
	}
}

// TestReadmeNamesTheRuntimeSeries: README's paragraph on them names each
// family of the Go runtime and the daemon process that a scrape has, and
// after "left out" only families a scrape does not have.
func TestReadmeNamesTheRuntimeSeries(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const start = "The daemon's own Go runtime and process come too"
	_, para, ok := strings.Cut(string(readme), start)
	para, _, _ = strings.Cut(para, "\n\n")
	kept, left, ok2 := strings.Cut(strings.Join(strings.Fields(para), " "), "left out")
	if !ok || !ok2 {
		t.Fatalf("README has no paragraph %q... with \"left out\"", start)
	}
	names := func(text string) []string {
		var out []string
		for i, f := range strings.Split(text, "`") {
			if i%2 == 1 && (strings.HasPrefix(f, "go_") || strings.HasPrefix(f, "process_")) {
				out = append(out, f)
			}
		}
		slices.Sort(out)
		return out
	}
	if got, want := names(kept), runtimeSeries(); !slices.Equal(got, want) {
		t.Errorf("README names\n%v\nthe scrape has\n%v", got, want)
	}
	for _, n := range names(left) {
		if slices.Contains(runtimeSeries(), n) {
			t.Errorf("README says %s is left out", n)
		}
	}
	if len(names(left)) != 3 {
		t.Errorf("README leaves out %v", names(left))
	}
}

// TestGzip: a client that accepts gzip gets the text gzipped; one that
// does not, or refuses it with q=0, gets it plain.
func TestGzip(t *testing.T) {
	h := New().Handler(fixedStatus{st: richStatus()})
	for _, c := range []struct {
		accept string
		gzip   bool
	}{
		{"", false}, {"gzip", true}, {"deflate, gzip;q=0.5", true}, {"GZIP", true}, {"*", true},
		{"gzip;q=0", false}, {"identity", false}, {"gzip;q=0, *", false}, {"br, *;q=0", false},
	} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if c.accept != "" {
			req.Header.Set("Accept-Encoding", c.accept)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var body io.Reader = rec.Body
		if got := rec.Header().Get("Content-Encoding") == "gzip"; got != c.gzip {
			t.Errorf("Accept-Encoding %q: gzipped %v", c.accept, got)
			continue
		}
		if c.gzip {
			z, err := gzip.NewReader(rec.Body)
			if err != nil {
				t.Fatalf("Accept-Encoding %q: %v", c.accept, err)
			}
			body = z
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(body)
		if err != nil || fams["vigil_process_up"] == nil {
			t.Errorf("Accept-Encoding %q: %v, %d families", c.accept, err, len(fams))
		}
		if ct := rec.Header().Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
			t.Errorf("Content-Type %q", ct)
		}
	}
}

// TestHistogramBuckets: an observation on a bound counts in its bucket
// (le is "less than or equal"), one above every bound only in +Inf.
func TestHistogramBuckets(t *testing.T) {
	h := newHistogram([]float64{0.1, 1})
	for _, v := range []float64{0.05, 0.1, 0.5, 1, 3} {
		h.observe(v)
	}
	v := h.value()
	if len(v.Buckets) != 2 || v.Buckets[0].Count != 2 || v.Buckets[1].Count != 4 || v.Count != 5 || math.Abs(v.Sum-4.65) > 1e-9 {
		t.Fatalf("%+v", v)
	}
}

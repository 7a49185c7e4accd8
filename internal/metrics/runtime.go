package metrics

import (
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/procstat"
	"github.com/vigil-bosh/vigil/internal/promtext"
)

// The daemon's own Go runtime and process, under the names and with the
// meanings Prometheus' Go client gives them, so that the dashboards made
// for it work. They are read with runtime.ReadMemStats and
// debug.ReadGCStats, not runtime/metrics, whose initialisation would
// cost every vigil process (each init, each command) 17 KiB.

// addGo adds the go_* families.
func addGo(s *promtext.Set) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	gc := debug.GCStats{PauseQuantiles: make([]time.Duration, 5)}
	debug.ReadGCStats(&gc)
	threads, _ := runtime.ThreadCreateProfile(nil)

	quantiles := make([]promtext.Quantile, len(gc.PauseQuantiles))
	for i, q := range gc.PauseQuantiles {
		quantiles[i] = promtext.Quantile{Quantile: float64(i) / float64(len(gc.PauseQuantiles)-1), Value: q.Seconds()}
	}
	s.Summary("go_gc_duration_seconds", "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.").
		AddSummary(promtext.SummaryValue{Quantiles: quantiles, Sum: gc.PauseTotal.Seconds(), Count: uint64(gc.NumGC)})
	s.Gauge("go_gc_gomemlimit_bytes", "Go runtime memory limit configured by the user, otherwise math.MaxInt64.").
		Add(float64(debug.SetMemoryLimit(-1))) // a negative limit only reads it
	s.Gauge("go_goroutines", "Number of goroutines that currently exist.").Add(float64(runtime.NumGoroutine()))
	s.Gauge("go_info", "Information about the Go environment.").Add(1, "version", runtime.Version())
	s.Gauge("go_sched_gomaxprocs_threads", "The current runtime.GOMAXPROCS setting.").Add(float64(runtime.GOMAXPROCS(0)))
	s.Gauge("go_threads", "Number of OS threads created.").Add(float64(threads))

	for _, m := range []struct {
		name, help string
		v          uint64
		counter    bool
	}{
		{"alloc_bytes", "Number of bytes allocated in heap and currently in use.", ms.Alloc, false},
		{"alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already.", ms.TotalAlloc, true},
		{"buck_hash_sys_bytes", "Number of bytes used by the profiling bucket hash table.", ms.BuckHashSys, false},
		{"frees_total", "Total number of heap objects frees.", ms.Frees, true},
		{"gc_sys_bytes", "Number of bytes used for garbage collection system metadata.", ms.GCSys, false},
		{"heap_alloc_bytes", "Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes.", ms.HeapAlloc, false},
		{"heap_idle_bytes", "Number of heap bytes waiting to be used.", ms.HeapIdle, false},
		{"heap_inuse_bytes", "Number of heap bytes that are in use.", ms.HeapInuse, false},
		{"heap_objects", "Number of currently allocated objects.", ms.HeapObjects, false},
		{"heap_released_bytes", "Number of heap bytes released to OS.", ms.HeapReleased, false},
		{"heap_sys_bytes", "Number of heap bytes obtained from system.", ms.HeapSys, false},
		{"mallocs_total", "Total number of heap objects allocated, both live and gc-ed.", ms.Mallocs, true},
		{"mcache_inuse_bytes", "Number of bytes in use by mcache structures.", ms.MCacheInuse, false},
		{"mcache_sys_bytes", "Number of bytes used for mcache structures obtained from system.", ms.MCacheSys, false},
		{"mspan_inuse_bytes", "Number of bytes in use by mspan structures.", ms.MSpanInuse, false},
		{"mspan_sys_bytes", "Number of bytes used for mspan structures obtained from system.", ms.MSpanSys, false},
		{"next_gc_bytes", "Number of heap bytes when next garbage collection will take place.", ms.NextGC, false},
		{"other_sys_bytes", "Number of bytes used for other system allocations.", ms.OtherSys, false},
		{"stack_inuse_bytes", "Number of bytes obtained from system for stack allocator in non-CGO environments.", ms.StackInuse, false},
		{"stack_sys_bytes", "Number of bytes obtained from system for stack allocator.", ms.StackSys, false},
		{"sys_bytes", "Number of bytes obtained from system.", ms.Sys, false},
	} {
		f := s.Gauge
		if m.counter {
			f = s.Counter
		}
		f("go_memstats_"+m.name, m.help).Add(float64(m.v))
	}
	s.Gauge("go_memstats_last_gc_time_seconds", "Number of seconds since 1970 of last garbage collection.").
		Add(float64(ms.LastGC) / 1e9)
}

// addProcess adds the process_* families of the daemon's own process;
// boot is when the machine booted (procstat.BootTime). A figure that
// cannot be read is left out.
func addProcess(s *promtext.Set, boot time.Time) {
	self := os.Getpid()
	if st, err := procstat.ReadStat(self); err == nil {
		s.Counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.").Add(st.CPUSeconds())
		s.Gauge("process_resident_memory_bytes", "Resident memory size in bytes.").Add(float64(st.RSSBytes))
		s.Gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.").Add(float64(st.VSizeBytes))
		if !boot.IsZero() {
			s.Gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.").
				Add(float64(st.Started(boot).UnixMilli()) / 1000)
		}
	}
	if n, err := procstat.OpenFDs(self); err == nil {
		s.Gauge("process_open_fds", "Number of open file descriptors.").Add(float64(n))
	}
	var lim unix.Rlimit // unlimited is 2^64-1, as Prometheus' client reads it
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil {
		s.Gauge("process_max_fds", "Maximum number of open file descriptors.").Add(float64(lim.Cur))
	}
	if unix.Getrlimit(unix.RLIMIT_AS, &lim) == nil {
		s.Gauge("process_virtual_memory_max_bytes", "Maximum amount of virtual memory available in bytes.").Add(float64(lim.Cur))
	}
}

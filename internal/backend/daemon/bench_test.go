package daemon

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/supervise/restart"
)

// writeJobN writes one job with n processes of the test binary serving.
func (h *harness) writeJobN(name string, n int) {
	procs := make([]pr, n)
	for i := range procs {
		procs[i] = pr{fmt.Sprintf("p%04d", i), "serve", nil}
	}
	h.writeJob(name, procs...)
}

// BenchmarkStart100 measures starting 100 processes: from Run to every
// executable having reported that it runs.
func BenchmarkStart100(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		h := newHarness(b)
		h.writeJobN("bench", 100)
		b.StartTimer()
		h.start(supervise.Timing{})
		for range 100 {
			h.rep.Expect(b, "ready")
		}
		b.StopTimer()
		h.stop()
		b.StartTimer()
	}
}

// BenchmarkRestartAfterKill measures, with 100 processes supervised, the
// time from SIGKILL of an executable to its replacement reporting that it
// runs. A first restart is immediate; quick repeated failures back off, so
// the policy here counts any run as healthy, to time the restart path alone.
func BenchmarkRestartAfterKill(b *testing.B) {
	h := newHarness(b)
	h.writeJobN("bench", 100)
	h.start(supervise.Timing{Restart: restart.Policy{ResetAfter: time.Nanosecond}})
	var pids []int
	for range 100 {
		pids = append(pids, h.rep.Expect(b, "ready").PID)
	}
	i := 0
	for b.Loop() {
		unix.Kill(pids[i], unix.SIGKILL)
		pids[i] = h.rep.Expect(b, "ready").PID
		i = (i + 1) % len(pids)
	}
}

// BenchmarkStatus100 measures one status query over the control socket
// with 100 processes.
func BenchmarkStatus100(b *testing.B) {
	h := newHarness(b)
	h.writeJobN("bench", 100)
	h.start(supervise.Timing{})
	for range 100 {
		h.rep.Expect(b, "ready")
	}
	for b.Loop() {
		st, err := h.c.Status(b.Context())
		if err != nil || len(st.Processes) != 100 {
			b.Fatal(err)
		}
	}
}

// BenchmarkInitMemory reports the proportional set size of one per-process
// init, averaged over 100 of them (pages of the shared binary are split
// between them, as on a VM).
func BenchmarkInitMemory(b *testing.B) {
	h := newHarness(b)
	h.writeJobN("bench", 100)
	h.start(supervise.Timing{})
	for range 100 {
		h.rep.Expect(b, "ready")
	}
	st, _ := h.c.Status(b.Context())
	var total, rss int
	for b.Loop() {
		total, rss = 0, 0
		for _, p := range st.Processes {
			pss, r, err := smapsRollup(p.PID)
			if err != nil {
				b.Fatal(err)
			}
			total += pss
			rss += r
		}
	}
	b.ReportMetric(float64(total)/100, "PSS-KiB/init")
	b.ReportMetric(float64(rss)/100, "RSS-KiB/init")
}

// smapsRollup reads Pss and Rss in KiB from /proc/PID/smaps_rollup.
func smapsRollup(pid int) (pss, rss int, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "Pss:":
			pss = n
		case "Rss:":
			rss = n
		}
	}
	return pss, rss, nil
}

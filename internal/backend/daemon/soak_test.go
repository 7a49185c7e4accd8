package daemon

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/procstat"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

// The soak run is off by default: it takes minutes. Run it with
//
//	nice -n 10 go test ./internal/backend/daemon -run TestSoak -soak=10m -soak.out=/tmp/soak.md -timeout=20m
var (
	soakFor = flag.Duration("soak", 0, "run TestSoak for this long (e.g. 10m); 0 skips it")
	soakOut = flag.String("soak.out", "", "TestSoak writes its summary table to this file too")
)

// Soak sizing: 200 processes in 10 jobs, each crash-looping (/bin/false)
// with a backoff short enough that they never settle into a long wait.
const (
	soakJobs      = 10
	soakProcsEach = 20
	soakBackoff   = "restart: {backoff: {initial: 50ms, max: 400ms}}"
)

// soakSample is one measurement of the daemon (this test process) and the
// processes below it.
type soakSample struct {
	at         time.Duration
	restarts   int
	heapInuse  uint64 // bytes, after a GC
	rssKB      int64
	fds        int
	goroutines int
	procs      int // live descendants of the daemon
	zombies    int // descendants not yet reaped
}

// TestSoak supervises 200 crash-looping processes for -soak and fails if
// the daemon's heap, RSS, open files or goroutines, or the number of
// processes and zombies below it, grow between the first and the last
// quarter of the run (their floors, with the tolerances of soakGrowth).
func TestSoak(t *testing.T) {
	if *soakFor <= 0 {
		t.Skip("soak run off; run it with: go test ./internal/backend/daemon -run TestSoak -soak=10m [-soak.out=FILE] -timeout=20m")
	}
	h := newHarness(t)
	for j := range soakJobs {
		var b strings.Builder
		b.WriteString("processes:\n")
		for p := range soakProcsEach {
			fmt.Fprintf(&b, "- name: p%02d\n  executable: /bin/false\n  %s\n", p, soakBackoff)
		}
		h.writeFile(fmt.Sprintf("soak%02d", j), b.String())
	}
	h.start(supervise.Timing{})
	total := soakJobs * soakProcsEach
	// Warm-up: every process has crashed and been restarted a few times.
	h.waitFor("every process to crash-loop", func() bool { return h.minRestarts(total) >= 3 })

	begin := time.Now()
	tick := time.NewTicker(max(*soakFor/40, time.Second)) // measurement cadence only
	defer tick.Stop()
	var samples []soakSample
	for {
		samples = append(samples, h.soakSample(time.Since(begin)))
		if time.Since(begin) >= *soakFor {
			break
		}
		<-tick.C
	}
	report := soakReport(samples, total)
	t.Log("\n" + report)
	if *soakOut != "" {
		if err := os.WriteFile(*soakOut, []byte(report), 0o644); err != nil {
			t.Error(err)
		}
	}
	for _, p := range soakGrowth(samples) {
		t.Error(p)
	}
	if h.minRestarts(total) < 10 {
		t.Errorf("some process stopped crash-looping: fewest restarts %d", h.minRestarts(total))
	}
}

// minRestarts returns the smallest restart count among the first n
// processes of the status, or -1 if fewer than n are listed.
func (h *harness) minRestarts(n int) int {
	h.t.Helper()
	st, err := h.c.Status(h.t.Context())
	if err != nil {
		h.t.Fatal(err)
	}
	if len(st.Processes) < n {
		return -1
	}
	least := st.Processes[0].Restarts
	for _, p := range st.Processes {
		least = min(least, p.Restarts)
	}
	return least
}

func (h *harness) soakSample(at time.Duration) soakSample {
	h.t.Helper()
	st, err := h.c.Status(h.t.Context())
	if err != nil {
		h.t.Fatal(err)
	}
	s := soakSample{at: at}
	for _, p := range st.Processes {
		s.restarts += p.Restarts
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.heapInuse = ms.HeapInuse
	s.rssKB = rssKB(os.Getpid())
	fds, _ := os.ReadDir("/proc/self/fd")
	s.fds = len(fds)
	s.goroutines = runtime.NumGoroutine()
	s.procs, s.zombies = descendantsOfSelf()
	return s
}

// descendantsOfSelf counts the processes below this one, and the zombies
// among them, from one scan of /proc.
func descendantsOfSelf() (procs, zombies int) {
	entries, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	zombie := map[int]bool{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at the last ')'.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 2 {
			continue
		}
		parent[pid], _ = strconv.Atoi(f[1])
		zombie[pid] = f[0] == "Z"
	}
	self := os.Getpid()
	for pid := range parent {
		for p := parent[pid]; p > 1; p = parent[p] {
			if p == self {
				procs++
				if zombie[pid] {
					zombies++
				}
				break
			}
		}
	}
	return procs, zombies
}

// soakGrowth compares the floor (the least value) of each figure in the
// first and the last quarter of the samples, and describes each that grew
// beyond its tolerance. Processes restart in waves, so one sample may catch
// a hundred of them running and the next none: a leak raises the floor,
// a wave only the peaks.
func soakGrowth(s []soakSample) []string {
	q := max(len(s)/4, 1)
	first, last := s[:q], s[len(s)-q:]
	checks := []struct {
		name  string
		get   func(soakSample) float64
		ratio float64 // allowed relative growth
		slack float64 // plus this much absolute growth
	}{
		{"heap in use (bytes)", func(x soakSample) float64 { return float64(x.heapInuse) }, 0.25, 2 << 20},
		{"RSS (KiB)", func(x soakSample) float64 { return float64(x.rssKB) }, 0.25, 16 << 10},
		{"open fds", func(x soakSample) float64 { return float64(x.fds) }, 0.10, 50},
		{"goroutines", func(x soakSample) float64 { return float64(x.goroutines) }, 0.10, 100},
		{"processes below the daemon", func(x soakSample) float64 { return float64(x.procs) }, 0.10, 50},
		{"zombies", func(x soakSample) float64 { return float64(x.zombies) }, 0, 20},
	}
	var out []string
	for _, c := range checks {
		a, b := floor(first, c.get), floor(last, c.get)
		if limit := a*(1+c.ratio) + c.slack; b > limit {
			out = append(out, fmt.Sprintf("%s grew from %.0f to %.0f (limit %.0f)", c.name, a, b, limit))
		}
	}
	return out
}

func floor(s []soakSample, get func(soakSample) float64) float64 {
	least := get(s[0])
	for _, x := range s[1:] {
		least = min(least, get(x))
	}
	return least
}

// soakReport renders the samples as a Markdown table with the restart rate.
func soakReport(s []soakSample, procs int) string {
	var b strings.Builder
	first, last := s[0], s[len(s)-1]
	secs := (last.at - first.at).Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(last.restarts-first.restarts) / secs
	}
	fmt.Fprintf(&b, "%d crash-looping processes (%s), %s measured, %d restarts (%.1f/s), %s, GOMAXPROCS %d\n\n",
		procs, soakBackoff, (last.at - first.at).Round(time.Second), last.restarts-first.restarts, rate,
		runtime.Version(), runtime.GOMAXPROCS(0))
	b.WriteString("| t | restarts | heap in use (KiB) | RSS (KiB) | fds | goroutines | processes | zombies |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, x := range s {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %d |\n", x.at.Round(time.Second), x.restarts,
			x.heapInuse>>10, x.rssKB, x.fds, x.goroutines, x.procs, x.zombies)
	}
	return b.String()
}

// rssKB is pid's resident memory in KiB, zero when it cannot be read.
func rssKB(pid int) int64 {
	b, _ := procstat.RSS(pid)
	return b / 1024
}

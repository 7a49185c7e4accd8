package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vigil-bosh/vigil/control"
)

// t0 is a time on a minute's boundary, as unix seconds go.
var t0 = time.Unix(1_800_000_000, 0)

func running(job, proc string, pid int, since time.Time, cpu float64, rss int64, restarts int) control.ProcessStatus {
	return control.ProcessStatus{Job: job, Process: proc, State: "running", PID: pid, ExecPID: pid + 1, Since: since,
		Restarts: restarts, Usage: &control.Usage{CPUSeconds: cpu, RSSBytes: rss, OpenFDs: 7, Processes: 1}}
}

func status(ps ...control.ProcessStatus) control.Status { return control.Status{Processes: ps} }

// TestPointsFromStatuses: CPU is the rate between two points of one
// instance (and since its start for a new one), memory and descriptors are
// read as given, what is not known is NaN, and probe latencies are kept by
// role.
func TestPointsFromStatuses(t *testing.T) {
	s := New(Config{})
	web := running("web", "server", 100, t0.Add(-20*time.Second), 1.0, 10<<20, 0)
	web.Probes = []control.ProbeResult{{Role: "liveness", LatencyMS: 2.5}, {Role: "readiness", LatencyMS: 0.5}}
	s.Record(status(web), t0)
	web.Usage.CPUSeconds, web.Usage.RSSBytes = 6.0, 12<<20 // half a core for 10 s
	s.Record(status(web), t0.Add(10*time.Second))
	// A restart: a new instance, up since 2 s, with 1 s of CPU.
	re := running("web", "server", 200, t0.Add(18*time.Second), 1.0, 8<<20, 1)
	s.Record(status(re), t0.Add(20*time.Second))
	down := control.ProcessStatus{Job: "web", Process: "server", State: "backoff", Restarts: 2}
	s.Record(status(down), t0.Add(30*time.Second))

	got := s.Query(time.Hour, "", "")
	if len(got) != 1 {
		t.Fatalf("%d series", len(got))
	}
	se := got[0]
	want := Series{Job: "web", Process: "server", Step: 10,
		T:          []int64{t0.Unix(), t0.Unix() + 10, t0.Unix() + 20, t0.Unix() + 30},
		Up:         Values{1, 1, 1, 0},
		CPU:        Values{0.05, 0.5, 0.5, math.NaN()},
		RSS:        Values{10 << 20, 12 << 20, 8 << 20, math.NaN()},
		FDs:        Values{7, 7, 7, math.NaN()},
		Restarts:   []int{0, 0, 1, 2},
		LivenessMS: Values{2.5, 2.5, math.NaN(), math.NaN()},
		ReadyMS:    Values{0.5, 0.5, math.NaN(), math.NaN()},
	}
	js, err := json.Marshal(se) // six significant digits: the store keeps float32
	if err != nil {
		t.Fatal(err)
	}
	if w, _ := json.Marshal(want); string(js) != string(w) {
		t.Fatalf("series\n got %s\nwant %s", js, w)
	}
	if !strings.Contains(string(js), `"cpu_cores":[0.05,0.5,0.5,null]`) || !strings.Contains(string(js), `"rss_bytes":[1.04858e+07,`) {
		t.Fatalf("JSON %s", js)
	}
}

// TestRingsAreBoundedAndFoldsAligned: the fine ring keeps its last Fine
// points; coarse points fold Fold steps each, on the clock's boundaries
// for every process alike (one that appears mid-fold has a shorter first
// fold), with means, maxima and the share of time up; a span longer than
// the fine points is answered from the coarse ones, the fold in progress
// last. A process no longer in the status is forgotten.
func TestRingsAreBoundedAndFoldsAligned(t *testing.T) {
	s := New(Config{Step: 10 * time.Second, Fine: 4, Fold: 3, Coarse: 2})
	for i := range 10 { // t0+10 ... t0+100
		at := t0.Add(time.Duration(i+1) * 10 * time.Second)
		a := running("j", "a", 1, t0, float64(i), int64(i+1)<<20, i)
		if i == 4 {
			a = control.ProcessStatus{Job: "j", Process: "a", State: "backoff", Restarts: i}
		}
		ps := []control.ProcessStatus{a}
		if i >= 4 { // b appears at t0+50, mid-fold
			ps = append(ps, running("j", "b", 9, t0, 0, 1<<20, 0))
		}
		s.Record(status(ps...), at)
	}
	fine := s.Query(40*time.Second, "j", "a")
	if len(fine) != 1 || !slices.Equal(fine[0].T, []int64{t0.Unix() + 70, t0.Unix() + 80, t0.Unix() + 90, t0.Unix() + 100}) {
		t.Fatalf("fine %+v", fine)
	}
	coarse := s.Query(time.Hour, "j", "")
	if len(coarse) != 2 || coarse[0].Process != "a" || coarse[1].Process != "b" || coarse[0].Step != 30 {
		t.Fatalf("coarse %+v", coarse)
	}
	// Folds end at t0+30, 60, 90, 120: the ring keeps two (60, 90); the
	// one in progress (100) comes last.
	a, b := coarse[0], coarse[1]
	if !slices.Equal(a.T, []int64{t0.Unix() + 60, t0.Unix() + 90, t0.Unix() + 100}) || !slices.Equal(b.T, a.T) {
		t.Fatalf("coarse times a %v, b %v", a.T, b.T)
	}
	// a's fold ending at 60 holds i = 3, 4 (down), 5: up 2/3, RSS at most
	// 6 MiB, restarts as at its end; b's first fold holds 50 and 60.
	if a.Up[0] != 2.0/3 || a.RSS[0] != 6<<20 || a.Restarts[0] != 5 || b.Up[0] != 1 {
		t.Fatalf("fold at 60: a up %v rss %v restarts %v; b up %v", a.Up[0], a.RSS[0], a.Restarts[0], b.Up[0])
	}
	s.Record(status(running("j", "b", 9, t0, 0, 1<<20, 0)), t0.Add(110*time.Second))
	if left := s.Query(time.Hour, "", ""); len(left) != 1 || left[0].Process != "b" {
		t.Fatalf("after a left: %+v", left)
	}
}

// fakeSource counts status reads; with failEvery, every such read fails.
type fakeSource struct {
	reads     atomic.Int32
	failEvery int32
}

func (f *fakeSource) Status(context.Context) (control.Status, error) {
	if n := f.reads.Add(1); f.failEvery > 0 && n%f.failEvery == 0 {
		return control.Status{}, errors.New("status unavailable")
	}
	return status(running("j", "p", 1, time.Now(), 0, 1<<20, 0)), nil
}

// TestRunSkipsAFailedRead: a step whose status cannot be read has no
// point (a gap in the graphs), and the steps after it go on.
func TestRunSkipsAFailedRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Config{Step: 10 * time.Second})
		src := &fakeSource{failEvery: 2}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { s.Run(ctx, src); close(done) }()
		time.Sleep(35 * time.Second) // synctest: virtual time, reads at 0, 10, 20 and 30 s
		synctest.Wait()
		cancel()
		<-done
		got := s.Query(time.Hour, "j", "p")
		if len(got) != 1 || len(got[0].T) != 2 || got[0].T[1]-got[0].T[0] != 20 || src.reads.Load() != 4 {
			t.Fatalf("after 4 reads, every second one failing: %+v", got)
		}
	})
}

// TestRunRecordsEveryStep: Run records at once, then once a step, each
// recording closing the channel of Changes; it ends with its context.
func TestRunRecordsEveryStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Config{Step: 10 * time.Second})
		src := &fakeSource{}
		ctx, cancel := context.WithCancel(t.Context())
		changed := s.Changes()
		done := make(chan struct{})
		go func() { s.Run(ctx, src); close(done) }()
		<-changed
		start := time.Now()
		changed = s.Changes()
		<-changed
		if took := time.Since(start); took != 10*time.Second || src.reads.Load() != 2 {
			t.Fatalf("second point after %v, %d reads", took, src.reads.Load())
		}
		if got := s.Query(time.Hour, "j", "p"); len(got) != 1 || len(got[0].T) != 2 {
			t.Fatalf("points %+v", got)
		}
		cancel()
		<-done
	})
}

// BenchmarkMemory100 fills the history of 100 processes to its bounds (an
// hour of fine points and six of coarse ones) and reports what the store
// then holds on the heap, in total and per process.
func BenchmarkMemory100(b *testing.B) {
	const n = 100
	cfg := Config{}.withDefaults()
	steps := cfg.Fine + cfg.Coarse*cfg.Fold + cfg.Fold
	ps := make([]control.ProcessStatus, n)
	for i := range ps {
		ps[i] = running("job", fmt.Sprintf("p%03d", i), 1000+i, t0, 0, 50<<20, 0)
		ps[i].Probes = []control.ProbeResult{{Role: "liveness", LatencyMS: 1}}
	}
	var held float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := New(Config{})
		for i := range steps {
			for j := range ps {
				ps[j].Usage.CPUSeconds = float64(i)
			}
			s.Record(status(ps...), t0.Add(time.Duration(i)*cfg.Step))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		held = float64(after.HeapAlloc) - float64(before.HeapAlloc)
		runtime.KeepAlive(s)
	}
	b.ReportMetric(held, "heap-bytes")
	b.ReportMetric(held/n, "heap-bytes/process")
}

// BenchmarkRecord100 is the cost of one step: a point for each of 100
// processes, on full rings.
func BenchmarkRecord100(b *testing.B) {
	ps := make([]control.ProcessStatus, 100)
	for i := range ps {
		ps[i] = running("job", fmt.Sprintf("p%03d", i), 1000+i, t0, 0, 50<<20, 0)
	}
	s := New(Config{})
	at := t0
	for range 3000 {
		at = at.Add(s.Step())
		s.Record(status(ps...), at)
	}
	for b.Loop() {
		at = at.Add(s.Step())
		s.Record(status(ps...), at)
	}
}

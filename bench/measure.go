package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"
)

// minVictimAge keeps the restart test from killing a child that has only
// just started: s6 and supervisord deliberately delay the restart of a
// process that ran for less than a second, and that is not what the test is
// about.
const minVictimAge = 1500 * time.Millisecond

// maxJitter bounds the random pause before each kill. monit checks once per
// 1 s cycle and supervisord notices deaths on its 1 s poll tick; killing
// right after the previous restart would hit the same phase of those
// timers every time and report a best or worst case instead of a typical
// one.
const maxJitter = time.Second

// restarts kills a random live child (one that has run for minVictimAge)
// samples times, each after a random pause, waits for a new pid to report,
// and returns kill-to-new-start latencies.
func (in *instance) restarts(ctx context.Context, samples int, guard time.Duration) ([]time.Duration, error) {
	ctx, cancel := in.whileRunning(ctx)
	defer cancel()
	var out []time.Duration
	for range samples {
		pause := time.Duration(rand.Int64N(int64(maxJitter)))
		victim, seen := in.pickVictim()
		if victim == nil {
			return out, fmt.Errorf("no live child to kill")
		}
		pause = max(pause, minVictimAge-time.Duration(monoNow()-victim.Start))
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return out, fmt.Errorf("restarts: %w", ctx.Err())
		}
		in.tr.mu.Lock()
		seen = len(in.tr.reports) // a restart may have happened meanwhile
		in.tr.mu.Unlock()
		t0 := monoNow()
		if err := in.tr.kill(victim.Pid); err != nil {
			return out, err
		}
		var start int64
		err := in.tr.wait(ctx, time.Now().Add(guard), func() bool {
			if len(in.tr.reports) > seen {
				start = in.tr.reports[seen].Start
				return true
			}
			return false
		})
		if err != nil {
			return out, fmt.Errorf("no restart within %s after killing %d: %w", guard, victim.Pid, err)
		}
		out = append(out, time.Duration(start-t0))
	}
	return out, nil
}

// pickVictim chooses a random live child old enough to kill, or the oldest
// one if none is, and returns it with the current number of reports.
func (in *instance) pickVictim() (*kid, int) {
	in.tr.mu.Lock()
	defer in.tr.mu.Unlock()
	now := monoNow()
	var oldest *kid
	var ripe []*kid
	for _, k := range in.tr.reports {
		if k.Dead != 0 {
			continue
		}
		if oldest == nil || k.Start < oldest.Start {
			oldest = k
		}
		if time.Duration(now-k.Start) >= minVictimAge {
			ripe = append(ripe, k)
		}
	}
	if len(ripe) > 0 {
		return ripe[rand.IntN(len(ripe))], len(in.tr.reports)
	}
	return oldest, len(in.tr.reports)
}

// statusTimes runs the status query runs times and returns wall times.
func (in *instance) statusTimes(ctx context.Context, runs int) ([]time.Duration, error) {
	out := make([]time.Duration, 0, runs)
	for range runs {
		took, err := in.drv.Status(ctx)
		if err != nil {
			return out, err
		}
		out = append(out, took)
	}
	return out, nil
}

// idleCPU measures, over one shared window, the CPU used by each
// instance's supervisor processes as a percentage of one core.
func idleCPU(ctx context.Context, ins []*instance, window time.Duration) ([]float64, []error) {
	pids := make([][]int, len(ins))
	before := make([]map[int]uint64, len(ins))
	errs := make([]error, len(ins))
	for i, in := range ins {
		pids[i], errs[i] = in.supervisorPids()
		before[i], _ = cpuTicks(pids[i])
	}
	t0 := monoNow()
	select {
	case <-time.After(window):
	case <-ctx.Done():
		for i := range errs {
			errs[i] = fmt.Errorf("idle window: %w", ctx.Err())
		}
		return make([]float64, len(ins)), errs
	}
	elapsed := time.Duration(monoNow() - t0).Seconds()
	out := make([]float64, len(ins))
	for i, in := range ins {
		if errs[i] != nil {
			continue
		}
		after, _ := cpuTicks(pids[i])
		if _, ok := after[in.cmd.Process.Pid]; !ok {
			errs[i] = fmt.Errorf("%s exited during the idle window", in.peer)
			continue
		}
		// Short-lived helpers (a monit start program finishing) may vanish;
		// their few ticks are lost, which is negligible when idle.
		var d uint64
		for p, t := range after {
			if b, ok := before[i][p]; ok && t >= b {
				d += t - b
			}
		}
		out[i] = float64(d) / clockTicks / elapsed * 100
	}
	return out, errs
}

// stopResult describes one stop-all.
type stopResult struct {
	Cmd       time.Duration // until the stop command returned
	AllGone   time.Duration // until every child was dead; -1 if some never died
	Prompt    time.Duration // until every child but the TERM-ignorer was dead
	PromptOK  bool          // false if a prompt child never died
	Leftovers int           // children the harness had to kill
	CmdErr    error
	Ignorer   *kid // the TERM-ignoring child, if any, after the stop
	T0        int64
}

// stopAll issues the supervisor's stop-all and waits, event-driven, until
// every child has died. A child counts as a leftover when the stop command
// has returned and no child has died for grace; the harness then kills it.
func (in *instance) stopAll(ctx context.Context, grace time.Duration) stopResult {
	var r stopResult
	ignorer := in.findIgnorer()
	r.T0 = monoNow()
	r.CmdErr = in.drv.StopAll(ctx)
	r.Cmd = time.Duration(monoNow() - r.T0)
	for {
		in.tr.mu.Lock()
		lastDeath := int64(0)
		for _, k := range in.tr.reports {
			lastDeath = max(lastDeath, k.Dead)
		}
		in.tr.mu.Unlock()
		from := max(lastDeath, r.T0+int64(r.Cmd))
		deadline := time.Now().Add(time.Duration(from + int64(grace) - monoNow()))
		err := in.tr.wait(ctx, deadline, func() bool {
			if in.tr.aliveCount() == 0 {
				return true
			}
			for _, k := range in.tr.reports {
				if k.Dead > lastDeath {
					return true // a death: restart the grace period
				}
			}
			return false
		})
		in.tr.mu.Lock()
		done := in.tr.aliveCount() == 0
		in.tr.mu.Unlock()
		if done || err != nil {
			break
		}
	}
	snap := in.tr.snapshot()
	var last int64
	for _, k := range snap {
		if k.Dead == 0 {
			r.Leftovers++
		}
		last = max(last, k.Dead)
	}
	r.AllGone = time.Duration(last - r.T0)
	var lastPrompt int64
	r.PromptOK = true
	for _, k := range snap {
		if k.Pid != ignorer {
			r.PromptOK = r.PromptOK && k.Dead != 0
			lastPrompt = max(lastPrompt, k.Dead)
		}
	}
	r.Prompt = time.Duration(lastPrompt - r.T0)
	if r.Leftovers > 0 {
		r.AllGone = -1
		in.tr.killAlive(ctx)
	}
	for _, k := range in.tr.snapshot() {
		if k.Pid == ignorer {
			r.Ignorer = &k
		}
	}
	return r
}

// findIgnorer returns the pid of the live child whose environment asks it
// to ignore TERM, or 0.
func (in *instance) findIgnorer() int {
	if in.spec.Variant != ignoreLast {
		return 0
	}
	for pid := range in.tr.alivePids() {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err == nil && slices.Contains(strings.Split(string(b), "\x00"), "BENCH_IGNORE_TERM=1") {
			return pid
		}
	}
	return 0
}

// crashResult describes a crash loop.
type crashResult struct {
	Starts    int       // reports within the window
	Intervals []float64 // seconds between consecutive starts (whole observation)
	Silent    float64   // seconds since the last start at the end of observation
	BacksOff  bool
	GaveUp    bool
}

// crash observes a crash-looping instance for window from the first start
// of the child, counting starts, and for extra beyond that to see whether
// the supervisor gives up.
func (in *instance) crash(ctx context.Context, window, extra time.Duration) (crashResult, error) {
	wctx, cancel := in.whileRunning(ctx)
	defer cancel()
	var first int64
	err := in.tr.wait(wctx, time.Now().Add(startGuard(1)), func() bool {
		if len(in.tr.reports) > 0 {
			first = in.tr.reports[0].Start
			return true
		}
		return false
	})
	if err != nil {
		return crashResult{}, fmt.Errorf("the crashing child never started: %w", err)
	}
	end := first + int64(window+extra)
	select {
	case <-time.After(time.Duration(end - monoNow())):
	case <-ctx.Done():
		return crashResult{}, fmt.Errorf("crash loop: %w", ctx.Err())
	}
	ks := in.tr.snapshot()
	var r crashResult
	starts := make([]int64, 0, len(ks))
	for _, k := range ks {
		starts = append(starts, k.Start)
		if k.Start-first <= int64(window) {
			r.Starts++
		}
	}
	slices.Sort(starts)
	for i := 1; i < len(starts); i++ {
		r.Intervals = append(r.Intervals, time.Duration(starts[i]-starts[i-1]).Seconds())
	}
	r.Silent = time.Duration(end - starts[len(starts)-1]).Seconds()
	if n := len(r.Intervals); n >= 3 {
		r.BacksOff = mean(r.Intervals[n-n/2:]) > 1.5*mean(r.Intervals[:n/2])
	}
	longest := 0.0
	for _, iv := range r.Intervals {
		longest = math.Max(longest, iv)
	}
	// One start tells nothing: the supervisor may still be waiting on its
	// own start timeout (monit waits 30 s for a process to appear).
	r.GaveUp = len(r.Intervals) > 0 && r.Silent >= math.Max(3*longest, 8)
	return r, nil
}

package main

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
)

// politeClose is how long a daemon gets to exit on its own at teardown.
const politeClose = 10 * time.Second

// startGuard and restartGuard are failure guards, generous for monit, which
// starts about five processes per second and checks once per cycle.
func startGuard(n int) time.Duration   { return 20*time.Second + time.Duration(n)*450*time.Millisecond }
func restartGuard(n int) time.Duration { return 10*time.Second + time.Duration(n)*10*time.Millisecond }

// run executes every phase. The slow, mostly idle tests (crash loop, stop
// with a TERM-ignoring child) run for all supervisors in the background.
// The timing-sensitive tests run in lanes: all supervisors that are not
// paced share one lane, where CPU-heavy steps take turns; each paced
// supervisor (monit) gets a lane of its own alongside, because its timings
// are set by its own sleeps and it would otherwise dominate the run time.
// In quick mode a paced supervisor even runs its sizes side by side.
func (h *harness) run(ctx context.Context) {
	ready := make(chan struct{})
	var bg sync.WaitGroup
	bg.Go(func() { h.background(ctx, ready) })
	select {
	case <-ready:
	case <-ctx.Done():
	}
	var lanes sync.WaitGroup
	var steady []string
	shared := make(chan struct{}) // closed when the shared lane is done
	for _, p := range h.peers {
		switch {
		case isPaced(p) && h.m.PacedSizeLanes:
			for _, n := range h.m.Sizes {
				lanes.Go(func() { h.size(ctx, []string{p}, n, h.m.Idle) })
			}
		case isPaced(p):
			lanes.Go(func() { h.lane(ctx, []string{p}, shared) })
		default:
			steady = append(steady, p)
		}
	}
	lanes.Go(func() {
		defer close(shared)
		if len(steady) > 0 {
			h.lane(ctx, steady, nil)
		}
	})
	lanes.Wait()
	h.logf("waiting for the background tests")
	bg.Wait()
}

// alone is the size from which every supervisor runs alone: at N=1000,
// seven supervisors' children and per-process supervisors (Go programs of
// a few threads each, and vigil's inits) would need more pids than the
// kernel's default pid_max (32768) holds, and monit busy with a thousand
// processes takes a tenth to a third of a core. The supervisors of a lane
// then run one at a time, each with an idle window of a third of the
// usual length, and a paced lane waits for the shared lane to be done.
const alone = 1000

// lane runs the sizes of peers in turn. A lane given after waits for it to
// be closed before its sizes from alone up.
func (h *harness) lane(ctx context.Context, peers []string, after <-chan struct{}) {
	for _, n := range h.m.Sizes {
		if n < alone {
			h.size(ctx, peers, n, h.m.Idle)
			continue
		}
		if after != nil {
			h.logf("[%s] N=%d waits for the shared lane", strings.Join(peers, ","), n)
			select {
			case <-after:
			case <-ctx.Done():
				return
			}
		}
		for _, p := range peers {
			if ctx.Err() != nil {
				return
			}
			h.size(ctx, []string{p}, n, h.m.Idle/3)
		}
	}
}

// background runs the crash loop and the TERM-ignorer stop for every
// supervisor at once. ready is closed once the ignorer instances of the
// supervisors that are not paced are up, their stop has been issued and
// their prompt children are gone, so the foreground does not share the
// machine with that burst.
func (h *harness) background(ctx context.Context, ready chan<- struct{}) {
	var up, quiet, all sync.WaitGroup
	goStop := make(chan struct{})
	for _, p := range h.peers {
		b := barrier{goStop: goStop, up: func() {}, quiet: func() {}}
		if !isPaced(p) {
			up.Add(1)
			quiet.Add(1)
			b.up, b.quiet = sync.OnceFunc(up.Done), sync.OnceFunc(quiet.Done)
		}
		all.Go(func() { h.crashTest(ctx, p) })
		all.Go(func() { h.ignorerTest(ctx, p, b) })
	}
	up.Wait()
	h.logf("background: TERM-ignorer instances up; stopping them")
	close(goStop)
	quiet.Wait()
	close(ready)
	all.Wait()
}

// barrier lets the background tests line up: up and quiet are called once
// each (they are no-ops for paced supervisors, which do not wait for
// goStop either).
type barrier struct {
	goStop    <-chan struct{}
	up, quiet func()
}

func (h *harness) crashTest(ctx context.Context, p string) {
	in, err := h.launch(p, 1, crashLoop, "crash")
	if err != nil {
		h.res.setErr("crash.starts", p, err)
		return
	}
	defer in.close(ctx, politeClose)
	r, err := in.crash(ctx, h.m.Crash, h.m.CrashExtra)
	if err != nil {
		h.res.setErr("crash.starts", p, err)
		return
	}
	h.res.set("crash.starts", p, cell{V: float64(r.Starts), Text: fmt.Sprintf("%d", r.Starts)})
	h.res.set("crash.intervals", p, cell{V: math.NaN(), Text: fmtIntervals(r.Intervals)})
	h.res.set("crash.backoff", p, cell{V: math.NaN(), Text: yesNo(r.BacksOff)})
	gave := "no"
	switch {
	case r.Starts <= 1 && len(r.Intervals) == 0:
		gave = fmt.Sprintf("unknown (no restart in %.0f s)", r.Silent)
	case r.GaveUp:
		gave = fmt.Sprintf("yes (silent for the last %.0f s)", r.Silent)
	}
	h.res.set("crash.gaveup", p, cell{V: math.NaN(), Text: gave})
}

func (h *harness) ignorerTest(ctx context.Context, p string, b barrier) {
	defer b.up()
	defer b.quiet()
	n := h.m.IgnoreN
	in, err := h.launch(p, n, ignoreLast, "ignore")
	if err != nil {
		h.res.setErr("ign.all", p, err)
		return
	}
	defer in.close(ctx, politeClose)
	if _, err := in.waitUp(ctx, n, startGuard(n)); err != nil {
		h.res.setErr("ign.all", p, err)
		return
	}
	b.up()
	if !isPaced(p) {
		select {
		case <-b.goStop:
		case <-ctx.Done():
			return
		}
	}
	go func() {
		defer b.quiet()
		_ = in.tr.wait(ctx, time.Now().Add(15*time.Second), func() bool { return in.tr.aliveCount() <= 1 })
	}()
	r := in.stopAll(ctx, h.m.Grace)
	h.recordStop("ign", p, r)
	h.res.set("ign.signals", p, cell{V: math.NaN(), Text: ignorerFate(r)})
}

// size runs the foreground tests of one lane at one N: starts one at a
// time (a start is a burst of CPU), restart tests one at a time (a restart
// of a few milliseconds is as long as each wake-up of a process on an idle
// CPU allows, and another supervisor's activity changes that: see
// bench/README.md), status queries one at a time, memory, one shared idle
// window of length idle, and at N=100 the stop-all tests one at a time.
func (h *harness) size(ctx context.Context, peers []string, n int, idle time.Duration) {
	lane := strings.Join(peers, ",")
	h.logf("[%s] N=%d: start, restart, status and memory tests", lane, n)
	var live []*instance
	for _, p := range peers {
		if in := h.startAt(ctx, p, n); in != nil {
			live = append(live, in)
		}
	}
	for _, in := range live {
		h.restartAt(ctx, in, n)
	}
	for _, in := range live {
		h.statusAt(ctx, in, n)
		h.memoryAt(in, n)
	}
	h.spacedStatusAt(ctx, live, n)

	if len(live) == 0 {
		return
	}
	h.logf("[%s] N=%d: idle CPU window of %s", lane, n, idle)
	cpu, errs := idleCPU(ctx, live, idle)
	for i, in := range live {
		key := fmt.Sprintf("cpu/%d", n)
		if errs[i] != nil {
			h.res.setErr(key, in.peer, errs[i])
		} else {
			h.res.set(key, in.peer, cell{V: cpu[i], Text: fmt.Sprintf("%.2f %%", cpu[i])})
		}
	}
	if n == mainN {
		h.logf("[%s] N=%d: stop-all tests", lane, n)
		for _, in := range live {
			h.recordStop("stop", in.peer, in.stopAll(ctx, h.m.Grace))
		}
	}
	var wg sync.WaitGroup
	for _, in := range live {
		wg.Go(func() {
			if _, err := in.close(ctx, politeClose); err != nil {
				h.logf("%s teardown: %v", in.peer, err)
			}
		})
	}
	wg.Wait()
}

func isPaced(peer string) bool {
	d, err := newDriver(peer, "")
	return err == nil && d.Paced()
}

func (h *harness) restartAt(ctx context.Context, in *instance, n int) {
	sfx := fmt.Sprintf("/%d", n)
	samples := min(h.m.GrowthSamples, n)
	if n == mainN {
		samples = h.m.RestartSamples
	}
	lat, err := in.restarts(ctx, samples, restartGuard(n))
	if err != nil {
		h.res.setErr("restart.med"+sfx, in.peer, err)
		return
	}
	s := seconds(lat)
	h.res.set("restart.med"+sfx, in.peer, secCell(median(s)))
	h.res.set("restart.p95"+sfx, in.peer, secCell(quantile(s, 0.95)))
}

// statusAt times the status query at N=100 and above (fewer runs above).
func (h *harness) statusAt(ctx context.Context, in *instance, n int) {
	if n < mainN {
		return
	}
	key, runs := fmt.Sprintf("status/%d", n), h.m.StatusRuns
	if n > mainN {
		runs = max(runs/4, 3)
	}
	st, err := in.statusTimes(ctx, runs)
	if err != nil {
		h.res.setErr(key, in.peer, err)
		return
	}
	h.res.set(key, in.peer, secCell(median(seconds(st))))
}

// spacedGap separates the spaced status queries: longer than vigil's
// sharing of one /proc pass between statuses (one second), so that each
// query finds the supervisor as a query now and then would.
const spacedGap = 1200 * time.Millisecond

// spacedStatusAt times status queries each at least spacedGap after the
// instance's last, at N=100 and above. The instances take turns, one query
// at a time, so that no two queries meet.
func (h *harness) spacedStatusAt(ctx context.Context, live []*instance, n int) {
	if n < mainN || len(live) == 0 {
		return
	}
	key := fmt.Sprintf("status.spaced/%d", n)
	times := make([][]time.Duration, len(live))
	failed := make([]bool, len(live))
	for range h.m.SpacedRuns {
		for i, in := range live {
			select {
			case <-time.After(spacedGap / time.Duration(len(live))):
			case <-ctx.Done():
				return
			}
			if failed[i] {
				continue
			}
			d, err := in.statusTimes(ctx, 1)
			if err != nil {
				h.res.setErr(key, in.peer, err)
				failed[i] = true
				continue
			}
			times[i] = append(times[i], d...)
		}
	}
	for i, in := range live {
		if !failed[i] {
			h.res.set(key, in.peer, secCell(median(seconds(times[i]))))
		}
	}
}

func (h *harness) memoryAt(in *instance, n int) {
	sfx := fmt.Sprintf("/%d", n)
	s, err := in.memory()
	if err != nil {
		h.res.setErr("rss"+sfx, in.peer, err)
		return
	}
	mem := s.Total
	h.res.set("rss"+sfx, in.peer, kibCell(float64(mem.RSS)))
	h.res.set("pss"+sfx, in.peer, kibCell(float64(mem.PSS)))
	h.res.set("rss.per"+sfx, in.peer, kibCell(float64(mem.RSS)/float64(n)))
	h.res.set("pss.per"+sfx, in.peer, kibCell(float64(mem.PSS)/float64(n)))
	h.res.set("procs"+sfx, in.peer, cell{V: float64(s.Procs), Text: fmt.Sprint(s.Procs)})
	if math.IsNaN(s.PerPrivate) {
		h.res.set("priv.per"+sfx, in.peer, cell{V: math.NaN(), Text: "— (one process)"})
	} else {
		h.res.set("priv.per"+sfx, in.peer, kibCell(s.PerPrivate))
	}
	h.res.set("root.share"+sfx, in.peer, kibCell(float64(s.Root.PSS)/float64(n)))
}

// recordStop stores one stop-all under prefix ("stop" or "ign").
func (h *harness) recordStop(prefix, p string, r stopResult) {
	cmdText := fmtSec(r.Cmd.Seconds())
	if r.CmdErr != nil {
		cmdText += " (error: " + tail(r.CmdErr.Error(), 100) + ")"
	}
	h.res.set(prefix+".cmd", p, cell{V: r.Cmd.Seconds(), Text: cmdText})
	if r.AllGone < 0 {
		h.res.set(prefix+".all", p, cell{V: math.NaN(), Text: fmt.Sprintf("never (%d left)", r.Leftovers)})
	} else {
		h.res.set(prefix+".all", p, secCell(r.AllGone.Seconds()))
	}
	if r.Ignorer != nil {
		if r.PromptOK {
			h.res.set(prefix+".prompt", p, secCell(r.Prompt.Seconds()))
		} else {
			h.res.set(prefix+".prompt", p, cell{V: math.NaN(), Text: "never"})
		}
	}
	h.res.set(prefix+".left", p, cell{V: float64(r.Leftovers), Text: fmt.Sprint(r.Leftovers)})
}

// ignorerFate describes the signals the TERM-ignoring child saw and how it
// ended, relative to the stop command.
func ignorerFate(r stopResult) string {
	k := r.Ignorer
	if k == nil {
		return "error: TERM-ignoring child not identified"
	}
	var parts []string
	for _, s := range k.Signals {
		parts = append(parts, fmt.Sprintf("%s@%.1fs", s.Name, time.Duration(s.At-r.T0).Seconds()))
	}
	if len(parts) == 0 {
		parts = append(parts, "no catchable signal")
	}
	switch {
	case k.Killed:
		parts = append(parts, "no KILL (harness killed it)")
	case k.Dead != 0:
		parts = append(parts, fmt.Sprintf("KILL@%.1fs", time.Duration(k.Dead-r.T0).Seconds()))
	}
	return strings.Join(parts, ", ")
}

func fmtIntervals(iv []float64) string {
	if len(iv) == 0 {
		return "—"
	}
	var s []string
	for i, v := range iv {
		if len(iv) > 6 && i == 3 {
			s = append(s, "…")
		}
		if len(iv) <= 6 || i < 3 || i >= len(iv)-3 {
			s = append(s, fmt.Sprintf("%.1f", v))
		}
	}
	return strings.Join(s, ", ") + " s"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

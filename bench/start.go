package main

import (
	"context"
	"fmt"
	"strings"
)

// startAt times m.StartRuns starts of one supervisor with n children (one
// for a paced supervisor, whose start takes minutes) and records the
// median of the start times and of the CPU used by each. Each start but
// the last is torn down before the next, within the same turn of the
// start lock, so that no other lane's start meets the teardown. It
// returns the last start's instance, live, or nil.
func (h *harness) startAt(ctx context.Context, p string, n int) *instance {
	runs := h.m.StartRuns
	if runs < 1 || isPaced(p) {
		runs = 1
	}
	key := fmt.Sprintf("start/%d", n)
	h.starting.Lock()
	defer h.starting.Unlock()
	var times, cpus []float64
	var in *instance
	for i := range runs {
		if in != nil {
			if _, err := in.close(ctx, politeClose); err != nil {
				h.logf("%s teardown: %v", p, err)
			}
		}
		in = h.startOnce(ctx, p, n, i, key)
		if in == nil {
			return nil
		}
		times = append(times, in.started.Seconds())
		// Everything the supervisor has run so far is the start (a paced
		// one has also idled in between, at its idle rate).
		if cpu, err := in.supervisorCPU(); err == nil {
			cpus = append(cpus, cpu.Seconds())
		} else {
			h.res.setErr("startcpu/"+fmt.Sprint(n), p, err)
		}
	}
	h.res.set(key, p, secCell(median(times)))
	if len(cpus) == runs {
		h.res.set("startcpu/"+fmt.Sprint(n), p, secCell(median(cpus)))
	}
	if runs > 1 {
		h.logf("[%s] N=%d: starts %s", p, n, fmtRuns(times))
	}
	return in
}

// startOnce launches one supervisor with n children (the run-th start of
// this size) and waits for all of them. It records a failure under key
// and returns nil.
func (h *harness) startOnce(ctx context.Context, p string, n, run int, key string) *instance {
	if ctx.Err() != nil {
		return nil
	}
	in, err := h.launch(p, n, plain, fmt.Sprintf("%d.%d", n, run))
	if err != nil {
		h.res.setErr(key, p, err)
		return nil
	}
	d, err := in.waitUp(ctx, n, startGuard(n))
	if err != nil {
		h.res.setErr(key, p, err)
		in.close(ctx, politeClose)
		return nil
	}
	in.started = d
	return in
}

// fmtRuns lists start times for the log.
func fmtRuns(secs []float64) string {
	out := make([]string, len(secs))
	for i, v := range secs {
		out[i] = fmtSec(v)
	}
	return strings.Join(out, ", ")
}

package backend

import (
	"cmp"
	"maps"
	"slices"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

// Changes is what a reload does to each process, by id, each list sorted.
type Changes struct {
	Start   []supervise.ID // configured, not running: start it
	Stop    []supervise.ID // running, no longer configured: stop it
	Restart []supervise.ID // running, configured otherwise (or not known to run as configured): stop it, start it anew
	Keep    []supervise.ID // running as configured: leave it alone
}

// Plan is a reload, decided: given the configuration in force (old), the
// next one and the processes that run, it says what starts, stops,
// restarts and is left alone. A process that runs is left alone only when
// old has it and same(old, next) says it is configured the same; one that
// runs without an entry in old restarts, so that what runs is always what
// next configures. Plan is pure: it reads its arguments only.
func Plan[S any](old, next map[supervise.ID]S, running []supervise.ID, same func(a, b S) bool) Changes {
	var c Changes
	up := map[supervise.ID]bool{}
	for _, id := range running {
		up[id] = true
		n, wanted := next[id]
		o, known := old[id]
		switch {
		case !wanted:
			c.Stop = append(c.Stop, id)
		case known && same(o, n):
			c.Keep = append(c.Keep, id)
		default:
			c.Restart = append(c.Restart, id)
		}
	}
	for id := range next {
		if !up[id] {
			c.Start = append(c.Start, id)
		}
	}
	for _, l := range []*[]supervise.ID{&c.Start, &c.Stop, &c.Restart, &c.Keep} {
		slices.SortFunc(*l, CompareIDs)
		*l = slices.Compact(*l)
	}
	return c
}

// Down lists the processes the plan stops, for good or to restart them.
func (c Changes) Down() []supervise.ID {
	out := append(slices.Clone(c.Stop), c.Restart...)
	slices.SortFunc(out, CompareIDs)
	return out
}

// Up lists the processes the plan starts, anew or again.
func (c Changes) Up() []supervise.ID {
	out := append(slices.Clone(c.Start), c.Restart...)
	slices.SortFunc(out, CompareIDs)
	return out
}

// Result is the plan as a reload reports it, with the problems found and
// the jobs whose configuration was rejected.
func (c Changes) Result(problems []control.Problem, rejected []string) control.ReloadResult {
	names := func(ids []supervise.ID) []string {
		var out []string
		for _, id := range ids {
			out = append(out, id.String())
		}
		return out
	}
	return control.ReloadResult{Started: names(c.Start), Stopped: names(c.Stop), Restarted: names(c.Restart),
		Unchanged: names(c.Keep), Rejected: rejected, Problems: problems}
}

// CompareIDs orders ids by job, then process.
func CompareIDs(a, b supervise.ID) int {
	return cmp.Or(cmp.Compare(a.Job, b.Job), cmp.Compare(a.Process, b.Process))
}

// IDs returns the keys of m, sorted.
func IDs[S any](m map[supervise.ID]S) []supervise.ID {
	return slices.SortedFunc(maps.Keys(m), CompareIDs)
}

package daemon

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/job"
)

// healthyWait bounds how long a start waits for a dependency with
// condition: healthy to become ready before starting its dependents anyway.
const healthyWait = time.Minute

// depGraph is the depends_on keys of every wanted process: the levels that
// order starts (a process's level is one more than its deepest dependency)
// and the dependencies that must be ready, not just started.
type depGraph struct {
	level   map[supervise.ID]int
	healthy map[supervise.ID]bool // depended on with condition: healthy
}

// dependencies computes the start levels of want. A cycle is a problem at
// the depends_on entry that closes it; its edge is ignored for ordering.
// A dependency on a process that is not configured is a warning.
func dependencies(want map[supervise.ID]job.Process) (depGraph, []control.Problem) {
	g := depGraph{level: map[supervise.ID]int{}, healthy: map[supervise.ID]bool{}}
	var probs []control.Problem
	const visiting = -1
	var visit func(id supervise.ID, path []supervise.ID) int
	visit = func(id supervise.ID, path []supervise.ID) int {
		if l, ok := g.level[id]; ok {
			return l
		}
		g.level[id] = visiting
		p := want[id]
		l := 0
		for i, d := range p.DependsOn {
			dep := supervise.ID{Job: d.Job, Process: d.Process}
			field, line := p.Locate(fmt.Sprintf("depends_on[%d]", i))
			if _, ok := want[dep]; !ok {
				probs = append(probs, control.Problem{Severity: "warning", Job: id.Job, File: p.Source.File,
					Line: line, Field: field, Message: fmt.Sprintf("depends on %s, which is not configured: ignored", dep)})
				continue
			}
			if g.level[dep] == visiting {
				cycle := append(slices.Clone(path), id, dep)
				names := make([]string, len(cycle[slices.Index(cycle, dep):]))
				for j, c := range cycle[slices.Index(cycle, dep):] {
					names[j] = c.String()
				}
				probs = append(probs, control.Problem{Severity: "error", Job: id.Job, File: p.Source.File,
					Line: line, Field: field, Message: "dependency cycle: " + strings.Join(names, " -> ")})
				continue
			}
			if d.Condition == "healthy" {
				g.healthy[dep] = true
			}
			l = max(l, visit(dep, append(path, id))+1)
		}
		g.level[id] = l
		return l
	}
	for _, id := range backend.IDs(want) {
		visit(id, nil)
	}
	return g, probs
}

// dependsOn gives, by process of want, the processes of want it depends
// on (depends_on).
func dependsOn(want map[supervise.ID]job.Process) map[supervise.ID][]supervise.ID {
	out := map[supervise.ID][]supervise.ID{}
	for id, p := range want {
		for _, d := range p.DependsOn {
			if dep := (supervise.ID{Job: d.Job, Process: d.Process}); dep != id {
				out[id] = append(out[id], dep)
			}
		}
	}
	return out
}

// waves splits ids by level, lowest first.
func (g depGraph) waves(ids []supervise.ID) [][]supervise.ID {
	top := 0
	for _, id := range ids {
		top = max(top, g.level[id])
	}
	out := make([][]supervise.ID, top+1)
	for _, id := range ids {
		out[g.level[id]] = append(out[g.level[id]], id)
	}
	return out
}

// startWaves starts ids wave by wave; before the next wave, it waits (up to
// healthyWait) for the processes others depend on as healthy to be ready.
func (d *Daemon) startWaves(ctx context.Context, g depGraph, ids []supervise.ID) error {
	for _, wave := range g.waves(ids) {
		if err := d.startAll(ctx, wave); err != nil {
			return err
		}
		var must []supervise.ID
		for _, id := range wave {
			if g.healthy[id] {
				must = append(must, id)
			}
		}
		d.waitReady(ctx, must)
	}
	return nil
}

func (d *Daemon) waitReady(ctx context.Context, ids []supervise.ID) {
	if len(ids) == 0 {
		return
	}
	guard := time.NewTimer(healthyWait)
	defer guard.Stop()
	for {
		changed := d.Changes()
		pending := false
		for _, id := range ids {
			if s, ok := d.tree.Get(id); ok {
				st := s.Status()
				pending = pending || (!st.Ready && (st.State == supervise.Running || st.State == supervise.Starting))
			}
		}
		if !pending {
			return
		}
		select {
		case <-changed:
		case <-guard.C:
			d.log.Warn("dependencies not healthy in time: starting their dependents anyway", "wait", healthyWait)
			return
		case <-ctx.Done():
			return
		}
	}
}

// stopWaves stops the processes with dependencies in reverse order of
// their levels, each wave settling before the next; Shutdown then stops
// whatever is left in parallel.
func (d *Daemon) stopWaves(ctx context.Context, g depGraph) {
	var ids []supervise.ID
	for _, s := range d.tree.List() {
		ids = append(ids, s.ID())
	}
	waves := g.waves(ids)
	for i := len(waves) - 1; i > 0; i-- { // level 0 goes with everything else
		var replies []<-chan supervise.Status
		for _, id := range waves[i] {
			if s, ok := d.tree.Get(id); ok {
				if r, err := s.Send(ctx, supervise.VerbStop); err == nil {
					replies = append(replies, r)
				}
			}
		}
		for _, r := range replies {
			select {
			case <-r:
			case <-ctx.Done():
				return
			}
		}
	}
}

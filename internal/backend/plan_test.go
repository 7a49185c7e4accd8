package backend

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-bosh/vigil/internal/supervise"
)

// TestPlan covers every case a process can be in at a reload: configured
// before or not, configured now or not, running or not, and configured
// the same or otherwise.
func TestPlan(t *testing.T) {
	// specs writes a configuration as "job/proc=spec ...".
	specs := func(s string) map[supervise.ID]string {
		out := map[supervise.ID]string{}
		for _, f := range strings.Fields(s) {
			name, spec, _ := strings.Cut(f, "=")
			out[id(name)] = spec
		}
		return out
	}
	ids := func(s string) []supervise.ID {
		var out []supervise.ID
		for _, f := range strings.Fields(s) {
			out = append(out, id(f))
		}
		return out
	}
	tests := []struct {
		name                   string
		old, next, running     string
		start, stop, rst, keep string
	}{
		{name: "nothing"},
		{name: "first load starts all", next: "a/a=1 b/b=1", start: "a/a b/b"},
		{name: "unchanged is kept", old: "a/a=1", next: "a/a=1", running: "a/a", keep: "a/a"},
		{name: "changed restarts", old: "a/a=1", next: "a/a=2", running: "a/a", rst: "a/a"},
		{name: "removed stops", old: "a/a=1", running: "a/a", stop: "a/a"},
		{name: "configured, not running, starts", old: "a/a=1", next: "a/a=1", start: "a/a"},
		{name: "running, unknown before, restarts", next: "a/a=1", running: "a/a", rst: "a/a"},
		{name: "running, unknown, unwanted, stops", running: "x/x", stop: "x/x"},
		{name: "a mix, sorted", old: "b/b=1 a/z=1 a/a=1 c/c=1", next: "d/d=1 a/a=2 b/b=1 a/b=1", running: "c/c b/b a/z a/a",
			start: "a/b d/d", stop: "a/z c/c", rst: "a/a", keep: "b/b"},
		{name: "running twice counts once", old: "a/a=1", next: "a/a=1", running: "a/a a/a", keep: "a/a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, next, running := specs(tt.old), specs(tt.next), ids(tt.running)
			oldCopy, nextCopy, runCopy := maps.Clone(old), maps.Clone(next), slices.Clone(running)
			c := Plan(old, next, running, func(a, b string) bool { return a == b })
			want := Changes{Start: ids(tt.start), Stop: ids(tt.stop), Restart: ids(tt.rst), Keep: ids(tt.keep)}
			if !reflect.DeepEqual(c, want) {
				t.Fatalf("got %+v, want %+v", c, want)
			}
			if !maps.Equal(old, oldCopy) || !maps.Equal(next, nextCopy) || !slices.Equal(running, runCopy) {
				t.Fatal("Plan changed its arguments")
			}
		})
	}
}

func TestChangesLists(t *testing.T) {
	c := Changes{Start: []supervise.ID{id("b/b")}, Stop: []supervise.ID{id("c/c")},
		Restart: []supervise.ID{id("a/a")}, Keep: []supervise.ID{id("d/d")}}
	if got := c.Up(); !slices.Equal(got, []supervise.ID{id("a/a"), id("b/b")}) {
		t.Errorf("up %v", got)
	}
	if got := c.Down(); !slices.Equal(got, []supervise.ID{id("a/a"), id("c/c")}) {
		t.Errorf("down %v", got)
	}
	r := c.Result(nil, []string{"e"})
	if !slices.Equal(r.Started, []string{"b/b"}) || !slices.Equal(r.Stopped, []string{"c/c"}) ||
		!slices.Equal(r.Restarted, []string{"a/a"}) || !slices.Equal(r.Unchanged, []string{"d/d"}) || !slices.Equal(r.Rejected, []string{"e"}) {
		t.Errorf("result %+v", r)
	}
}

func id(s string) supervise.ID {
	j, p, _ := strings.Cut(s, "/")
	return supervise.ID{Job: j, Process: p}
}

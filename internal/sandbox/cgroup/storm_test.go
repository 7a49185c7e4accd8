package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCreateWhileASiblingIsRemoved: each instance's group is created while
// the previous instance's is being removed, which also removes the levels
// above it once they are empty, as in a restart storm. No creation fails
// for a level that vanished under it, and once every group is removed
// nothing is left: not a group on one hierarchy whose creation failed on
// another.
func TestCreateWhileASiblingIsRemoved(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	mem := uint64(64 << 20)
	top := fmt.Sprintf("storm-%d", os.Getpid())
	lim := Limits{Memory: &mem}
	prev, _, err := Create(top+"/job/proc/0", lim)
	if err != nil || prev == nil {
		t.Skipf("no cgroups here: %v", err)
	}
	roots := rootsOf(prev)
	t.Cleanup(func() {
		for _, r := range roots {
			os.RemoveAll(filepath.Join(r, top)) // only empty directories can go
		}
	})
	failed := 0
	for i := 1; i <= 300; i++ {
		removed := make(chan error)
		go func(g *Group) { removed <- g.Remove() }(prev)
		g, _, err := Create(fmt.Sprintf("%s/job/proc/%d", top, i), lim)
		if rerr := <-removed; rerr != nil {
			t.Errorf("remove %d: %v", i-1, rerr)
		}
		if err != nil {
			failed++
			t.Logf("create %d: %v", i, err)
			continue
		}
		prev = g
	}
	if err := prev.Remove(); err != nil {
		t.Error(err)
	}
	if failed > 0 {
		t.Errorf("%d of 300 creations failed", failed)
	}
	for _, r := range roots {
		var left []string
		filepath.WalkDir(filepath.Join(r, top), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				left = append(left, p)
			}
			return nil
		})
		if len(left) > 0 {
			t.Errorf("left behind: %s", strings.Join(left, " "))
		}
	}
}

// rootsOf is the vigil/ directory of each hierarchy g lives on.
func rootsOf(g *Group) []string {
	var out []string
	for _, d := range g.Dirs() {
		for ; filepath.Base(d) != "vigil" && d != "/"; d = filepath.Dir(d) {
		}
		out = append(out, d)
	}
	return out
}

package daemon

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/vigil-bosh/vigil/internal/sandbox/cgroup"
	"github.com/vigil-bosh/vigil/internal/testproc"
	"github.com/vigil-bosh/vigil/internal/testroot"
)

// isolatedRoot is a BOSH root for isolated processes: under /run, not
// /tmp (a sandbox's /tmp is its own), readable by the processes' user.
func isolatedRoot(t *testing.T) *testroot.Root {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("isolation needs root")
	}
	r := testroot.New(t, testproc.SandboxParent()) // not under /tmp: the sandbox has its own
	os.Chmod(r.Layout.Root(), 0o755)
	return r
}

// runIsolated runs a daemon with isolation on l until the test ends, and
// returns it once its first load has settled.
func runIsolated(t *testing.T, r *testroot.Root) *Daemon {
	t.Helper()
	d, err := New(Config{Layout: r.Layout, Init: r.Self})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-d.Ready()
	return d
}

// TestStartSweepsEmptyCgroups: groups a crash left behind (an init killed
// with its daemon) are removed when the next daemon starts: the empty ones
// of its own root only. A group with a live process in it, and the groups
// of another root, are left alone.
func TestStartSweepsEmptyCgroups(t *testing.T) {
	r := isolatedRoot(t)
	tag := cgroupTagOf(r.Layout.Root())
	mk := func(rel string) *cgroup.Group {
		t.Helper()
		g, _, err := cgroup.Create(rel, cgroup.Limits{})
		if err != nil || g == nil {
			t.Skipf("no cgroups here: %v", err)
		}
		t.Cleanup(func() { g.Remove() })
		return g
	}
	empty := mk(tag + "/job/proc/1")
	busy := mk(tag + "/job/proc/2")
	other := mk(fmt.Sprintf("root-%08x/job/proc/1", os.Getpid()))
	sleeper := exec.Command("/bin/sleep", "1000")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	for _, d := range busy.Dirs() {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(sleeper.Process.Pid)), 0); err != nil {
			t.Fatal(err)
		}
	}
	runIsolated(t, r)
	exists := func(g *cgroup.Group) bool {
		for _, dir := range g.Dirs() {
			if _, err := os.Stat(dir); err == nil {
				return true
			}
		}
		return false
	}
	if exists(empty) {
		t.Errorf("an empty group of the root was left: %v", empty.Dirs())
	}
	if !exists(busy) {
		t.Errorf("the group with a live process was removed: %v", busy.Dirs())
	}
	if !exists(other) {
		t.Errorf("another root's group was removed: %v", other.Dirs())
	}
}

// cgroupTagOf is the level below vigil/ that holds root's groups.
func cgroupTagOf(root string) string {
	h := fnv.New32a()
	h.Write([]byte(root))
	return fmt.Sprintf("root-%08x", h.Sum32())
}

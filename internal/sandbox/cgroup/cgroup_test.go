package cgroup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestGroupLifecycle(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	mem, pids := uint64(64<<20), int64(7)
	rel := fmt.Sprintf("test-%d/job/proc", os.Getpid())
	g, warns, err := Create(rel, Limits{Memory: &mem, Pids: &pids})
	if err != nil {
		t.Skipf("no cgroups here: %v (%v)", err, warns)
	}
	t.Cleanup(func() { _ = g.Remove() })
	want := map[string]string{"memory.limit_in_bytes": "67108864", "memory.max": "67108864", "pids.max": "7"}
	found := 0
	for _, d := range g.Dirs() {
		for f, v := range want {
			if b, err := os.ReadFile(filepath.Join(d, f)); err == nil {
				found++
				if got := strings.TrimSpace(string(b)); got != v {
					t.Errorf("%s: %q, want %q", f, got, v)
				}
			}
		}
	}
	if found < 2 {
		t.Errorf("limits not found in %v (warnings %v)", g.Dirs(), warns)
	}
	// A process put into the group is killed by Kill, and Remove leaves
	// nothing behind, parents included.
	cmd := exec.Command("/bin/sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, d := range g.Dirs() {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
			t.Fatal(err)
		}
	}
	if g.Empty() {
		t.Fatal("group empty after joining")
	}
	g.Kill()
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("sleep ended with %v", err)
	}
	if n := g.OOMKills(); n != 0 {
		t.Errorf("OOM kills %d", n)
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	for _, d := range g.Dirs() {
		top := filepath.Dir(filepath.Dir(d)) // vigil/test-PID
		if _, err := os.Stat(top); !os.IsNotExist(err) {
			t.Errorf("%s left behind: %v", top, err)
		}
	}
}

// TestCPUSetMems: the memory nodes are written beside the CPUs (read
// back from the group), and a node the machine lacks fails the creation
// rather than leave the process unpinned.
func TestCPUSetMems(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	rel := fmt.Sprintf("test-%d/job/mems", os.Getpid())
	g, warns, err := Create(rel, Limits{CPUSet: "0", CPUSetMems: "0"})
	if err != nil || g == nil {
		t.Skipf("no cgroups here: %v (%v)", err, warns)
	}
	t.Cleanup(func() { _ = g.Remove() })
	if len(warns) > 0 {
		t.Skipf("no cpuset controller: %v", warns)
	}
	found := 0
	for _, d := range g.Dirs() {
		for f, v := range map[string]string{"cpuset.cpus": "0", "cpuset.mems": "0"} {
			if b, err := os.ReadFile(filepath.Join(d, f)); err == nil {
				found++
				if got := strings.TrimSpace(string(b)); got != v {
					t.Errorf("%s: %q, want %q", f, got, v)
				}
			}
		}
	}
	if found != 2 {
		t.Errorf("cpuset files found %d times in %v, want 2", found, g.Dirs())
	}
	bad, _, err := Create(rel+"-bad", Limits{CPUSetMems: "4095"})
	if err == nil {
		_ = bad.Remove()
		t.Fatal("a memory node the machine lacks was accepted")
	}
	if !strings.Contains(err.Error(), "cpuset.mems") {
		t.Errorf("error %v does not name cpuset.mems", err)
	}
}

package scope

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/sandbox/cgroup"
)

// onSystemd skips unless systemd is PID 1 here and the test runs as root
// (the VM rig's guest).
func onSystemd(t *testing.T) *Manager {
	t.Helper()
	if !Available() || os.Geteuid() != 0 {
		t.Skip("needs systemd as PID 1 on the unified hierarchy, as root (the VM rig: go test -count=1 ./internal/vmrig -vm)")
	}
	m := New()
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// child starts a sleep the test kills and reaps at its end.
func child(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

func unitName(t *testing.T) string {
	return fmt.Sprintf("vigil-test-%d-%s.scope", os.Getpid(), strings.ToLower(t.Name()))
}

func show(t *testing.T, unit string, props ...string) map[string]string {
	t.Helper()
	out, err := exec.Command("systemctl", "show", unit, "-p", strings.Join(props, ",")).Output()
	if err != nil {
		t.Fatalf("systemctl show %s: %v", unit, err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	return got
}

// TestPlace: the process moves into a new scope below system.slice,
// delegated, without default dependencies, with its limits as systemd's
// properties and in its cgroup's files.
func TestPlace(t *testing.T) {
	m := onSystemd(t)
	c := child(t)
	mem, pids, weight, quota := uint64(64<<20), int64(20), uint64(50), uint64(150)
	l := cgroup.Limits{Memory: &mem, Pids: &pids, CPUWeight: &weight, CPUQuota: &quota, CPUSet: "0"}
	name := unitName(t)
	began := time.Now()
	dir, err := m.Place(context.Background(), name, c.Process.Pid, l)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	if want := "/sys/fs/cgroup/system.slice/" + name; dir != want {
		t.Errorf("cgroup %s, want %s", dir, want)
	}
	p := show(t, name, "Slice", "Delegate", "DefaultDependencies", "ActiveState", "MemoryMax", "TasksMax",
		"CPUWeight", "AllowedCPUs", "CollectMode", "OOMPolicy", "Conflicts", "Before")
	for k, v := range map[string]string{"Slice": "system.slice", "Delegate": "yes", "DefaultDependencies": "no",
		"ActiveState": "active", "MemoryMax": "67108864", "TasksMax": "20", "CPUWeight": "50", "AllowedCPUs": "0",
		"CollectMode": "inactive-or-failed", "OOMPolicy": "continue", "Conflicts": ""} {
		if p[k] != v {
			t.Errorf("%s=%s, want %s", k, p[k], v)
		}
	}
	for file, want := range map[string]string{"memory.max": "67108864", "memory.swap.max": "0", "pids.max": "20",
		"cpu.weight": "50", "cpu.max": "150000 100000", "cpuset.cpus": "0"} {
		if b, err := os.ReadFile(filepath.Join(dir, file)); err != nil || strings.TrimSpace(string(b)) != want {
			t.Errorf("%s: %q (%v), want %q", file, b, err, want)
		}
	}
	t.Logf("vmrig: placed pid %d in %s in %s (Before=%s)", c.Process.Pid, strings.TrimPrefix(dir, "/sys/fs/cgroup/"),
		took.Round(time.Millisecond), p["Before"])
}

// TestPlaceWaitsForThePreviousScope: a start while the previous
// instance's scope still holds a process (its init, ending) waits until
// that process is gone, then makes the scope again with the new one.
func TestPlaceWaitsForThePreviousScope(t *testing.T) {
	m := onSystemd(t)
	name := unitName(t)
	old, next := child(t), child(t)
	if _, err := m.Place(context.Background(), name, old.Process.Pid, cgroup.Limits{}); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{})
	m.waiting = func(string) { close(waiting) }
	placed := make(chan error, 1)
	go func() {
		_, err := m.Place(context.Background(), name, next.Process.Pid, cgroup.Limits{})
		placed <- err
	}()
	// The old instance ends (as an init does once it has reported) only
	// after the new Place has run into the scope that exists.
	<-waiting
	_ = old.Process.Kill()
	_ = old.Wait()
	gone := time.Now()
	if err := <-placed; err != nil {
		t.Fatal(err)
	}
	t.Logf("vmrig: the scope made again %s after its previous process was reaped", time.Since(gone).Round(time.Millisecond))

	if dir, err := cgroup.PathOf(next.Process.Pid); err != nil || filepath.Base(dir) != name {
		t.Errorf("the next instance runs in %s (%v), want %s", dir, err, name)
	}
}

// TestPlaceFailsWhileTheScopeIsInUse: a scope whose process lives on
// fails the start after the wait, naming the scope, and leaves both
// processes where they were.
func TestPlaceFailsWhileTheScopeIsInUse(t *testing.T) {
	m := onSystemd(t)
	m.gone = time.Second
	name := unitName(t)
	held, next := child(t), child(t)
	if _, err := m.Place(context.Background(), name, held.Process.Pid, cgroup.Limits{}); err != nil {
		t.Fatal(err)
	}
	before, _ := cgroup.PathOf(next.Process.Pid)
	_, err := m.Place(context.Background(), name, next.Process.Pid, cgroup.Limits{})
	if err == nil || !strings.Contains(err.Error(), name+" is still in use") {
		t.Fatalf("Place into a scope in use: %v", err)
	}
	if after, _ := cgroup.PathOf(next.Process.Pid); after != before {
		t.Errorf("the refused process moved from %s to %s", before, after)
	}
	if dir, _ := cgroup.PathOf(held.Process.Pid); filepath.Base(dir) != name {
		t.Errorf("the scope's process moved to %s", dir)
	}
}

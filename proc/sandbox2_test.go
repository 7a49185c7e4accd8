package proc

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestSandboxPooledInitAndSignals runs an isolated process through a spare
// init made in a PID namespace of its own: signals sent to the pid-file pid
// (PID 1 of that namespace) reach the executable. A host_pid_namespace
// process does not take such a spare.
func TestSandboxPooledInitAndSignals(t *testing.T) {
	s := newSandboxed(t)
	self, _ := os.Executable()
	pool := NewPool(self, []string{"GORACE=" + testproc.NoRaceExitDelay}, 1, true)
	t.Cleanup(pool.Close)
	spare := <-pool.spares // wait until the spare is ready, so the start below takes it
	select {
	case pool.spares <- spare:
	default: // the pool refilled meanwhile
		spare.discard()
	}
	if s := pool.take(0, false); s != nil {
		t.Fatal("a namespaced spare was given to a host_pid_namespace start")
	}
	opts := Options{Layout: s.layout, Init: self, InitEnv: []string{"GORACE=" + testproc.NoRaceExitDelay}, User: s.user, Pool: pool}
	r := NewRunner(s.process("pooled", "serve"), opts)
	pr, err := r.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = pr.ForceKill()
		for range pr.Events() {
		}
	})
	ready := s.rep.Expect(t, "ready")
	if ev := next(t, pr); !ev.Running {
		t.Fatalf("not running: %v", ev.Exit)
	}
	if ppid := ready.Fields()[1]; ppid != 1 {
		t.Fatalf("executable's parent is %d in its namespace, want the init as PID 1", ppid)
	}
	if err := pr.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	s.rep.Expect(t, "signal USR1")
	if err := pr.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if e := s.exitOf(pr); !e.Success() {
		t.Fatalf("exit %v", e)
	}
}

// TestSandboxCgroup checks the CPU limits in the process's cgroup, the
// final kill through the cgroup of a process that outlives an init killed
// outright, and the cgroup's removal.
func TestSandboxCgroup(t *testing.T) {
	s := newSandboxed(t)
	p := s.process("cg", "grandchild")
	p.Unsafe.HostPIDNamespace = true // the PID namespace would kill the grandchild anyway
	weight, quota := uint64(50), uint64(150)
	p.Limits.CPUWeight, p.Limits.CPUQuota, p.Limits.CPUSet = &weight, &quota, "0"
	_, pr := s.start(p)
	grand := s.rep.Expect(t, "grandchild").Fields()[0]
	if ev := next(t, pr); !ev.Running {
		t.Fatalf("not running: %v", ev.Exit)
	}
	dirs := cgroupDirs(t, pr.(*Process))
	want := map[string]string{"cpu.shares": "512", "cpu.cfs_quota_us": "150000", "cpuset.cpus": "0",
		"cpu.weight": "50", "cpu.max": "150000 100000"}
	found := 0
	for _, d := range dirs {
		for file, v := range want {
			if b, err := os.ReadFile(filepath.Join(d, file)); err == nil {
				found++
				if got := strings.TrimSpace(string(b)); got != v {
					t.Errorf("%s: got %q, want %q", file, got, v)
				}
			}
		}
	}
	if found < 3 {
		t.Errorf("only %d of the CPU limits found in %v", found, dirs)
	}
	// The init dies outright: its executable gets the parent-death signal,
	// and the grandchild, reparented elsewhere, is killed through the cgroup.
	if err := unix.Kill(pr.PID(), unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.exitOf(pr)
	for range pr.Events() {
	}
	if alive(grand) {
		if st, err := os.ReadFile("/proc/" + itoa(grand) + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
			t.Errorf("grandchild %d outlived the process", grand)
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("cgroup %s not removed: %v", d, err)
		}
	}
}

func cgroupDirs(t *testing.T, pr *Process) []string {
	if pr.group == nil {
		t.Skip("no cgroup on this machine")
	}
	return pr.group.Dirs()
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestNoIsolationWarns: a process run without isolation says so in its
// running event (and from there in status): never a silent downgrade.
func TestNoIsolationWarns(t *testing.T) {
	f := newFixture(t)
	_, pr := f.start(f.process("plain", "serve"))
	ev := next(t, pr)
	if !ev.Running || len(ev.Warnings) != 1 || !strings.Contains(ev.Warnings[0], "isolation is switched off") {
		t.Fatalf("running event %+v", ev)
	}
}

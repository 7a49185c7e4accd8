package launch

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/launch/procinit"
	"github.com/vigil-bosh/vigil/internal/testproc"
	"github.com/vigil-bosh/vigil/job"
)

// TestSandboxPooledInitAndSignals runs an isolated process through a spare
// init made in a PID namespace of its own: signals sent to the pid-file pid
// (PID 1 of that namespace) reach the executable. A host_pid_namespace
// process does not take such a spare.
func TestSandboxPooledInitAndSignals(t *testing.T) {
	s := newSandboxed(t)
	self, _ := os.Executable()
	pool := NewPool(PoolConfig{Init: self, Env: []string{"GORACE=" + testproc.NoRaceExitDelay}, Size: 1, Isolated: true, Records: s.layout.SpareRecords()})
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

// TestSandboxFailsClosed: a start whose isolation cannot be had in full
// fails instead of running with less. A cgroup limit the kernel refuses
// (CPUs this machine does not have) fails it, with the cgroup's file in
// the reason, and leaves no cgroup behind; a user that does not exist
// fails it too, and the job's directories are never given to anyone the
// configuration did not name.
func TestSandboxFailsClosed(t *testing.T) {
	s := newSandboxed(t)
	self, _ := os.Executable()
	start := func(p job.Process, user string) error {
		r := NewRunner(p, Options{Layout: s.layout, Init: self, InitEnv: []string{"GORACE=" + testproc.NoRaceExitDelay}, User: user})
		pr, err := r.Start(context.Background())
		if err == nil {
			pr.ForceKill()
			for range pr.Events() {
			}
			return nil
		}
		return err
	}
	if root := cgroupRootOf(t, "cpuset"); root != "" {
		p := s.process("cpus", "serve")
		p.Limits.CPUSet = "4095"
		if err := start(p, s.user); err == nil || !strings.Contains(err.Error(), "cpuset.cpus") {
			t.Errorf("a start with a cgroup limit the kernel refuses: %v", err)
		}
		if leftover, _ := filepath.Glob(filepath.Join(root, "vigil", "*", "job", "cpus", "*")); len(leftover) > 0 {
			t.Errorf("the refused cgroup was left: %v", leftover)
		}
	}

	os.RemoveAll(s.layout.LogDir("job"))
	err := start(s.process("nouser", "serve"), "no-such-user-here")
	if err == nil || !strings.Contains(err.Error(), "user no-such-user-here does not exist") {
		t.Errorf("a start as a user that does not exist: %v", err)
	}
	if fi, err := os.Stat(s.layout.LogDir("job")); err == nil && fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Errorf("the log directory was given to uid %d", fi.Sys().(*syscall.Stat_t).Uid)
	}
}

// cgroupRootOf is where the v1 hierarchy of controller is mounted, or the
// unified hierarchy.
func cgroupRootOf(t *testing.T, controller string) string {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	unified := ""
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		if f[2] == "cgroup" && slices.Contains(strings.Split(f[3], ","), controller) {
			return f[1]
		}
		if f[2] == "cgroup2" {
			unified = f[1]
		}
	}
	return unified
}

// TestSandboxRefusesPidfdGetfd: pidfd_getfd would let a process take a
// copy of any descriptor of a process it may ptrace: with the host's PID
// namespace, another job's process of the same user, and its secrets with
// it. The sandboxed process is refused (EPERM, as bpm's profile refuses
// it), even on its own pidfd; a privileged process, which has no filter,
// shows the call works here.
func TestSandboxRefusesPidfdGetfd(t *testing.T) {
	s := newSandboxed(t)
	for _, privileged := range []bool{false, true} {
		p := s.process("getfd", "inspect")
		p.Unsafe.HostPIDNamespace = true
		p.Unsafe.Privileged = privileged
		_, pr := s.start(p)
		want := map[bool]string{false: "EPERM", true: "ok"}[privileged]
		if got := s.see(pr)["pidfd_getfd"]; got != want {
			t.Errorf("privileged %v: pidfd_getfd gives %q, want %q", privileged, got, want)
		}
		s.exitOf(pr)
	}
}

// TestSandboxStopDuringHook: a sandboxed init catches signals only once it
// has dropped its capabilities, unless it runs a hook first, which a stop
// must be able to end: the TERM sent to the pid-file pid while the hook
// runs stops the start instead of killing the init.
func TestSandboxStopDuringHook(t *testing.T) {
	s := newSandboxed(t)
	// The hook is the test binary serving (on the host, as bpm runs it),
	// so it says when it runs; it ignores TERM, which the init must handle.
	p := s.process("slowhook", "serve", testproc.EnvIgnore+"=TERM")
	p.Hooks.PreStart = s.bin
	_, pr := s.start(p)
	s.rep.Expect(t, "ready")
	hooks := procinit.ChildrenOf(pr.PID()) // its pid on the host: it reports the one in the init's namespace
	if len(hooks) != 1 {
		t.Fatalf("the init has children %v while its hook runs, want the hook alone", hooks)
	}
	if err := pr.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ev := next(t, pr)
	if ev.Running || ev.Exit.Err != "stopped while the prestart hook ran" {
		t.Fatalf("got %+v", ev)
	}
	if alive(hooks[0]) {
		t.Fatal("the hook outlived the stop")
	}
}

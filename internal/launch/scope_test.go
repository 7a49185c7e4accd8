package launch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/sandbox/cgroup"
)

func TestScopeName(t *testing.T) {
	for _, c := range []struct{ root, job, proc, want string }{
		{boshpath.DefaultRoot, "galera-agent", "galera-agent", "runc-bpm-galera-agent.scope"},
		{boshpath.DefaultRoot, "test-server", "alt-test-server", "runc-bpm-test-server.2ealt-test-server.scope"},
		{boshpath.DefaultRoot, "test-server", "test-server!@*&", "runc-bpm-test-server.2etest-server.21.40.2a.26.scope"},
		{boshpath.DefaultRoot, "web_1", "web_1", "runc-bpm-web_1.scope"},
		{"/tmp/x", "web", "web", "vigil-" + cgroupTag("/tmp/x") + "-bpm-web.scope"},
	} {
		if got := scopeName(c.root, c.job, c.proc); got != c.want {
			t.Errorf("scopeName(%q, %q, %q) = %q, want %q", c.root, c.job, c.proc, got, c.want)
		}
	}
}

// hostScopes stands in for systemd where it is not PID 1: it makes a
// group named as the scope on the unified hierarchy and moves the pid
// into it, as systemd does (without waiting for an earlier one to go).
type hostScopes struct{ t *testing.T }

func (h hostScopes) Place(_ context.Context, name string, pid int, _ cgroup.Limits) (string, error) {
	top, err := cgroup.PathOf(1) // a group systemd would keep is no one's child
	if err != nil {
		return "", err
	}
	dir := filepath.Join(top, name)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	h.t.Cleanup(func() { removeGroup(dir) })
	return dir, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
}

func (hostScopes) Close() error { return nil }

// removeGroup removes a stand-in scope's directory once its members are
// gone. A task on its way out keeps a group busy for a moment after its
// exit: the removal is tried again then (a cleanup's retry, nothing a
// test waits on).
func removeGroup(dir string) {
	_ = cgroup.Scope(dir, 0).Remove()
	for range 100 {
		if err := syscall.Rmdir(dir); !errors.Is(err, syscall.EBUSY) {
			return
		}
		t := time.NewTimer(10 * time.Millisecond)
		<-t.C
	}
}

// scoped is the sandbox fixture with its processes in scopes: systemd's
// where systemd is PID 1 (the VM rig), with limits; here hostScopes on
// the unified hierarchy, without (its controllers are v1's).
func scoped(t *testing.T) (*sandboxed, bool) {
	s := newSandboxed(t)
	if sd := SystemdScopes(); sd != nil {
		t.Cleanup(func() { _ = sd.Close() })
		s.scopes = sd
		return s, true
	}
	if _, err := cgroup.PathOf(1); err != nil {
		t.Skipf("no unified hierarchy: %v", err)
	}
	s.scopes = hostScopes{t}
	return s, false
}

// TestSandboxScope: the init, its executable and what that starts all run
// in the process's scope, named as bpm's, with its limits; the
// supervisor's kill takes the tree but never the init, which reports the
// exit itself; and a restart makes the scope again once the previous
// instance has gone from it.
func TestSandboxScope(t *testing.T) {
	s, systemd := scoped(t)
	p := s.process("sc", "grandchild")
	p.Unsafe.HostPIDNamespace = true // the grandchild outlives nothing by the PID namespace
	if systemd {
		mem, pids := uint64(256<<20), int64(64)
		p.Limits.Memory, p.Limits.Processes = &mem, &pids
	}
	r, pr := s.start(p)
	grand := s.rep.Expect(t, "grandchild").Fields()[0]
	ev := next(t, pr)
	if !ev.Running {
		t.Fatalf("not running: %v", ev.Exit)
	}
	name := scopeName(s.layout.Root(), "job", "sc")
	dir := cgroupDirs(t, pr.(*Process))[0]
	if filepath.Base(dir) != name {
		t.Fatalf("the process's group is %s, want the scope %s", dir, name)
	}
	for what, pid := range map[string]int{"init": pr.PID(), "executable": ev.ExecPID, "grandchild": grand} {
		if got, err := cgroup.PathOf(pid); got != dir {
			t.Errorf("the %s (%d) runs in %s (%v), want %s", what, pid, got, err, dir)
		}
	}
	if systemd {
		for file, want := range map[string]string{"memory.max": "268435456", "memory.swap.max": "0", "pids.max": "64"} {
			if b, err := os.ReadFile(filepath.Join(dir, file)); err != nil || strings.TrimSpace(string(b)) != want {
				t.Errorf("%s: %q (%v), want %q", file, b, err, want)
			}
		}
	}
	if err := pr.Kill(); err != nil {
		t.Fatal(err)
	}
	if e := s.exitOf(pr); e.Signal != syscall.SIGKILL {
		t.Errorf("exit %v, want the executable killed", e)
	}
	for range pr.Events() {
	}
	if ws := pr.(*Process).cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() {
		t.Errorf("the init was killed (%v) with its tree: it must end on its own, after its report", ws.Signal())
	}
	if alive(grand) {
		t.Errorf("the grandchild %d outlived its process", grand)
	}
	// At once again, as a restart does: into the same scope.
	pr2, err := r.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = pr2.ForceKill()
		for range pr2.Events() {
		}
	})
	s.rep.Expect(t, "grandchild")
	if ev := next(t, pr2); !ev.Running {
		t.Fatalf("the restart is not running: %v", ev.Exit)
	}
	if got, err := cgroup.PathOf(pr2.PID()); filepath.Base(got) != name {
		t.Errorf("the restarted init runs in %s (%v), want the scope %s", got, err, name)
	}
}

// TestSandboxScopeAdopted: the next daemon adopts a process with its
// scope, which it empties (never removes) once the init is gone.
func TestSandboxScopeAdopted(t *testing.T) {
	s, _ := scoped(t)
	p := s.process("ad", "serve")
	_, pr := s.start(p)
	s.rep.Expect(t, "ready")
	if ev := next(t, pr); !ev.Running {
		t.Fatalf("not running: %v", ev.Exit)
	}
	dir := cgroupDirs(t, pr.(*Process))[0]
	a, err := Adopt(s.layout, "job", "ad")
	if err != nil {
		t.Fatal(err)
	}
	g := a.(*adopted).group
	if g == nil || g.Dirs()[0] != dir {
		t.Fatalf("the adopted process's group: %v, want the scope %s", g, dir)
	}
	if err := a.Kill(); err != nil {
		t.Fatal(err)
	}
	for range a.Events() {
	}
	if !g.Empty() {
		t.Error("the scope is not empty once the adopted init is gone")
	}
}

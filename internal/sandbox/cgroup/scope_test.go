package cgroup

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// scopeDir makes a cgroup named like a systemd scope on the unified
// hierarchy (systemd's own where systemd runs, any other's here), removed
// at the end.
func scopeDir(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	unified, _, err := mounts()
	if err != nil || unified == "" {
		t.Skipf("no unified hierarchy here (%v)", err)
	}
	dir := filepath.Join(unified, fmt.Sprintf("vigil-test-%d.scope", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a group on the unified hierarchy: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Rmdir(dir) })
	return dir
}

// sleeper starts a sleep that joins dir; the test reaps it.
func sleeper(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// running reports whether pid runs: a zombie (killed, not yet reaped by
// the test) does not.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(b), ") Z ")
}

func killedBySignal(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signaled()
}

// TestScopeSparesItsInit: a scope's kills take every member but its
// init; Remove (once the init is gone) takes the rest and leaves the
// directory to systemd.
func TestScopeSparesItsInit(t *testing.T) {
	dir := scopeDir(t)
	init, exe, other := sleeper(t, dir), sleeper(t, dir), sleeper(t, dir)
	g := Scope(dir, init.Process.Pid)
	if got, err := PathOf(exe.Process.Pid); got != dir {
		t.Errorf("PathOf: %q (%v), want %q", got, err, dir)
	}
	g.Kill()
	for _, c := range []*exec.Cmd{exe, other} {
		if err := c.Wait(); !killedBySignal(err) {
			t.Errorf("member %d ended with %v, want killed", c.Process.Pid, err)
		}
	}
	if !running(init.Process.Pid) {
		t.Fatal("the init was killed too")
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	if err := init.Wait(); !killedBySignal(err) {
		t.Errorf("the init ended with %v after Remove, want killed", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("Remove removed the scope's directory: %v", err)
	}
	if o := Open([]string{dir}); !o.scope || o.keep != 0 {
		t.Errorf("Open of %s: %+v, want a scope without a kept init", dir, o)
	}
}

// TestScopeLeavesItsCaller: a process in a scope (the init at its end)
// asking to remove it kills nothing, itself least of all.
func TestScopeLeavesItsCaller(t *testing.T) {
	if dir := os.Getenv("VIGIL_CGROUP_INSIDE"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("0"), 0); err != nil {
			os.Exit(2)
		}
		_ = Open([]string{dir}).Remove()
		Scope(dir, 0).Signal()
		os.Exit(0) // alive: not killed by its own removal
	}
	dir := scopeDir(t)
	neighbour := sleeper(t, dir)
	cmd := exec.Command(os.Args[0], "-test.run=^TestScopeLeavesItsCaller$")
	cmd.Env = append(os.Environ(), "VIGIL_CGROUP_INSIDE="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the caller inside the scope: %v\n%s", err, out)
	}
	if !running(neighbour.Process.Pid) {
		t.Error("the caller's removal killed a neighbour")
	}
	if strings.TrimSpace(readFile(t, filepath.Join(dir, "cgroup.procs"))) != strconv.Itoa(neighbour.Process.Pid) {
		t.Errorf("members: %q", readFile(t, filepath.Join(dir, "cgroup.procs")))
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestScopeNeverReachesALaterScopeOfItsName: once systemd has removed a
// scope, the next instance's scope of the same name is another cgroup at
// the same path: the old group's kills, removal and reads reach nothing
// of it (the old instance's cleanup may run after the new scope is made).
func TestScopeNeverReachesALaterScopeOfItsName(t *testing.T) {
	dir := scopeDir(t)
	old := Scope(dir, 0)
	if err := syscall.Rmdir(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	next := sleeper(t, dir)
	old.Kill()
	old.Signal()
	if err := old.Remove(); err != nil {
		t.Fatal(err)
	}
	if !running(next.Process.Pid) {
		t.Fatal("the old group's cleanup killed the next instance")
	}
	if !old.Empty() {
		t.Error("the old group sees the next instance's members")
	}
	pids := int64(5)
	if _, err := old.Limit(Limits{Pids: &pids}); err == nil {
		t.Error("the old group's limits were written into the next instance's cgroup")
	}
}

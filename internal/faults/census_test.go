package faults

// The census of processes: what runs under a test's root, counted in /proc
// by the marker argument each test process carries, and the waits on
// processes that must end.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/initimage"
	"github.com/vigil-bosh/vigil/internal/launch/procinit"
	"github.com/vigil-bosh/vigil/internal/pidfile"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

func (r *rig) pidFile(job, p string) int {
	pid, _ := pidfile.Read(r.layout.PidFile(job, p))
	return pid
}

// instances lists the live (not zombie) executables of JOB/PROC.
func (r *rig) instances(job, p string) []int {
	return scan(func(pid int, args []string) bool {
		return slices.Contains(args, r.mark+"/"+job+"/"+p)
	})
}

// scan lists the live processes whose arguments match.
func scan(match func(pid int, args []string) bool) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 { // gone, or a zombie
			continue
		}
		if match(pid, strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")) {
			out = append(out, pid)
		}
	}
	return out
}

// once checks that JOB/PROC runs exactly once, as the pid file, the
// status and the executable's parent agree, and returns its status.
func (r *rig) once(job, p string) control.ProcessStatus {
	r.t.Helper()
	st := r.status(job, p)
	got := r.instances(job, p)
	if len(got) != 1 || st.State != "running" || got[0] != st.ExecPID || r.pidFile(job, p) != st.PID {
		r.t.Fatalf("%s/%s: instances %v, status %+v, pid file %d", job, p, got, st, r.pidFile(job, p))
	}
	if ppid, _ := procinit.ParentOf(st.ExecPID); ppid != st.PID {
		r.t.Fatalf("%s/%s: the executable %d is the child of %d, not of its init %d", job, p, st.ExecPID, ppid, st.PID)
	}
	return st
}

// noZombies checks that no process below the test (other than the test's
// own children, which it reaps itself) is a zombie that stays one: every
// init reaps what ends below it, and the daemon its inits. A zombie found
// is waited for until its parent reaps it (within the guard): the daemon
// restarts a process at its init's exit report and reaps that init a
// moment later, so an old init may still be a zombie when a test looks
// right after a restart.
func (r *rig) noZombies() {
	r.t.Helper()
	r.reap()
	var walk func(pid int, top bool)
	var zombies []string
	walk = func(pid int, top bool) {
		for _, c := range procinit.ChildrenOf(pid) {
			if !top && state(c) == 'Z' {
				what := fmt.Sprintf("%d %q (parent %d %q)", c, cmdline(c), pid, cmdline(pid))
				if !reaped(c, testproc.Guard) {
					zombies = append(zombies, what)
				}
			}
			walk(c, false)
		}
	}
	walk(os.Getpid(), true)
	if len(zombies) > 0 {
		r.t.Fatalf("zombies not reaped within %s: %v", testproc.Guard, zombies)
	}
}

// reaped waits until pid has been reaped, for at most within (false
// then). A pidfd reports POLLHUP once its process is reaped, and the
// kernels with pidfs (this machine's 6.18) wake its pollers at the reap;
// asking for no event, the poll wakes for that alone, not for the exit a
// zombie already shows. (A kernel that does not wake them makes a
// zombie's census wait out the guard, and then report it.)
func reaped(pid int, within time.Duration) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return true // gone already
	}
	defer unix.Close(fd)
	revents, ok := pollPidfd(fd, 0, within)
	return ok && revents&unix.POLLHUP != 0
}

// cmdline is pid's command line, its arguments joined by spaces ("" once
// it is gone; a zombie's is empty, so its comm is used).
func cmdline(pid int) string {
	b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if len(b) == 0 {
		b, _ = os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	}
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

func state(pid int) byte {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// reap waits for every child of the test that has ended and that no
// exec.Cmd of the test waits for: the orphans re-parented to it.
func (r *rig) reap() {
	for _, c := range procinit.ChildrenOf(os.Getpid()) {
		if !r.owned[c] {
			var ws unix.WaitStatus
			unix.Wait4(c, &ws, unix.WNOHANG, nil)
		}
	}
}

// orphansSettle checks what became of a killed daemon's children: each is
// either an init named by a pid file of the root (the next daemon adopts
// it) or exits (a spare init, an init whose start was cut short).
func (r *rig) orphansSettle(kids []int) {
	r.t.Helper()
	named := map[int]bool{}
	files, _ := filepath.Glob(filepath.Join(r.layout.Root(), "sys", "run", "bpm", "*", "*.pid"))
	for _, f := range files {
		if pid, err := pidfile.Read(f); err == nil {
			named[pid] = true
		}
	}
	for _, k := range kids {
		if !named[k] {
			r.waitGone(k)
		}
	}
	r.reap()
}

// waitGone waits until pid has exited.
func (r *rig) waitGone(pid int) {
	r.t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // already gone
	}
	defer unix.Close(fd)
	if _, ok := pollPidfd(fd, unix.POLLIN, testproc.Guard); !ok {
		r.t.Fatalf("process %d (%q) did not exit within %s", pid, cmdline(pid), testproc.Guard)
	}
}

// pollPidfd waits until the pidfd fd reports one of events (or POLLHUP,
// which is always reported), for at most within; ok is false when nothing
// came (or the poll failed).
func pollPidfd(fd int, events int16, within time.Duration) (revents int16, ok bool) {
	deadline := time.Now().Add(within)
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: events}}
		n, err := unix.Poll(fds, int(max(time.Until(deadline), 0).Milliseconds()))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil || n < 1:
			return 0, false
		}
		return fds[0].Revents, true
	}
}

// killLeftovers kills whatever of the rig still runs once its daemon is
// gone (after a failed test), and reaps it.
func (r *rig) killLeftovers() {
	for _, pid := range scan(func(pid int, args []string) bool {
		return slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, r.mark+"/") }) ||
			len(args) >= 2 && args[0] == initimage.Name && args[1] == "init" && r.rootsInit(pid)
	}) {
		unix.Kill(pid, unix.SIGKILL)
		r.waitGone(pid)
	}
	r.reap()
}

// rootsInit reports whether the init pid writes into this rig's logs.
func (r *rig) rootsInit(pid int) bool {
	out, _ := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", "1"))
	return strings.HasPrefix(out, r.layout.Root()+"/")
}

// TestReapedWaitsForTheReap: a zombie is not taken for reaped; once its
// parent (the test) reaps it, it is.
func TestReapedWaitsForTheReap(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	// POLLIN: it has exited; nobody has reaped it.
	if _, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(testproc.Guard.Milliseconds())); err != nil {
		t.Fatal(err)
	}
	if state(pid) != 'Z' {
		t.Fatalf("%d is in state %q, not a zombie", pid, state(pid))
	}
	if reaped(pid, 0) {
		t.Fatal("a zombie was taken for reaped")
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	if !reaped(pid, testproc.Guard) {
		t.Fatal("a reaped process was not seen reaped")
	}
}

package procinit

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// childrenOf lists the live children of pid. It reads the kernel's
// per-thread children lists, and scans /proc when the kernel lacks them.
func childrenOf(pid int) []int {
	files, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "children"))
	if len(files) > 0 {
		var out []int
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			for _, field := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(field); err == nil {
					out = append(out, n)
				}
			}
		}
		return out
	}
	return scanChildren(pid)
}

// scanChildren finds the processes whose parent is pid by reading every
// /proc/N/stat.
func scanChildren(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(n); ok && ppid == pid {
			out = append(out, n)
		}
	}
	return out
}

// parentOf reads the parent pid from /proc/N/stat. The command name in
// parentheses may itself hold spaces and parentheses, so the fields are
// taken after the last ')'.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// ChildrenOf lists the live children of pid, as the init sees its own.
func ChildrenOf(pid int) []int { return childrenOf(pid) }

// ParentOf returns the parent pid of pid from /proc, and whether it could
// be read.
func ParentOf(pid int) (int, bool) { return parentOf(pid) }

// reap collects every child that has exited without blocking, and notes
// the status of the executable and of the hook.
func (it *initProc) reap() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
		it.note(pid, ws)
	}
}

func (it *initProc) note(pid int, ws unix.WaitStatus) {
	switch {
	case it.child > 0 && pid == it.child && !it.done:
		it.status, it.done = ws, true
	case it.hook > 0 && pid == it.hook && !it.hookDone:
		it.hookStatus, it.hookDone = ws, true
	}
}

func exitOf(ws unix.WaitStatus) (code, sig int) {
	if ws.Signaled() {
		return 0, int(ws.Signal())
	}
	return ws.ExitStatus(), 0
}

// killAll kills the executable's process group and then every process left
// below the init, reaping each, until the init has no children. Orphans are
// re-parented to the init (it is a subreaper), so nothing escapes. When
// nothing is left, which is the usual case, it returns without scanning.
func (it *initProc) killAll() {
	if it.child > 0 && !it.done {
		_ = unix.Kill(-it.child, unix.SIGKILL)
		_ = unix.Kill(it.child, unix.SIGKILL)
	}
	flags := unix.WNOHANG
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, flags, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return // ECHILD: nothing left
		case pid > 0:
			it.note(pid, ws)
			flags = unix.WNOHANG
			continue
		}
		// Children remain and none has ended yet: kill them all, then block
		// until one is reaped (its own children come to the init meanwhile).
		// As PID 1 of its own namespace the init kills everything else in it.
		if os.Getpid() == 1 {
			_ = unix.Kill(-1, unix.SIGKILL)
		}
		for _, c := range childrenOf(os.Getpid()) {
			_ = unix.Kill(c, unix.SIGKILL)
		}
		flags = 0
	}
}

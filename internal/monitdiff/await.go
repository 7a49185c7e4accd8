package monitdiff

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// loggedName is the file under the root that prog opens, and keeps open,
// once its line is in the programs log: a process holding it (prog, or a
// process prog forked after logging) has nothing left to log.
const loggedName = "logged"

// awaitPrograms returns once every program started before it has written
// its line to the programs log. It waits for the exit of each process
// carrying the root's mark, outside the harness's session (the reaper and
// the daemon stay in it; monit and vigil start each program in a session
// of its own), that is one of:
//   - prog, not yet holding the logged file (what prog forks after logging
//     holds it too);
//   - a copy of the daemon's binary that is not its session's leader: a
//     program forked and not yet exec'd (monit's double fork, vigil's
//     per-process init launching one); the daemon's own long-lived
//     helpers lead their sessions.
//
// It fails after tickWait, naming what still runs.
func (r *run) awaitPrograms() error {
	own, err := unix.Getsid(0)
	if err != nil {
		return fmt.Errorf("wait for the programs: %w", err)
	}
	mark := []byte(rootEnv + "=" + r.root)
	prog, logged := resolved(filepath.Join(r.root, "bin", "prog")), resolved(filepath.Join(r.root, loggedName))
	daemon := resolved(r.o.Monit)
	var fds []unix.PollFd
	var pids []int
	defer func() {
		for _, fd := range fds {
			unix.Close(int(fd.Fd))
		}
	}()
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil || !marked(pid, mark) {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // ended already
		}
		// Looked at again with the pidfd held: a pid reused since the
		// first look is not the process the pidfd stands for.
		sid, err := unix.Getsid(pid)
		isProg := slices.Contains(argv(pid), prog) && !holds(pid, logged)
		forked := sid != pid && exe(pid) == daemon
		if err != nil || sid == own || !marked(pid, mark) || !isProg && !forked {
			unix.Close(fd)
			continue
		}
		fds, pids = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}), append(pids, pid)
	}
	return awaitExits(fds, pids, time.Now().Add(tickWait))
}

// awaitExits waits until each pidfd in fds is readable (its process has
// ended) or until deadline. It leaves the descriptors open.
func awaitExits(fds []unix.PollFd, pids []int, deadline time.Time) error {
	fds = slices.Clone(fds) // the readable ones are taken out as -1
	for left := len(fds); left > 0; {
		wait := time.Until(deadline)
		if wait <= 0 {
			var still []string
			for i, fd := range fds {
				if fd.Fd >= 0 {
					still = append(still, fmt.Sprintf("%d (%s)", pids[i], cmdline(pids[i])))
				}
			}
			return fmt.Errorf("programs still running after %s: %s", tickWait, strings.Join(still, ", "))
		}
		if _, err := unix.Poll(fds, int(wait.Milliseconds())+1); err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("wait for the programs: %w", err)
		}
		for i := range fds {
			if fds[i].Fd >= 0 && fds[i].Revents != 0 {
				fds[i].Fd = -1
				left--
			}
		}
	}
	return nil
}

// marked reports whether pid's environment holds mark.
func marked(pid int, mark []byte) bool {
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	return err == nil && slices.ContainsFunc(bytes.Split(env, []byte{0}), func(e []byte) bool { return bytes.Equal(e, mark) })
}

// holds reports whether pid has path open.
func holds(pid int, path string) bool {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && l == path {
			return true
		}
	}
	return false
}

func argv(pid int) []string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

func cmdline(pid int) string { return strings.Join(argv(pid), " ") }

func exe(pid int) string {
	l, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return l
}

// resolved is path absolute, with its symlinks resolved, as /proc shows
// an open file or an executable.
func resolved(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if l, err := filepath.EvalSymlinks(path); err == nil {
		return l
	}
	return path
}

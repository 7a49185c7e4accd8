package cgroup

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// killWait bounds how long Kill, and Remove for each directory, wait for
// the processes of a group to be gone.
const killWait = 5 * time.Second

// Kill kills every process in the group and returns once none is left (or
// after killWait, or when the members cannot be read). On v2 the kernel
// kills them all at once (cgroup.kill); on v1, on v2 kernels without
// cgroup.kill, and in a scope whose init still runs (its kept pid), each
// member is sent SIGKILL through a pidfd. Either way the wait is on the
// members' pidfds, which turn readable as each exits. A scope the caller
// runs in is not touched (see Scope).
func (g *Group) Kill() {
	if g == nil || g.scope && g.holdsCaller() {
		return
	}
	deadline := time.Now().Add(killWait)
	for _, dir := range g.dirs {
		rel := relOf(dir)
		g.within(dir, func(at string) {
			signalled := g.v2 && g.keep == 0 && write(at, "cgroup.kill", "1") == nil
			for time.Now().Before(deadline) {
				pids := g.others(members(at))
				if len(pids) == 0 || !awaitExit(rel, pids, !signalled, deadline) {
					break
				}
			}
		})
	}
}

// Signal sends SIGKILL to every process in the group (but a scope's kept
// init) and returns at once, for a caller that learns of the end
// otherwise (a supervisor, from the init's exit): the members' exits are
// not waited for.
func (g *Group) Signal() {
	if g == nil || g.scope && g.holdsCaller() {
		return
	}
	for _, dir := range g.dirs {
		g.within(dir, func(at string) {
			if g.v2 && g.keep == 0 && write(at, "cgroup.kill", "1") == nil {
				return
			}
			awaitExit(relOf(dir), g.others(members(at)), true, time.Now())
		})
	}
}

// others is pids without the group's kept pid.
func (g *Group) others(pids []int) []int {
	if g.keep == 0 {
		return pids
	}
	return slices.DeleteFunc(pids, func(p int) bool { return p == g.keep })
}

// awaitExit takes a pidfd on each of a group's member pids and, once
// the pidfd's process is seen to be in the group, whose path in
// /proc/PID/cgroup is rel (so that a pid reused since the members were
// read is neither signalled nor waited for), sends it SIGKILL when kill;
// then it waits until every one of them has exited, or until deadline. It reports whether any of them was alive, so that a caller
// re-reading the members stops once only the dead are listed.
func awaitExit(rel string, pids []int, kill bool, deadline time.Time) bool {
	var fds []unix.PollFd
	var owned []int
	defer func() {
		for _, fd := range owned {
			unix.Close(fd)
		}
	}()
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // gone already
		}
		owned = append(owned, fd)
		if !inGroup(pid, rel) {
			continue
		}
		if kill {
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
		fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	}
	// The dead (zombies too) are readable at once: without a live one
	// there is nothing to wait for.
	if pending(fds, 0) == 0 {
		return false
	}
	for pending(fds, time.Until(deadline)) > 0 && time.Now().Before(deadline) {
	}
	return true
}

// pending polls fds for up to d, drops the readable ones from the poll
// (a negative Fd is ignored by poll) and returns how many are still
// unreadable.
func pending(fds []unix.PollFd, d time.Duration) int {
	for {
		_, err := unix.Poll(fds, max(int(d.Milliseconds()), 0))
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	left := 0
	for i := range fds {
		switch {
		case fds[i].Fd < 0:
		case fds[i].Revents != 0:
			fds[i].Fd = -1
		default:
			left++
		}
	}
	return left
}

// removeEmpty removes a cgroup directory. While the kernel answers EBUSY,
// what is still in the group is killed and waited for; when nothing is
// listed and it is still busy (a task on its way out still counts), the
// removal is tried again after a short pause, doubling to 64 ms: no event
// says when a group becomes removable on v1, and the pause is a retry's
// backoff, not a wait for something known to happen. It gives up after
// killWait.
func removeEmpty(dir string) error {
	deadline := time.Now().Add(killWait)
	pause := time.Millisecond
	for {
		err := syscall.Rmdir(dir)
		switch {
		case err == nil || errors.Is(err, syscall.ENOENT):
			return nil
		case !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline):
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
		if pids := members(dir); len(pids) > 0 && awaitExit(relOf(dir), pids, true, deadline) {
			continue
		}
		t := time.NewTimer(pause)
		<-t.C
		pause = min(2*pause, 64*time.Millisecond)
	}
}

// inGroup reports whether pid is in the group whose path below the
// hierarchy's mount point is rel (see relOf), by its /proc/PID/cgroup.
func inGroup(pid int, rel string) bool {
	if rel == "" {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if _, path, ok := strings.Cut(line[strings.IndexByte(line, ':')+1:], ":"); ok && path == rel {
			return true
		}
	}
	return false
}

package cgroup

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Scope is the group of a systemd scope's cgroup at dir, on the unified
// hierarchy: a cgroup that systemd made for an init (and so for everything
// the init starts) and removes once it is empty. It is never removed here:
// Remove kills what is left and waits for it to be gone. While the init
// runs, keep is its pid: Kill and Signal take everything else in the
// group (the executable's tree, and what escaped it), never the init,
// which reports its executable's end itself. A group the caller itself
// runs in (the init cleaning up at its end) is left alone altogether: the
// caller would kill itself, and what it started ends with it. The group
// is the cgroup at dir when Scope is called: once systemd has removed it,
// a later scope of the same name (the process's next instance) is another
// group, which nothing done here reaches.
func Scope(dir string, keep int) *Group {
	g := &Group{v2: true, scope: true, keep: keep, dirs: map[string]string{"": dir}}
	var st unix.Stat_t
	if unix.Stat(dir, &st) == nil {
		g.ino = st.Ino
	}
	return g
}

// Limit writes l into a scope's cgroup (see Create for what is a
// warning and what an error).
func (g *Group) Limit(l Limits) ([]string, error) {
	var warns []string
	err := fmt.Errorf("cgroup: the scope %s is gone", g.dirs[""])
	g.within(g.dirs[""], func(at string) { warns, err = limitV2(at, l) })
	return warns, err
}

// within runs f with a path that reaches dir, one of the group's
// directories. A scope's is reached through a descriptor held on its
// directory once that is seen to be the group's own cgroup (its inode, the
// cgroup's id), so that f never reaches a later cgroup of the same name;
// when the group's cgroup is gone, f is not called.
func (g *Group) within(dir string, f func(at string)) {
	if !g.scope {
		f(dir)
		return
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || g.ino == 0 || st.Ino != g.ino {
		return
	}
	f("/proc/self/fd/" + strconv.Itoa(fd))
}

// PathOf is the directory of pid's cgroup on the unified hierarchy (the
// "0::" line of its /proc/PID/cgroup, below the hierarchy's mount point).
func PathOf(pid int) (string, error) {
	unified, _, err := mounts()
	if err != nil {
		return "", err
	}
	if unified == "" {
		return "", fmt.Errorf("cgroup: no unified hierarchy is mounted")
	}
	rel, err := v2Path(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	if rel == "" {
		return "", fmt.Errorf("cgroup: process %d has no cgroup on the unified hierarchy", pid)
	}
	return filepath.Join(unified, rel), nil
}

// v2Path is the "0::" path a /proc/PID/cgroup file names, "" without one.
func v2Path(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", fmt.Errorf("cgroup: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if path, ok := strings.CutPrefix(sc.Text(), "0::"); ok {
			return filepath.Clean("/" + path), nil
		}
	}
	return "", sc.Err()
}

// holdsCaller reports whether the calling process runs in the scope's
// cgroup or below it, or cannot tell: a kill that might take the caller
// is not made.
func (g *Group) holdsCaller() bool {
	own, err := v2Path("/proc/self/cgroup")
	if err != nil || own == "" {
		return true
	}
	rel := relOf(g.dirs[""])
	return rel == "" || own == rel || strings.HasPrefix(own, rel+"/")
}

// relOf is dir's path below its hierarchy's mount point, as
// /proc/PID/cgroup names it: from the "vigil" level for vigil's own
// groups, else (a scope) below the unified hierarchy's mount; "" when it
// cannot be told.
func relOf(dir string) string {
	if i := strings.Index(dir, "/vigil/"); i >= 0 {
		return dir[i:]
	}
	unified, _, err := mounts()
	if err != nil || unified == "" {
		return ""
	}
	rel, ok := strings.CutPrefix(dir, unified+"/")
	if !ok {
		return ""
	}
	return "/" + rel
}

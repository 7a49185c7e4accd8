package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Base is where vigil's groups go on the unified hierarchy mounted at
// unified: the cgroup systemd delegated to the caller's unit (Delegate=yes:
// systemd marks it with the trusted.delegate attribute), when the caller
// runs in or below one, else unified itself. A delegated group may hold
// processes only in its leaves, so the caller must run in a group below it
// (DelegateSubgroup=, systemd 254 and later), never in it: that is an
// error, as vigil would otherwise either move itself or enable controllers
// where processes live (and systemd could no longer start the unit again).
func Base(unified string) (string, error) {
	own, err := ownGroup(unified)
	if err != nil || own == "" {
		return unified, err
	}
	for dir := own; dir != unified && strings.HasPrefix(dir, unified+"/"); dir = filepath.Dir(dir) {
		if !delegated(dir) {
			continue
		}
		if dir == own {
			return "", fmt.Errorf("cgroup: vigil runs in the delegated cgroup %s itself: give its unit DelegateSubgroup= (systemd 254 and later) so that its groups can go below it", dir)
		}
		return dir, nil
	}
	return unified, nil
}

// ownGroup is the directory of the caller's cgroup on the unified
// hierarchy, "" when /proc/self/cgroup names none.
func ownGroup(unified string) (string, error) {
	path, err := v2Path("/proc/self/cgroup")
	if err != nil || path == "" {
		return "", err
	}
	return filepath.Join(unified, path), nil
}

// delegated reports whether systemd delegated dir to a unit.
func delegated(dir string) bool {
	buf := make([]byte, 8)
	for _, attr := range []string{"trusted.delegate", "user.delegate"} {
		if n, err := unix.Getxattr(dir, attr, buf); err == nil && strings.TrimSpace(string(buf[:n])) == "1" {
			return true
		}
	}
	return false
}

// Of returns the group vigil made that pid runs in, for a process vigil
// did not start (an adopted init's executable), or nil when pid runs in
// none of vigil's groups.
func Of(pid int) *Group {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return nil
	}
	unified, v1, err := mounts()
	if err != nil {
		return nil
	}
	var dirs []string
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		id, rest, _ := strings.Cut(line, ":")
		controllers, path, ok := strings.Cut(rest, ":")
		if !ok || !strings.Contains(path, "/vigil/") {
			continue
		}
		roots := []string{}
		if id == "0" && controllers == "" {
			roots = append(roots, unified)
		}
		for _, c := range strings.Split(controllers, ",") {
			if root, ok := v1[c]; ok {
				roots = append(roots, root)
			}
		}
		for _, root := range roots {
			if dir := filepath.Join(root, path); root != "" && !seen[dir] {
				seen[dir] = true
				dirs = append(dirs, dir)
			}
		}
	}
	if len(dirs) == 0 {
		return nil
	}
	return Open(dirs)
}

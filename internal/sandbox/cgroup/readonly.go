package cgroup

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// ReadOnly lists the mount points of the cgroup hierarchies mounted
// read-only, as a container without privileges sees its own cgroup (the
// kubelet's): no group can be made there, so a process stays in the
// container's group, under the container's limits, and Create says what
// that leaves unenforced instead of failing every start.
func ReadOnly() ([]string, error) {
	ro, err := readOnlyMounts()
	return slices.Sorted(maps.Keys(ro)), err
}

func readOnlyMounts() (map[string]bool, error) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil, fmt.Errorf("read mounts: %w", err)
	}
	defer f.Close()
	ro := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 4 && (fields[2] == "cgroup" || fields[2] == "cgroup2") &&
			slices.Contains(strings.Split(fields[3], ","), "ro") {
			ro[fields[1]] = true
		}
	}
	return ro, sc.Err()
}

// readOnlyWarning says what a read-only hierarchy leaves unenforced.
func readOnlyWarning(controller, root string, l Limits) string {
	return fmt.Sprintf("the %s cgroup hierarchy %s is read-only (a container's own cgroup: its limits apply to every process): %s",
		controller, root, notEnforced(controller, l))
}

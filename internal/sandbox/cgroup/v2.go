package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// createV2 makes dir below root, enabling the controllers at every level
// above it, and writes the limits; only missing swap accounting is a
// warning.
func createV2(dir, root string, want []string, l Limits) (*Group, []string, error) {
	enable := "+" + strings.Join(want, " +")
	control := func(parent, _ string) error {
		if err := write(parent, "cgroup.subtree_control", enable); err != nil {
			return fmt.Errorf("cgroup %s: %w", parent, err)
		}
		return nil
	}
	if err := makeLevels(root, dir, control, func(string, string) error { return nil }); err != nil {
		return nil, nil, err
	}
	g := &Group{v2: true, dirs: map[string]string{"": dir}}
	g.Kill()
	warns, err := limitV2(dir, l)
	if err != nil {
		_ = g.Remove()
		return nil, nil, err
	}
	return g, warns, nil
}

// limitV2 writes l into the group at dir; only missing swap accounting is
// a warning.
func limitV2(dir string, l Limits) ([]string, error) {
	var warns []string
	var errs []error
	set := func(file, v string) {
		if err := write(dir, file, v); err != nil {
			errs = append(errs, fmt.Errorf("cgroup %s: %w", file, err))
		}
	}
	if l.Memory != nil {
		set("memory.max", strconv.FormatUint(*l.Memory, 10))
		if _, err := os.Stat(filepath.Join(dir, "memory.swap.max")); err == nil {
			set("memory.swap.max", "0")
		} else if swapOn() {
			warns = append(warns, "no swap accounting: swap use above limits.memory is not limited")
		}
	}
	if l.Pids != nil {
		set("pids.max", strconv.FormatInt(*l.Pids, 10))
	}
	if l.CPUWeight != nil {
		set("cpu.weight", strconv.FormatUint(*l.CPUWeight, 10))
	}
	if l.CPUQuota != nil {
		set("cpu.max", strconv.FormatUint(*l.CPUQuota*1000, 10)+" 100000")
	}
	if l.CPUSet != "" {
		set("cpuset.cpus", l.CPUSet)
	}
	if l.CPUSetMems != "" {
		set("cpuset.mems", l.CPUSetMems)
	}
	return warns, errors.Join(errs...)
}

func members(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// Empty reports whether no process is left in the group.
func (g *Group) Empty() bool {
	empty := true
	for _, dir := range g.dirs {
		g.within(dir, func(at string) { empty = empty && len(members(at)) == 0 })
	}
	return empty
}

// OOMKills is how many processes of the group the OOM killer has killed.
func (g *Group) OOMKills() int {
	if g == nil {
		return 0
	}
	if g.v2 {
		n := 0
		g.within(g.dirs[""], func(at string) { n = counter(filepath.Join(at, "memory.events"), "oom_kill") })
		return n
	}
	if dir, ok := g.dirs["memory"]; ok {
		return counter(filepath.Join(dir, "memory.oom_control"), "oom_kill")
	}
	return 0
}

func counter(file, key string) int {
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok && k == key {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// Remove kills what is left and removes the group's directories, and
// their parents below vigil/ once those are empty. A scope's cgroup is
// only emptied (systemd removes it), its init no longer spared: Remove
// comes once the init is gone.
func (g *Group) Remove() error {
	if g == nil {
		return nil
	}
	if g.scope {
		all := *g
		all.keep = 0
		all.Kill()
		return nil
	}
	g.Kill()
	var errs []error
	for _, dir := range g.dirs {
		if err := removeEmpty(dir); err != nil {
			errs = append(errs, err)
		}
		// The levels above, up to vigil/, go once empty (busy while a
		// sibling runs).
		for up := filepath.Dir(dir); filepath.Base(up) != "vigil" && up != "/"; up = filepath.Dir(up) {
			if os.Remove(up) != nil {
				break
			}
		}
	}
	return errors.Join(errs...)
}

// Package cgroup gives each supervised process a cgroup of its own, on the
// unified hierarchy (cgroup v2) when it has the controllers, else on the v1
// hierarchies: memory and pids always, cpu and cpuset when limits ask for
// them. The group carries the limits, tells whether the OOM killer struck,
// and kills everything in it at the end.
package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Limits are the cgroup limits of one process; nil or "" means not set.
type Limits struct {
	Memory    *uint64 // bytes; swap is limited so that none is used on top
	Pids      *int64
	CPUWeight *uint64 // 1..10000, 100 being the default share
	CPUQuota  *uint64 // percent of one CPU
	CPUSet    string  // CPUs (cpuset.cpus)
	// CPUSetMems are the memory nodes (cpuset.mems).
	CPUSetMems string
}

// Group is one process's cgroup: one directory on v2, one per hierarchy on
// v1, or a systemd scope's (see Scope).
type Group struct {
	v2    bool
	scope bool              // systemd's scope: emptied, never removed, here
	keep  int               // a scope's init, spared by Kill and Signal; 0 for none
	ino   uint64            // a scope's cgroup, by its directory's inode (see within)
	dirs  map[string]string // controller ("" on v2) → directory
}

// mounts finds the cgroup file systems: the unified hierarchy, if any, and
// the v1 hierarchy of each controller.
func mounts() (unified string, v1 map[string]string, err error) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return "", nil, fmt.Errorf("read mounts: %w", err)
	}
	defer f.Close()
	v1 = map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 {
			continue
		}
		switch fields[2] {
		case "cgroup2":
			unified = fields[1]
		case "cgroup":
			for _, opt := range strings.Split(fields[3], ",") {
				switch opt {
				case "memory", "pids", "cpu", "cpuset":
					v1[opt] = fields[1]
				}
			}
		}
	}
	return unified, v1, sc.Err()
}

// wanted lists the controllers the limits need; memory and pids are always
// used (for the OOM record and for the final kill).
func wanted(l Limits) []string {
	c := []string{"memory", "pids"}
	if l.CPUWeight != nil || l.CPUQuota != nil {
		c = append(c, "cpu")
	}
	if l.CPUSet != "" || l.CPUSetMems != "" {
		c = append(c, "cpuset")
	}
	return c
}

// Create makes (or takes over, emptying it) the cgroup vigil/rel and sets
// its limits. On the unified hierarchy vigil/ lies below the cgroup systemd
// delegated to the caller's unit (see Base), else at the root. Only what
// this machine lacks is a warning: a controller that is not there (each
// warning names the limits it leaves unenforced; with none at all, Create
// returns no group and no error), a hierarchy mounted read-only (a
// container's own cgroup), or swap accounting. Anything else that
// fails (the mount table or a controller file cannot be read, a directory
// cannot be made, a limit cannot be written) is an error: the process must
// not run without the limits it was given.
func Create(rel string, l Limits) (*Group, []string, error) {
	unified, v1, err := mounts()
	if err != nil {
		return nil, nil, err
	}
	ro, err := readOnlyMounts()
	if err != nil {
		return nil, nil, err
	}
	want := wanted(l)
	if unified != "" && !ro[unified] {
		base, err := Base(unified)
		if err != nil {
			return nil, nil, err
		}
		ok, err := hasControllers(base, want)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			return createV2(filepath.Join(base, "vigil", rel), base, want, l)
		}
	}
	g := &Group{dirs: map[string]string{}}
	var warns []string
	for _, c := range want {
		root, ok := v1[c]
		switch {
		case !ok && ro[unified]:
			warns = append(warns, readOnlyWarning(c, unified, l))
			continue
		case !ok:
			warns = append(warns, fmt.Sprintf("no %s cgroup controller: %s", c, notEnforced(c, l)))
			continue
		case ro[root]:
			warns = append(warns, readOnlyWarning(c, root, l))
			continue
		}
		dir := filepath.Join(root, "vigil", rel)
		if err := makeV1(root, dir, c); err != nil {
			_ = g.Remove()
			return nil, nil, err
		}
		g.dirs[c] = dir
	}
	if len(g.dirs) == 0 {
		return nil, warns, nil
	}
	g.Kill() // leftovers of an instance that was never cleaned up
	w, err := g.limitV1(l)
	if err != nil {
		_ = g.Remove()
		return nil, nil, err
	}
	return g, append(warns, w...), nil
}

func notEnforced(controller string, l Limits) string {
	switch controller {
	case "memory":
		if l.Memory != nil {
			return "limits.memory is not enforced and OOM kills are not recorded"
		}
		return "OOM kills are not recorded"
	case "pids":
		if l.Pids != nil {
			return "limits.processes is not enforced"
		}
		return "processes are tracked by their parent only"
	case "cpu":
		return "limits.cpu_weight and limits.cpu_quota are not enforced"
	}
	return "limits.cpuset and limits.cpuset_mems are not enforced"
}

// hasControllers reports whether the unified hierarchy at root offers
// every controller in want. Failing to read its list is an error, not a
// "no": under descriptor exhaustion it would send a v2-only machine to the
// v1 hierarchies it lacks, and the process out with no limits at all.
func hasControllers(root string, want []string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("cgroup controllers: %w", err)
	}
	have := strings.Fields(string(b))
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false, nil
		}
	}
	return true, nil
}

// makeLevels creates dir and the levels between root and it, calling
// prepare(parent, level) before (v2: enabling the controllers in the
// parent) and made(parent, level) after each level exists. A level that
// vanishes on the way (the last instance of a sibling removing its empty
// parents at the same moment) has the walk start again, a few times.
func makeLevels(root, dir string, prepare, made func(parent, level string) error) error {
	rel, _ := filepath.Rel(root, dir)
	var err error
	for range 10 {
		if err = walkLevels(root, rel, prepare, made); !levelGone(err) {
			return err
		}
	}
	return err
}

// levelGone reports whether err says a level was removed under the walk:
// its directory is gone (ENOENT), or, on v2, a file of a removed group is
// opened or written (ENODEV).
func levelGone(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENODEV)
}

func walkLevels(root, rel string, prepare, made func(parent, level string) error) error {
	cur := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		parent := cur
		cur = filepath.Join(cur, part)
		if err := prepare(parent, cur); err != nil {
			return err
		}
		if err := os.Mkdir(cur, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("create cgroup %s: %w", cur, err)
		}
		if err := made(parent, cur); err != nil {
			return err
		}
	}
	return nil
}

// makeV1 creates dir and its parents below root. A v1 cpuset group starts
// with no CPUs and no memory nodes: each new level copies its parent's.
func makeV1(root, dir, controller string) error {
	none := func(string, string) error { return nil }
	copyCpuset := func(parent, cur string) error {
		if controller != "cpuset" {
			return nil
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			b, err := os.ReadFile(filepath.Join(cur, f))
			if err != nil {
				return fmt.Errorf("cgroup %s: %w", cur, err)
			}
			if strings.TrimSpace(string(b)) != "" {
				continue
			}
			v, err := os.ReadFile(filepath.Join(parent, f))
			if err != nil {
				return fmt.Errorf("cgroup %s: %w", parent, err)
			}
			if err := write(cur, f, strings.TrimSpace(string(v))); err != nil {
				return err
			}
		}
		return nil
	}
	return makeLevels(root, dir, none, copyCpuset)
}

// limitV1 writes the limits; only missing swap accounting is a warning.
func (g *Group) limitV1(l Limits) ([]string, error) {
	var warns []string
	var errs []error
	set := func(c, file, v string) {
		if dir, ok := g.dirs[c]; ok {
			if err := write(dir, file, v); err != nil {
				errs = append(errs, fmt.Errorf("cgroup %s: %w", file, err))
			}
		}
	}
	if l.Memory != nil {
		set("memory", "memory.limit_in_bytes", strconv.FormatUint(*l.Memory, 10))
		if _, err := os.Stat(filepath.Join(g.dirs["memory"], "memory.memsw.limit_in_bytes")); err == nil {
			set("memory", "memory.memsw.limit_in_bytes", strconv.FormatUint(*l.Memory, 10))
		} else if swapOn() {
			warns = append(warns, "no swap accounting: swap use above limits.memory is not limited")
		}
	}
	if l.Pids != nil {
		set("pids", "pids.max", strconv.FormatInt(*l.Pids, 10))
	}
	if l.CPUWeight != nil {
		set("cpu", "cpu.shares", strconv.FormatUint(max(*l.CPUWeight*1024/100, 2), 10))
	}
	if l.CPUQuota != nil {
		set("cpu", "cpu.cfs_period_us", "100000")
		set("cpu", "cpu.cfs_quota_us", strconv.FormatUint(*l.CPUQuota*1000, 10))
	}
	if l.CPUSet != "" {
		set("cpuset", "cpuset.cpus", l.CPUSet)
	}
	if l.CPUSetMems != "" {
		set("cpuset", "cpuset.mems", l.CPUSetMems)
	}
	return warns, errors.Join(errs...)
}

func swapOn() bool {
	b, err := os.ReadFile("/proc/swaps")
	return err == nil && strings.Count(string(b), "\n") > 1
}

func write(dir, file, v string) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(v), 0); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}

// Open returns the group made of dirs (as listed by Dirs), for a process
// that did not create it, e.g. the init cleaning up after its executable.
// One directory of the unified hierarchy named NAME.scope is a systemd
// scope's (see Scope).
func Open(dirs []string) *Group {
	if len(dirs) == 1 && strings.HasSuffix(dirs[0], ".scope") && isV2(dirs[0]) {
		return Scope(dirs[0], 0)
	}
	g := &Group{dirs: map[string]string{}}
	for i, d := range dirs {
		key := strconv.Itoa(i)
		if isV2(d) {
			g.v2, key = true, ""
		} else if _, err := os.Stat(filepath.Join(d, "memory.oom_control")); err == nil {
			key = "memory"
		}
		g.dirs[key] = d
	}
	return g
}

// isV2 reports whether dir is a group of the unified hierarchy.
func isV2(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "cgroup.controllers"))
	return err == nil
}

// Dirs lists the directories the process joins (by writing its pid to
// cgroup.procs in each).
func (g *Group) Dirs() []string {
	out := make([]string, 0, len(g.dirs))
	for _, d := range g.dirs {
		out = append(out, d)
	}
	return out
}

// Sweep removes the empty groups below vigil/rel on every hierarchy that
// is mounted (the unified one and the v1 hierarchies of the controllers
// vigil uses), the deepest first, and returns how many went. A group with
// a process in it is left alone (the kernel refuses to remove it), so a
// running process keeps its group. It is meant for groups a crash left
// behind, swept when a supervisor starts.
func Sweep(rel string) (int, error) {
	unified, v1, err := mounts()
	if err != nil {
		return 0, err
	}
	roots := map[string]bool{}
	if unified != "" {
		roots[unified] = true
	}
	for _, r := range v1 {
		roots[r] = true
	}
	n := 0
	var errs []error
	for r := range roots {
		m, err := sweepDir(filepath.Join(r, "vigil", rel))
		n += m
		errs = append(errs, err)
	}
	return n, errors.Join(errs...)
}

// sweepDir removes dir and the groups below it that are empty, children
// first, and returns how many went.
func sweepDir(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sweep cgroups: %w", err)
	}
	n := 0
	var errs []error
	for _, e := range entries {
		if e.IsDir() {
			m, err := sweepDir(filepath.Join(dir, e.Name()))
			n += m
			errs = append(errs, err)
		}
	}
	switch err := os.Remove(dir); {
	case err == nil:
		n++
	case errors.Is(err, syscall.EBUSY), errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, os.ErrNotExist):
		// a process, or a group with one, is still in it
	default:
		errs = append(errs, fmt.Errorf("sweep cgroups: %w", err))
	}
	return n, errors.Join(errs...)
}

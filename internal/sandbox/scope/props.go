package scope

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/godbus/dbus/v5"

	"github.com/vigil-bosh/vigil/internal/sandbox/cgroup"
)

// maxCPU bounds a cpuset's CPU numbers (the kernel's own limit is lower
// on any machine vigil runs on).
const maxCPU = 8192

// oomPolicySince is the first systemd whose scopes take OOMPolicy=.
const oomPolicySince = 253

// properties are the scope's unit properties, as runc's systemd driver
// sets a container's: its slice, the process, delegation (vigil writes
// the same limits into the scope's cgroup itself, and nothing below it
// is systemd's), no default dependencies (a scope with them conflicts
// with shutdown.target and would be stopped at the shutdown alongside
// the daemon that stops it with its ladder), collected even when it
// failed, ordered before the caller's own service (a stop of both stops
// the service first), and the limits, so that systemd applies them again
// whenever it re-applies the unit's settings. An OOM kill in the scope
// leaves the scope alone (OOMPolicy=continue, on systemd 253 and later,
// given as version): the init reports it, and the supervisor restarts.
func properties(name string, pid int, l cgroup.Limits, before []string, version int) ([]property, error) {
	p := []property{
		{"Description", dbus.MakeVariant("vigil: " + name)},
		{"Slice", dbus.MakeVariant(Slice)},
		{"PIDs", dbus.MakeVariant([]uint32{uint32(pid)})},
		{"Delegate", dbus.MakeVariant(true)},
		{"DefaultDependencies", dbus.MakeVariant(false)},
		{"CollectMode", dbus.MakeVariant("inactive-or-failed")},
	}
	if version >= oomPolicySince {
		p = append(p, property{"OOMPolicy", dbus.MakeVariant("continue")})
	}
	if len(before) > 0 {
		p = append(p, property{"Before", dbus.MakeVariant(before)})
	}
	if l.Memory != nil {
		p = append(p, property{"MemoryMax", dbus.MakeVariant(*l.Memory)},
			property{"MemorySwapMax", dbus.MakeVariant(uint64(0))})
	}
	if l.Pids != nil {
		p = append(p, property{"TasksMax", dbus.MakeVariant(uint64(max(*l.Pids, 0)))})
	}
	if l.CPUWeight != nil {
		p = append(p, property{"CPUWeight", dbus.MakeVariant(*l.CPUWeight)})
	}
	if l.CPUQuota != nil {
		// percent of one CPU → µs of CPU time per second
		p = append(p, property{"CPUQuotaPerSecUSec", dbus.MakeVariant(*l.CPUQuota * 10000)})
	}
	for _, set := range []struct{ prop, list string }{{"AllowedCPUs", l.CPUSet}, {"AllowedMemoryNodes", l.CPUSetMems}} {
		if set.list == "" {
			continue
		}
		mask, err := cpuMask(set.list)
		if err != nil {
			return nil, fmt.Errorf("scope %s: %s: %w", name, set.prop, err)
		}
		p = append(p, property{set.prop, dbus.MakeVariant(mask)})
	}
	return p, nil
}

// cpuMask is a cpuset list ("0-1,4") as systemd's AllowedCPUs and
// AllowedMemoryNodes take it: bit N of the bytes, least significant
// first, for CPU (or node) N.
func cpuMask(set string) ([]byte, error) {
	var mask []byte
	for _, part := range strings.Split(set, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		first, err1 := strconv.Atoi(lo)
		last, err2 := first, error(nil)
		if isRange {
			last, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || first < 0 || last < first || last >= maxCPU {
			return nil, fmt.Errorf("cpuset %q: %q is not a CPU or a range of CPUs", set, part)
		}
		for cpu := first; cpu <= last; cpu++ {
			for len(mask) <= cpu/8 {
				mask = append(mask, 0)
			}
			mask[cpu/8] |= 1 << (cpu % 8)
		}
	}
	return mask, nil
}

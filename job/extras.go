package job

import (
	"strings"
)

// checkExtras validates vigil's own keys: user and the CPU limits.
func checkExtras(c *collector, p *Process) {
	if p.User != "" {
		name, group, hasGroup := strings.Cut(p.User, ":")
		if name == "" || (hasGroup && group == "") || strings.ContainsAny(p.User, " \t/") {
			c.check(p.field("user"), nil, "user must be NAME or NAME:GROUP, but got %q", p.User)
		}
	}
	if w := p.Limits.CPUWeight; w != nil && (*w < 1 || *w > 10000) {
		c.check(p.field("limits.cpu_weight"), nil, "cpu_weight must be between 1 and 10000, but got %d", *w)
	}
	if q := p.Limits.CPUQuota; q != nil && *q == 0 {
		c.check(p.field("limits.cpu_quota"), nil, "cpu_quota must be a positive percentage of one CPU, but got 0")
	}
	if s := p.Limits.CPUSet; s != "" && !validCPUSet(s) {
		c.check(p.field("limits.cpuset"), nil, "cpuset must be a list of CPUs and ranges such as \"0-1,4\", but got %q", s)
	}
	if s := p.Limits.CPUSetMems; s != "" && !validCPUSet(s) {
		c.check(p.field("limits.cpuset_mems"), nil, "cpuset_mems must be a list of memory nodes and ranges such as \"0\" or \"0-1\", but got %q", s)
	}
}

// validCPUSet tells whether s is a cpuset list: CPUs (N) and ranges
// (N-M) separated by commas.
func validCPUSet(s string) bool {
	for item := range strings.SplitSeq(s, ",") {
		first, last, isRange := strings.Cut(item, "-")
		if !digits(first) || isRange && !digits(last) {
			return false
		}
	}
	return true
}

// digits tells whether s is one or more ASCII digits.
func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

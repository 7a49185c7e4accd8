package job

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vigil-bosh/vigil/boshpath"
)

// checkJob validates every process of j (bpm validates them all, not only the
// one being started) and that process names are unique.
func checkJob(c *collector, l boshpath.Layout, j *Job) {
	first := map[string]int{} // name → index of its first process
	for i := range j.Processes {
		p := &j.Processes[i]
		checkProcess(c, l, p)
		if p.Name == "" {
			continue
		}
		if k, dup := first[p.Name]; dup {
			c.check(p.field("name"), nil, "duplicate process name %q (first defined at line %d)",
				p.Name, lineOf(c.lines, j.Processes[k].field("name")))
			continue
		}
		first[p.Name] = i
	}
}

// field is the path of one of p's fields in messages, e.g. processes[0].workdir.
func (p *Process) field(name string) string {
	i := 0
	if p.at != nil {
		i = p.at.index
	}
	return join(index("processes", i), name)
}

// checkProcess applies bpm's rules (with bpm's exact texts) and vigil's own to
// a decoded process. It is also run again after `bpm run` overrides.
func checkProcess(c *collector, l boshpath.Layout, p *Process) {
	if p.Name == "" {
		c.check(p.field("name"), nil, "invalid config: name")
	} else if err := boshpath.CheckName(p.Name); err != nil {
		c.check(p.field("name"), err, "%v", err)
	}
	if p.Executable == "" {
		c.check(p.field("executable"), nil, "invalid config: executable")
	}
	for i, v := range p.AdditionalVolumes {
		if msg := checkVolumePath(l, p.Job, v.Path); msg != "" {
			c.check(index(p.field("additional_volumes"), i)+".path", nil, "%s", msg)
		}
	}
	for i, v := range p.Unsafe.UnrestrictedVolumes {
		if !filepath.IsAbs(v.Path) {
			c.check(index(p.field("unsafe.unrestricted_volumes"), i)+".path", nil,
				"unrestricted volume path must be absolute, but got %q", v.Path)
		}
	}
	if !filepath.IsAbs(p.Workdir) {
		c.check(p.field("workdir"), nil, "workdir must be an absolute path, but got %q", p.Workdir)
	}
	if p.Hooks.PreStart != "" && !filepath.IsAbs(p.Hooks.PreStart) {
		c.check(p.field("hooks.pre_start"), nil, "pre_start must be an absolute path, but got %q", p.Hooks.PreStart)
	}
	for i, name := range p.Capabilities {
		if msg := checkCapability(name); msg != "" {
			c.check(index(p.field("capabilities"), i), nil, "%s", msg)
		}
	}
	checkExtras(c, p)
	checkStartable(c, l, p)
	checkIsolation(c, p)
	checkLogs(c, p)
	checkHealth(c, p)
	for _, k := range slices.Sorted(maps.Keys(p.Env)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			c.check(p.field("env."+k), nil, "invalid environment variable name %q", k)
		}
	}
}

// checkVolumePath applies bpm's rules for additional_volumes, in bpm's order,
// and returns the first broken one's message or "". The layout root stands
// where bpm has /var/vcap.
func checkVolumePath(l boshpath.Layout, job, path string) string {
	if clean := filepath.Clean(path); clean != path {
		return fmt.Sprintf("volume path must be canonical, expected %s but got %s", clean, path)
	}
	if path == l.DataDir(job) || path == l.StoreDir(job) {
		return fmt.Sprintf("invalid volume path: %s cannot conflict with default job data or store directories", path)
	}
	if !l.Contains(path) {
		return fmt.Sprintf("invalid volume path: %s must be within %s", path, l.Root())
	}
	return ""
}

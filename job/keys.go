package job

import (
	"syscall"

	"go.yaml.in/yaml/v3"
)

// The known keys of each mapping level of bpm.yml. Adding a key is one line
// here (plus the field it fills). Keys not listed are tolerated, as bpm does,
// but each one is a warning.

var jobKeys = keyTable[Job]{
	{"processes", decodeProcesses},
}

var processKeys = keyTable[Process]{
	{"name", func(c *collector, n *yaml.Node, f string, p *Process) { p.Name = str(c, n, f) }},
	{"executable", func(c *collector, n *yaml.Node, f string, p *Process) { p.Executable = str(c, n, f) }},
	{"args", func(c *collector, n *yaml.Node, f string, p *Process) { p.Args = strs(c, n, f) }},
	{"env", func(c *collector, n *yaml.Node, f string, p *Process) { p.Env = strMap(c, n, f) }},
	{"workdir", func(c *collector, n *yaml.Node, f string, p *Process) { p.Workdir = str(c, n, f) }},
	{"hooks", decodeHooks},
	{"capabilities", func(c *collector, n *yaml.Node, f string, p *Process) { p.Capabilities = strs(c, n, f) }},
	{"limits", func(c *collector, n *yaml.Node, f string, p *Process) { decodeMap(c, n, f, limitsKeys, &p.Limits) }},
	{"ephemeral_disk", func(c *collector, n *yaml.Node, f string, p *Process) { p.EphemeralDisk = boolean(c, n, f) }},
	{"persistent_disk", func(c *collector, n *yaml.Node, f string, p *Process) { p.PersistentDisk = boolean(c, n, f) }},
	{"additional_volumes", func(c *collector, n *yaml.Node, f string, p *Process) { p.AdditionalVolumes = volumes(c, n, f) }},
	{"unsafe", func(c *collector, n *yaml.Node, f string, p *Process) { decodeMap(c, n, f, unsafeKeys, &p.Unsafe) }},
	{"shutdown_signal", func(c *collector, n *yaml.Node, f string, p *Process) { p.ShutdownSignal = shutdownSignal(c, n, f) }},
	{"user", func(c *collector, n *yaml.Node, f string, p *Process) { p.User = str(c, n, f) }}, // vigil's own
	{"health", func(c *collector, n *yaml.Node, f string, p *Process) { decodeMap(c, n, f, healthKeys, &p.Health) }},
	{"restart", func(c *collector, n *yaml.Node, f string, p *Process) { decodeMap(c, n, f, restartKeys, &p.Restart) }},
	{"depends_on", func(c *collector, n *yaml.Node, f string, p *Process) { p.DependsOn = dependencies(c, n, f) }},
	{"logs", decodeLogs},           // vigil's own
	{"isolation", decodeIsolation}, // vigil's own
}

var hooksKeys = keyTable[Hooks]{
	{"pre_start", func(c *collector, n *yaml.Node, f string, h *Hooks) { h.PreStart = str(c, n, f) }},
}

var limitsKeys = keyTable[Limits]{
	{"memory", func(c *collector, n *yaml.Node, f string, l *Limits) { l.Memory = memory(c, n, f) }},
	{"open_files", func(c *collector, n *yaml.Node, f string, l *Limits) { l.OpenFiles = optUint(c, n, f) }},
	{"processes", func(c *collector, n *yaml.Node, f string, l *Limits) { l.Processes = optInt(c, n, f) }},
	{"core_file_size", func(c *collector, n *yaml.Node, f string, l *Limits) { l.CoreFileSize = optUint(c, n, f) }},
	// vigil's own:
	{"cpu_weight", func(c *collector, n *yaml.Node, f string, l *Limits) { l.CPUWeight = optUint(c, n, f) }},
	{"cpu_quota", func(c *collector, n *yaml.Node, f string, l *Limits) { l.CPUQuota = optUint(c, n, f) }},
	{"cpuset", func(c *collector, n *yaml.Node, f string, l *Limits) { l.CPUSet = str(c, n, f) }},
	{"cpuset_mems", func(c *collector, n *yaml.Node, f string, l *Limits) { l.CPUSetMems = str(c, n, f) }},
}

var volumeKeys = keyTable[Volume]{
	{"path", func(c *collector, n *yaml.Node, f string, v *Volume) { v.Path = str(c, n, f) }},
	{"writable", func(c *collector, n *yaml.Node, f string, v *Volume) { v.Writable = boolean(c, n, f) }},
	{"allow_executions", func(c *collector, n *yaml.Node, f string, v *Volume) { v.AllowExecutions = boolean(c, n, f) }},
	{"mount_only", func(c *collector, n *yaml.Node, f string, v *Volume) { v.MountOnly = boolean(c, n, f) }},
	{"shared", func(c *collector, n *yaml.Node, f string, v *Volume) { v.Shared = boolean(c, n, f) }},
}

var unsafeKeys = keyTable[Unsafe]{
	{"privileged", func(c *collector, n *yaml.Node, f string, u *Unsafe) { u.Privileged = boolean(c, n, f) }},
	{"unrestricted_volumes", func(c *collector, n *yaml.Node, f string, u *Unsafe) { u.UnrestrictedVolumes = volumes(c, n, f) }},
	{"host_pid_namespace", func(c *collector, n *yaml.Node, f string, u *Unsafe) { u.HostPIDNamespace = boolean(c, n, f) }},
}

func optUint(c *collector, n *yaml.Node, f string) *uint64 {
	return optional[uint64](c, n, f, "a non-negative integer")
}

func optInt(c *collector, n *yaml.Node, f string) *int64 {
	return optional[int64](c, n, f, "an integer")
}

func decodeProcesses(c *collector, n *yaml.Node, f string, j *Job) {
	for i, item := range c.items(n, f) {
		p := Process{Source: Source{File: c.file, Line: item.Line}, at: &origin{i, c.lines}}
		if !decodeMap(c, item, index(f, i), processKeys, &p) && !isNull(resolve(item)) {
			continue // not a mapping: reported, and nothing more to say about it
		}
		j.Processes = append(j.Processes, p)
	}
}

// decodeHooks rejects `hooks:` without a pre_start: bpm would accept the file
// and then fail every start with "prestart hook failed: exec: no command".
func decodeHooks(c *collector, n *yaml.Node, f string, p *Process) {
	if decodeMap(c, n, f, hooksKeys, &p.Hooks) && p.Hooks.PreStart == "" && !c.bad[join(f, "pre_start")] {
		c.fail(lineOf(c.lines, f), f, nil, "hooks without pre_start (bpm would fail at start: prestart hook failed: exec: no command)")
	}
}

func volumes(c *collector, n *yaml.Node, f string) []Volume {
	var out []Volume
	for i, item := range c.items(n, f) {
		var v Volume
		decodeMap(c, item, index(f, i), volumeKeys, &v)
		out = append(out, v)
	}
	return out
}

// memory parses limits.memory with bytefmt's rules. bpm reports a bad value
// only when the process starts; we report it at load.
func memory(c *collector, n *yaml.Node, f string) *uint64 {
	s, ok := scalar[string](c, n, f, "a byte quantity")
	if !ok {
		return nil
	}
	b, err := parseByteSize(s)
	if err != nil {
		c.fail(n.Line, f, err, "%v", err)
		return nil
	}
	return &b
}

// shutdownSignal accepts what bpm accepts: "", TERM (the default) or INT.
func shutdownSignal(c *collector, n *yaml.Node, f string) syscall.Signal {
	s, _ := scalar[string](c, n, f, "a string")
	switch s {
	case "", "TERM":
		return syscall.SIGTERM
	case "INT":
		return syscall.SIGINT
	}
	c.fail(n.Line, f, nil, "shutdown signal should either be 'TERM' or 'INT' (or left unspecified), but got '%s'", s)
	return syscall.SIGTERM
}

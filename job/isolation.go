package job

import (
	"go.yaml.in/yaml/v3"
)

// The values of vigil's `isolation` key.
const (
	// IsolationSandbox is bpm's sandbox, the default: the process's own
	// mount, PID, IPC and UTS namespaces, a root of bind mounts, seccomp.
	IsolationSandbox = "sandbox"
	// IsolationHost runs the process in the host's namespaces, on the
	// host's file system, with no seccomp filter: only its user, its
	// capabilities, its rlimits and its cgroup (limits, the final kill)
	// remain of the sandbox.
	IsolationHost = "host"
)

// Unisolated reports whether the process runs in the host's namespaces
// (isolation: host).
func (p Process) Unisolated() bool { return p.Isolation == IsolationHost }

// decodeIsolation reads the isolation key: "sandbox" (kept as "") or
// "host".
func decodeIsolation(c *collector, n *yaml.Node, f string, p *Process) {
	switch s := str(c, n, f); s {
	case "", IsolationSandbox:
		p.Isolation = ""
	case IsolationHost:
		p.Isolation = IsolationHost
	default:
		c.fail(n.Line, f, nil, "isolation must be %q (bpm's, the default) or %q, but got %q", IsolationSandbox, IsolationHost, s)
	}
}

// checkIsolation explains isolation: host (a warning: the process is not
// isolated) and what does not go with it: unsafe.privileged is an error
// (bpm's sandbox with every capability, where the key says no sandbox),
// and the keys that only shape the sandbox's mounts are warnings, as they
// do nothing or less on the host.
func checkIsolation(c *collector, p *Process) {
	if !p.Unisolated() {
		return
	}
	key := p.field("isolation")
	line := lineOf(c.lines, key)
	c.warn(line, key, "the process is not isolated: it runs in the host's mount, PID, IPC and UTS namespaces, "+
		"sees the host's whole file system and has no seccomp filter; only its user (vcap unless user says), "+
		"its capabilities, its rlimits and its cgroup limits apply")
	if p.Unsafe.Privileged {
		c.check(p.field("unsafe.privileged"), nil, "unsafe.privileged cannot be combined with isolation: host (line %d): "+
			"privileged is bpm's sandbox with every capability; in the host's namespaces, name the user (user: root) "+
			"and the capabilities the process needs", line)
	}
	hostWarn := func(field, format string) {
		f := p.field(field)
		c.warn(lineOf(c.lines, f), f, format, line)
	}
	if p.Unsafe.HostPIDNamespace {
		hostWarn("unsafe.host_pid_namespace", "has no effect under isolation: host (line %d): the process is in the host's PID namespace already")
	}
	if len(p.Unsafe.UnrestrictedVolumes) > 0 {
		hostWarn("unsafe.unrestricted_volumes", "has no effect under isolation: host (line %d): nothing is mounted, the process sees the host's whole file system")
	}
	if len(p.AdditionalVolumes) > 0 {
		hostWarn("additional_volumes", "are not mounted under isolation: host (line %d): each path is still created and given "+
			"to the process's user (unless mount_only), but writable, allow_executions and shared do not apply: "+
			"the process reaches the paths as the host has them")
	}
}

package job

import (
	"go.yaml.in/yaml/v3"
)

// LogRotation is vigil's `logs` key of a process (bpm ignores it): the
// process's init rotates each of its log files by size.
type LogRotation struct {
	// MaxSize is the size in bytes at which a log file is rotated; 0 never
	// rotates (the files are left to logrotate, as under bpm).
	MaxSize uint64
	// Keep is how many rotated files are kept (PATH.1 … PATH.Keep); the
	// default is DefaultLogKeep when MaxSize is set.
	Keep int
	// Timestamps has the init begin each line it writes with the time it
	// read it (RFC 3339, UTC, milliseconds) and a space. Left out of the
	// JSON when off, so that the digest of a process that does not use it
	// (systemd's units) is what it was before the key existed.
	Timestamps bool `json:",omitempty"`
}

// Bounds of the logs key.
const (
	DefaultLogKeep = 5
	MinLogSize     = 4 << 10 // a smaller file would rotate at nearly every write
	MaxLogKeep     = 100
)

// logsSpec is the logs key as written, to tell a missing keep from keep: 0.
type logsSpec struct {
	maxSize    *uint64
	keep       *int64
	timestamps bool
}

var logsKeys = keyTable[logsSpec]{
	{"max_size", func(c *collector, n *yaml.Node, f string, s *logsSpec) { s.maxSize = logSize(c, n, f) }},
	{"keep", func(c *collector, n *yaml.Node, f string, s *logsSpec) { s.keep = optInt(c, n, f) }},
	{"timestamps", func(c *collector, n *yaml.Node, f string, s *logsSpec) { s.timestamps = boolean(c, n, f) }},
}

// decodeLogs fills p.Logs from the logs mapping, applying the default keep.
// The values are checked by checkLogs.
func decodeLogs(c *collector, n *yaml.Node, f string, p *Process) {
	var s logsSpec
	decodeMap(c, n, f, logsKeys, &s)
	p.Logs.Timestamps = s.timestamps
	if s.maxSize != nil {
		p.Logs.MaxSize = *s.maxSize
		p.Logs.Keep = DefaultLogKeep
	}
	if s.keep != nil {
		p.Logs.Keep = int(min(max(*s.keep, -1), MaxLogKeep+1)) // out of range stays out of range
	}
}

// logSize reads max_size: a plain integer is bytes, anything else is a
// quantity with a unit as in limits.memory (100MB, 1G, 512KiB).
func logSize(c *collector, n *yaml.Node, f string) *uint64 {
	if r := resolve(n); r != nil && r.Kind == yaml.ScalarNode && r.ShortTag() == "!!int" {
		return optUint(c, n, f)
	}
	return memory(c, n, f)
}

// checkLogs validates the logs key.
func checkLogs(c *collector, p *Process) {
	l := p.Logs
	switch {
	case l.MaxSize == 0 && l.Keep != 0:
		c.check(p.field("logs.keep"), nil, "logs.keep needs logs.max_size (rotation is by size)")
	case l.MaxSize != 0 && l.MaxSize < MinLogSize:
		c.check(p.field("logs.max_size"), nil, "logs.max_size must be at least %d bytes (4KiB), but got %d", MinLogSize, l.MaxSize)
	case l.MaxSize != 0 && (l.Keep < 1 || l.Keep > MaxLogKeep):
		c.check(p.field("logs.keep"), nil, "logs.keep must be between 1 and %d", MaxLogKeep)
	}
}

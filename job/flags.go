package job

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/vigil-bosh/vigil/boshpath"
)

// ParseVolumeFlag parses a `bpm run -v` value, "<path>[:opt1,opt2]", where the
// options are writable, mount_only, allow_executions and shared. The errors
// carry bpm's texts. The path is checked by WithRunOverrides, not here.
func ParseVolumeFlag(s string) (Volume, error) {
	path, opts, hasOpts := strings.Cut(s, ":")
	if strings.Contains(opts, ":") {
		return Volume{}, fmt.Errorf("invalid volume definition (format: <path>[:<options>]): %s", s)
	}
	v := Volume{Path: path}
	if !hasOpts {
		return v, nil
	}
	for _, opt := range strings.Split(opts, ",") {
		switch opt {
		case "writable":
			v.Writable = true
		case "mount_only":
			v.MountOnly = true
		case "allow_executions":
			v.AllowExecutions = true
		case "shared":
			v.Shared = true
		default:
			return Volume{}, fmt.Errorf("invalid volume option: %s", opt)
		}
	}
	return v, nil
}

// ParseEnvFlag parses a `bpm run -e` value, "KEY=VALUE"; the value may hold
// further "=". The error carries bpm's text, typo included.
func ParseEnvFlag(s string) (key, value string, err error) {
	key, value, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", fmt.Errorf("invalid envionment variable definition (format should be KEY=value): %q", s)
	}
	return key, value, nil
}

// WithRunOverrides returns a copy of p with vols appended to
// AdditionalVolumes and env applied over Env, validated again with the rules
// of Parse, as bpm validates after -v and -e. The errors are an ErrorList
// whose entries have no line. p is not modified. If env sets PATH and the
// executable is a bare name, it is looked up again in the new PATH, which
// reads the file system.
func (p Process) WithRunOverrides(l boshpath.Layout, vols []Volume, env map[string]string) (Process, error) {
	q := p
	q.AdditionalVolumes = slices.Concat(p.AdditionalVolumes, vols)
	if len(env) > 0 {
		q.Env = maps.Clone(p.Env)
		if q.Env == nil {
			q.Env = map[string]string{}
		}
		maps.Copy(q.Env, env)
	}
	c := newCollector(p.Source.File, nil) // flags have no line to point at
	checkProcess(c, l, &q)
	if len(c.errs) > 0 {
		return Process{}, c.errs
	}
	if _, ok := env["PATH"]; ok && isBareName(q.Executable) {
		resolved, err := findExecutable(l, q)
		if err != nil {
			return Process{}, ErrorList{{File: p.Source.File, Field: q.field("executable"), Msg: err.Error(), Err: err}}
		}
		q.ResolvedExecutable = resolved
	}
	return q, nil
}

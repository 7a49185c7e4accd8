package launch

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/launch/procinit"
	"github.com/vigil-bosh/vigil/internal/sandbox/cgroup"
	"github.com/vigil-bosh/vigil/internal/sandbox/scope"
)

// Placer puts an init, and so everything it will start, into a cgroup of
// its own that the service manager keeps, with the process's limits, and
// returns the cgroup's directory: systemd's transient scope, as runc's
// systemd driver makes one for each of bpm's containers. The cgroup
// outlives the caller and goes once it is empty. pid is the caller's
// child, not yet waited for.
type Placer interface {
	Place(ctx context.Context, name string, pid int, l cgroup.Limits) (string, error)
	Close() error
}

// SystemdScopes is this machine's Placer where systemd is PID 1 on the
// unified hierarchy alone (a Noble stemcell), else nil: a process's
// cgroup then goes below vigil/ as before (runit, containers, Kubernetes,
// hybrid hierarchies). The caller closes it.
func SystemdScopes() Placer {
	if !scope.Available() {
		return nil
	}
	return scope.New()
}

// scopeName is the scope of JOB/PROC: bpm's, runc-bpm-ID.scope with bpm's
// container ID (JOB, or JOB.PROC for a process named otherwise, each byte
// outside [A-Za-z0-9_-] written as '.' and two hex digits), for the
// default BOSH root: the name the BOSH agent's enable-monit-access reads
// the job from, and that releases' firewall rules name. Any other root's
// processes go into vigil-TAG-bpm-ID.scope (TAG as cgroupTag), so that
// vigils on different roots never share a scope.
func scopeName(root, job, proc string) string {
	id := job
	if proc != job {
		id = job + "." + proc
	}
	prefix := "runc"
	if root != boshpath.DefaultRoot {
		prefix = "vigil-" + cgroupTag(root)
	}
	return prefix + "-bpm-" + containerID(id) + ".scope"
}

// containerID encodes s as bpm encodes its container IDs: [A-Za-z0-9_-]
// as they are, every other byte as '.' and two lower-case hex digits.
func containerID(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, ".%02x", c)
	}
	return b.String()
}

// place puts the init pid in the process's scope, when the isolation has
// one (iso.scope), writes the limits into it and says so in the launch:
// the sandbox joins that cgroup (where it already is) and the init reads
// its OOM kills there at the end. The scope's group spares the init in
// the supervisor's kills.
func (r *Runner) place(ctx context.Context, iso *isolation, launch *procinit.Launch, pid int) error {
	if iso.scope == "" {
		return nil
	}
	dir, err := r.opts.Scopes.Place(ctx, iso.scope, pid, iso.limits)
	if err != nil {
		return fmt.Errorf("failed to start job-process: %w", err)
	}
	g := cgroup.Scope(dir, pid)
	warns, err := g.Limit(iso.limits)
	if err != nil {
		return fmt.Errorf("failed to start job-process: %w", err)
	}
	iso.group = g
	launch.Sandbox.Cgroups = g.Dirs()
	launch.Warnings = append(launch.Warnings, warns...)
	return nil
}

// adoptedScope is the group of an adopted init's executable exe when it
// runs in JOB/PROC's scope (see scopeName), else nil.
func adoptedScope(l boshpath.Layout, job, proc string, init, exe int) *cgroup.Group {
	dir, err := cgroup.PathOf(exe)
	if err != nil || filepath.Base(dir) != scopeName(l.Root(), job, proc) {
		return nil
	}
	return cgroup.Scope(dir, init)
}

package launch

import (
	"fmt"
	"hash/fnv"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/launch/procinit"
	"github.com/vigil-bosh/vigil/internal/sandbox"
	"github.com/vigil-bosh/vigil/internal/sandbox/cgroup"
	"github.com/vigil-bosh/vigil/internal/sandbox/setup"
)

// notRoot is the one warning of an unprivileged vigil.
const notRoot = "vigil does not run as root: no isolation (namespaces, mounts, user, capabilities, seccomp) and no limits are enforced"

// noSysAdmin is the one warning of a root vigil without CAP_SYS_ADMIN.
const noSysAdmin = "vigil lacks CAP_SYS_ADMIN: no isolation (namespaces, mounts, user, capabilities, seccomp) and no limits are enforced"

// IsolationEnv, set to "off" in the environment of "vigil daemon" or bpm,
// switches isolation off (for tests whose jobs live under /tmp, and for
// debugging); every process then carries the warning noIsolation.
const IsolationEnv = "VIGIL_ISOLATION"

const noIsolation = "isolation is switched off (" + IsolationEnv + "=off, or vigil demo as root without a vcap user): no namespaces, mounts, user, capabilities, seccomp or limits"

// cgroupName is the cgroup of one instance of a process, below vigil/:
// ROOT/JOB/PROC/INSTANCE. ROOT is "bosh" for the default BOSH root and a
// hash of the root's path for any other, so that vigils on different roots
// (tests, containers sharing a host) never take over each other's groups.
// INSTANCE is unique to each start: a restart runs while the previous
// instance's init may still be ending, and the cleanup of the old group
// (kill everything in it, remove it) must never reach the new one.
func cgroupName(root, job, proc string, instance uint64) string {
	return fmt.Sprintf("%s/%s/%s/%x", cgroupTag(root), job, proc, instance)
}

// cgroupTag is the level below vigil/ that holds the groups of the BOSH
// root: "bosh" for the default one, "root-HASH" for any other.
func cgroupTag(root string) string {
	if root == boshpath.DefaultRoot {
		return "bosh"
	}
	h := fnv.New32a()
	h.Write([]byte(root))
	return fmt.Sprintf("root-%08x", h.Sum32())
}

// SweepCgroups removes the empty cgroups of the BOSH root l that a crash
// (of an init, of the daemon) left behind, and returns how many went.
// Groups of other roots, and groups with a process in them, are left
// alone. A daemon calls it as it starts, before it starts anything.
func SweepCgroups(l boshpath.Layout) (int, error) {
	return cgroup.Sweep(cgroupTag(l.Root()))
}

// instanceID is unique among the starts of one host: the start's wall
// clock in nanoseconds, bumped past the last one given out.
func (r *Runner) instanceID() uint64 {
	for {
		last := r.lastInstance.Load()
		id := max(uint64(time.Now().UnixNano()), last+1)
		if r.lastInstance.CompareAndSwap(last, id) {
			return id
		}
	}
}

// isolation is what a start sets up for the process's confinement.
type isolation struct {
	cloneFlags uintptr       // namespaces the init is created in
	group      *cgroup.Group // nil without a cgroup (or before the init is placed in its scope)
	scope      string        // the scope the init goes into (Options.Scopes), "" for none
	limits     cgroup.Limits // the scope's limits
}

// isolate fills the launch's sandbox and warnings: it builds the sandbox
// spec, prepares the host (ownership, volumes, shared mounts) and creates
// the process's cgroup with its limits, or, with Options.Scopes, names the
// scope its init goes into once it runs (Runner.place). What this machine cannot enforce
// (a missing cgroup controller) becomes a warning; what is misconfigured
// (a bad volume, a user that does not exist) and what fails (a lookup, a
// cgroup that cannot be made or limited) fails the start, which is then
// retried: a process never runs with less isolation than it was given.
func (r *Runner) isolate(launch *procinit.Launch) (isolation, error) {
	p, l := r.p, r.opts.Layout
	switch {
	case r.opts.NoIsolation:
		launch.Warnings = append(launch.Warnings, noIsolation)
		return isolation{}, nil
	case os.Geteuid() != 0:
		launch.Warnings = append(launch.Warnings, notRoot)
		return isolation{}, nil
	case !sandbox.HasCapability(unix.CAP_SYS_ADMIN):
		// Root in a restricted container: namespaces and mounts would fail.
		launch.Warnings = append(launch.Warnings, noSysAdmin)
		return isolation{}, nil
	}
	spec, warns, err := setup.Build(l, p, setup.Options{User: r.opts.User})
	if err != nil {
		return isolation{}, fmt.Errorf("failed to start job-process: %w", err)
	}
	if err := setup.Prepare(l, p, spec); err != nil {
		return isolation{}, err
	}
	var iso isolation
	lim := cgroup.Limits{Memory: p.Limits.Memory, Pids: p.Limits.Processes,
		CPUWeight: p.Limits.CPUWeight, CPUQuota: p.Limits.CPUQuota, CPUSet: p.Limits.CPUSet, CPUSetMems: p.Limits.CPUSetMems}
	switch {
	case r.opts.NoCgroup:
	case r.opts.Scopes != nil:
		iso.scope, iso.limits = scopeName(l.Root(), p.Job, p.Name), lim
	default:
		g, cw, err := cgroup.Create(cgroupName(l.Root(), p.Job, p.Name, r.instanceID()), lim)
		if err != nil {
			return isolation{}, fmt.Errorf("failed to start job-process: %w", err)
		}
		warns = append(warns, cw...)
		if g == nil && len(cw) == 0 {
			warns = append(warns, "no cgroup controller on this machine: cgroup limits are not enforced and OOM kills are not recorded")
		} else if g != nil {
			iso.group = g
			spec.Cgroups = g.Dirs()
		}
	}
	if !p.Unsafe.HostPIDNamespace && !p.Unisolated() {
		iso.cloneFlags = unix.CLONE_NEWPID
	}
	launch.Sandbox = &spec
	if p.Unsafe.Privileged {
		launch.InitCaps = spec.Caps // the init holds what tini would (procinit.Launch.InitCaps)
	}
	launch.Warnings = append(launch.Warnings, warns...)
	return iso, nil
}

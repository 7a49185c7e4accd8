// Package setup is the daemon's side of a process's isolation: Build
// turns a job's process into the sandbox.Spec the init's helper applies,
// and Prepare readies the host for it (directories handed to the
// process's user, shared volumes). It is apart from package sandbox so
// that the per-process init, which only applies a sandbox.Spec, does not import
// the job model and its YAML parser.
package setup

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/sandbox"
	"github.com/vigil-bosh/vigil/job"
)

// DefaultUser is bpm's identity for every process.
const DefaultUser = "vcap"

// DefaultOpenFiles is RLIMIT_NOFILE when limits.open_files is not set: bpm's
// wrapper script raises it to this before running runc, and the container
// inherits it.
const DefaultOpenFiles = 524288

// Options tune Build.
type Options struct {
	// User is the identity of processes that name none with the user key;
	// "" means DefaultUser. Tests on machines without vcap name another one.
	User string
}

// Build describes how p runs confined. Warnings say what cannot be
// enforced on this machine; the process still runs. Its identity is never
// guessed: a user that does not exist, or one that cannot be looked up
// (the passwd file unreadable, no descriptor left), is an error.
func Build(l boshpath.Layout, p job.Process, o Options) (sandbox.Spec, []string, error) {
	var warns []string
	s := sandbox.Spec{
		Root: RootDir(l),
		Path: p.ResolvedExecutable, Args: append([]string{p.Executable}, p.Args...),
		Env: p.EnvironInside(), Dir: p.WorkdirInside(l),
	}
	priv := p.Unsafe.Privileged
	uid, gid, w, err := identity(p.User, o.User)
	if err != nil {
		return sandbox.Spec{}, nil, err
	}
	s.OwnerUID, s.OwnerGID = uid, gid // bpm's directories belong to vcap, privileged or not
	if priv {
		s.Caps, s.RootSuid = sandbox.PrivilegedCaps(), true
	} else {
		nums, unknown := sandbox.CapNumbers(p.Capabilities)
		if len(unknown) > 0 {
			return sandbox.Spec{}, nil, fmt.Errorf("unknown capabilities %s", strings.Join(unknown, ", "))
		}
		s.Caps, s.NoNewPrivs, s.Seccomp = nums, true, true
		s.UID, s.GID = uid, gid
		warns = append(warns, w...)
	}
	s.Caps, warns = availableCaps(s.Caps, warns)
	if p.Unisolated() {
		s.Rlimits, warns = rlimits(p, warns)
		return hostSpec(l, p, s), warns, nil
	}
	s.Mounts = mountTable(l, p)
	if !priv {
		s.Masked = []string{"/etc/sv", "/proc/kcore", "/proc/latency_stats", "/proc/sched_debug",
			"/proc/timer_list", "/proc/timer_stats", "/sys/firmware"}
		s.ReadOnly = []string{"/proc/asound", "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
	}
	s.Rlimits, warns = rlimits(p, warns)
	if rel, err := filepath.Rel("/tmp", l.Root()); err == nil && !strings.HasPrefix(rel, "..") {
		warns = append(warns, "the BOSH root "+l.Root()+" lies under /tmp, which the process sees as its own tmp directory")
	}
	return s, warns, nil
}

// rlimits are the process's rlimits: open files (bpm's default unless
// limits.open_files says) and the core file size when limits say.
func rlimits(p job.Process, warns []string) ([]sandbox.Rlimit, []string) {
	nofile := uint64(DefaultOpenFiles)
	if p.Limits.OpenFiles != nil {
		nofile = *p.Limits.OpenFiles
	}
	rs := []sandbox.Rlimit{{Resource: unix.RLIMIT_NOFILE, Cur: nofile, Max: nofile}}
	if c := p.Limits.CoreFileSize; c != nil {
		rs = append(rs, sandbox.Rlimit{Resource: unix.RLIMIT_CORE, Cur: *c, Max: *c})
	}
	return rs, append(warns, clampRlimits(rs)...)
}

// hostSpec completes s, the identity and rlimits of p under isolation: host, for the
// host's namespaces and file system: no root, mounts or masks, and no
// seccomp filter; the executable's environment and working directory name
// the job's directories where the host has them. no_new_privs stays, so
// that a set-user-ID program gives the process no more than its user and
// capabilities.
func hostSpec(l boshpath.Layout, p job.Process, s sandbox.Spec) sandbox.Spec {
	s.Host, s.Root, s.Seccomp = true, "", false
	s.Env, s.Dir = p.Environ(l), p.Workdir
	return s
}

// clampRlimits lowers limits above vigil's own hard limits when vigil lacks
// CAP_SYS_RESOURCE (as in some containers), which raising them needs.
func clampRlimits(rs []sandbox.Rlimit) []string {
	if sandbox.HasCapability(unix.CAP_SYS_RESOURCE) {
		return nil
	}
	var warns []string
	for i, r := range rs {
		var cur unix.Rlimit
		if unix.Getrlimit(r.Resource, &cur) != nil || r.Max <= cur.Max {
			continue
		}
		name := map[int]string{unix.RLIMIT_NOFILE: "open files", unix.RLIMIT_CORE: "core file size"}[r.Resource]
		warns = append(warns, fmt.Sprintf("the %s limit is %d, not %d: vigil lacks CAP_SYS_RESOURCE to raise it", name, cur.Max, r.Max))
		rs[i].Cur, rs[i].Max = min(r.Cur, cur.Max), cur.Max
	}
	return warns
}

// availableCaps drops the capabilities vigil does not hold itself (it
// cannot grant them), with a warning naming them.
func availableCaps(caps []int, warns []string) ([]int, []string) {
	var kept []int
	var missing []string
	for _, c := range caps {
		if sandbox.HasCapability(c) {
			kept = append(kept, c)
			continue
		}
		missing = append(missing, sandbox.CapName(c))
	}
	if len(missing) > 0 {
		warns = append(warns, "vigil itself lacks, so cannot grant, the capabilities "+strings.Join(missing, ", "))
	}
	return kept, warns
}

// RootDir is the host directory each process's root is assembled on (in
// the process's own mount namespace, so they do not collide).
func RootDir(l boshpath.Layout) string { return filepath.Join(l.Root(), "data", "vigil", "rootfs") }

// identity resolves the process's user key ("NAME[:GROUP]"), or the default
// user, to ids. A user that does not exist fails the start, as bpm's does;
// so does any other failure of a lookup (an unreadable passwd file, no
// descriptor left), which must never pass for a missing user. Only a group
// that does not exist falls back, with a warning, to the user's primary
// group.
func identity(spec, def string) (uid, gid int, warns []string, err error) {
	if spec == "" {
		spec = def
	}
	if spec == "" {
		spec = DefaultUser
	}
	name, group, _ := strings.Cut(spec, ":")
	u, err := user.Lookup(name)
	var unknownUser user.UnknownUserError
	switch {
	case errors.As(err, &unknownUser):
		return 0, 0, nil, fmt.Errorf("user %s does not exist", name)
	case err != nil:
		return 0, 0, nil, fmt.Errorf("look up user %s: %w", name, err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	if group != "" {
		g, err := user.LookupGroup(group)
		var unknownGroup user.UnknownGroupError
		switch {
		case errors.As(err, &unknownGroup):
			warns = append(warns, fmt.Sprintf("group %s does not exist; using %s's primary group", group, name))
		case err != nil:
			return 0, 0, nil, fmt.Errorf("look up group %s: %w", group, err)
		default:
			gid, _ = strconv.Atoi(g.Gid)
		}
	}
	return uid, gid, warns, nil
}

// mountTable is bpm's mount table (reference 3.2) under the layout root,
// with the shallowest destinations first and the first mount of a
// destination winning.
func mountTable(l boshpath.Layout, p job.Process) []sandbox.Mount {
	priv := p.Unsafe.Privileged
	var ms []sandbox.Mount
	add := func(m sandbox.Mount) {
		if m.Kind == sandbox.KindBind || m.Kind == sandbox.KindSymlink {
			m.NoDev = true
			m.NoSuid = !priv
		}
		ms = append(ms, m)
	}
	// A privileged process's mounts have no nosuid, as bpm drops it from
	// every mount then (its root's too: Spec.RootSuid).
	nosuid := !priv
	add(sandbox.Mount{Kind: sandbox.KindProc, Dest: "/proc", NoSuid: nosuid, NoExec: true, NoDev: true})
	add(sandbox.Mount{Kind: sandbox.KindTmpfs, Dest: "/dev", NoSuid: nosuid, NoExec: true, Data: "mode=755"})
	add(sandbox.Mount{Kind: sandbox.KindDevpts, Dest: "/dev/pts", NoSuid: nosuid, NoExec: true, Data: "newinstance,ptmxmode=0666,mode=0620,gid=5"})
	add(sandbox.Mount{Kind: sandbox.KindTmpfs, Dest: "/dev/shm", NoSuid: nosuid, NoExec: true, NoDev: true, Data: "mode=1777"})
	add(sandbox.Mount{Kind: sandbox.KindMqueue, Dest: "/dev/mqueue", NoSuid: nosuid, NoExec: true, NoDev: true})
	add(sandbox.Mount{Kind: sandbox.KindSysfs, Dest: "/sys", ReadOnly: true, NoSuid: nosuid, NoExec: true, NoDev: true})
	for _, d := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		ms = append(ms, sandbox.Mount{Kind: sandbox.KindBind, Source: "/dev/" + d, Dest: "/dev/" + d, NoSuid: nosuid, NoExec: true})
	}
	for dest, target := range map[string]string{"/dev/ptmx": "pts/ptmx", "/dev/fd": "/proc/self/fd",
		"/dev/stdin": "/proc/self/fd/0", "/dev/stdout": "/proc/self/fd/1", "/dev/stderr": "/proc/self/fd/2"} {
		ms = append(ms, sandbox.Mount{Kind: sandbox.KindSymlink, Source: target, Dest: dest})
	}
	for _, d := range []string{"/bin", "/etc", "/lib", "/lib64", "/sbin", "/usr"} {
		if fi, err := os.Lstat(d); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			if target, err := os.Readlink(d); err == nil {
				ms = append(ms, sandbox.Mount{Kind: sandbox.KindSymlink, Source: target, Dest: d})
			}
		} else if err == nil {
			add(sandbox.Mount{Kind: sandbox.KindBind, Source: d, Dest: d, ReadOnly: true})
		}
	}
	for _, d := range []string{"/run/resolvconf", "/run/systemd/resolve"} {
		if _, err := os.Stat(d); err == nil {
			add(sandbox.Mount{Kind: sandbox.KindBind, Source: d, Dest: d, ReadOnly: true, NoExec: true})
		}
	}
	// The job's directories are where bpm puts them, below /var/vcap,
	// whatever the root; under another root they are at their own paths
	// too, for a bpm.yml written with those.
	boshDir := func(m sandbox.Mount) {
		add(m)
		if in := l.Inside(m.Dest); in != m.Dest {
			m.Dest = in
			add(m)
		}
	}
	tmp := l.TmpDir(p.Job)
	for _, d := range []string{"/tmp", "/var/tmp"} {
		add(sandbox.Mount{Kind: sandbox.KindBind, Source: tmp, Dest: d, NoExec: true})
	}
	boshDir(sandbox.Mount{Kind: sandbox.KindBind, Source: tmp, Dest: tmp, NoExec: true})
	pkgs := filepath.Join(l.Root(), "data", "packages")
	for _, d := range []string{pkgs, l.PackagesDir(), l.JobDir(p.Job)} {
		if _, err := os.Stat(d); err == nil {
			boshDir(sandbox.Mount{Kind: sandbox.KindBind, Source: d, Dest: d, ReadOnly: true})
		}
	}
	boshDir(sandbox.Mount{Kind: sandbox.KindBind, Source: l.LogDir(p.Job), Dest: l.LogDir(p.Job), NoExec: true})
	if p.EphemeralDisk {
		boshDir(sandbox.Mount{Kind: sandbox.KindBind, Source: l.DataDir(p.Job), Dest: l.DataDir(p.Job), NoExec: true})
	}
	if p.PersistentDisk {
		boshDir(sandbox.Mount{Kind: sandbox.KindBind, Source: l.StoreDir(p.Job), Dest: l.StoreDir(p.Job), NoExec: true})
	}
	for _, v := range p.AdditionalVolumes {
		add(volumeMount(v.Path, v))
	}
	defaults := slices.Clone(ms)
	for _, v := range p.Unsafe.UnrestrictedVolumes {
		matches, _ := filepath.Glob(v.Path)
		for _, m := range matches {
			if !underAny(m, defaults) {
				vm := volumeMount(m, v)
				vm.Shared = false // bpm shares only additional volumes
				add(vm)
			}
		}
	}
	return sortMounts(ms)
}

func volumeMount(path string, v job.Volume) sandbox.Mount {
	return sandbox.Mount{Kind: sandbox.KindBind, Source: path, Dest: path, ReadOnly: !v.Writable, NoExec: !v.AllowExecutions, Shared: v.Shared}
}

// underAny reports whether path is at or below the destination of a BOSH
// default mount (bpm drops such unrestricted volumes). The system mounts
// and the identity mounts of the OS directories do not count.
func underAny(path string, ms []sandbox.Mount) bool {
	for _, m := range ms {
		if m.Kind != sandbox.KindBind || !strings.HasPrefix(m.Source, "/") || strings.HasPrefix(m.Dest, "/dev") {
			continue
		}
		if slices.Contains([]string{"/bin", "/etc", "/lib", "/lib64", "/sbin", "/usr", "/tmp", "/var/tmp"}, m.Dest) {
			continue
		}
		if path == m.Dest || strings.HasPrefix(path, m.Dest+"/") {
			return true
		}
	}
	return false
}

// sortMounts orders by depth (stable, so addition order breaks ties) and
// drops later duplicates of a destination.
func sortMounts(ms []sandbox.Mount) []sandbox.Mount {
	seen := map[string]bool{}
	var out []sandbox.Mount
	for _, m := range ms {
		if !seen[m.Dest] {
			seen[m.Dest] = true
			out = append(out, m)
		}
	}
	slices.SortStableFunc(out, func(a, b sandbox.Mount) int { return depth(a.Dest) - depth(b.Dest) })
	return out
}

func depth(p string) int { return strings.Count(filepath.Clean(p), "/") }

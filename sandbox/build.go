package sandbox

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/job"
)

// DefaultUser is bpm's identity for every process.
const DefaultUser = "vcap"

// DefaultOpenFiles is RLIMIT_NOFILE when limits.open_files is not set: bpm's
// wrapper script raises it to this before running runc, and the container
// inherits it.
const DefaultOpenFiles = 524288

// fallbackUID is used, with a warning, when the configured user is missing.
const fallbackUID = 65534

// Options tune Build.
type Options struct {
	// User is the identity of processes that name none with the user key;
	// "" means DefaultUser. Tests on machines without vcap name another one.
	User string
}

// Build describes how p runs confined. Warnings say what cannot be
// enforced on this machine; the process still runs.
func Build(l boshpath.Layout, p job.Process, o Options) (Spec, []string, error) {
	var warns []string
	s := Spec{
		Root: RootDir(l),
		Path: p.ResolvedExecutable, Args: append([]string{p.Executable}, p.Args...),
		Env: p.EnvironInside(), Dir: p.WorkdirInside(l),
	}
	priv := p.Unsafe.Privileged
	uid, gid, w := identity(p.User, o.User)
	s.OwnerUID, s.OwnerGID = uid, gid // bpm's directories belong to vcap, privileged or not
	if priv {
		s.Caps = privilegedCaps()
	} else {
		nums, unknown := CapNumbers(p.Capabilities)
		if len(unknown) > 0 {
			return Spec{}, nil, fmt.Errorf("unknown capabilities %s", strings.Join(unknown, ", "))
		}
		s.Caps, s.NoNewPrivs, s.Seccomp = nums, true, true
		s.UID, s.GID = uid, gid
		warns = append(warns, w...)
	}
	s.Caps, warns = availableCaps(s.Caps, warns)
	s.Mounts = mountTable(l, p)
	if !priv {
		s.Masked = []string{"/etc/sv", "/proc/kcore", "/proc/latency_stats", "/proc/sched_debug",
			"/proc/timer_list", "/proc/timer_stats", "/sys/firmware"}
		s.ReadOnly = []string{"/proc/asound", "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
	}
	nofile := uint64(DefaultOpenFiles)
	if p.Limits.OpenFiles != nil {
		nofile = *p.Limits.OpenFiles
	}
	s.Rlimits = append(s.Rlimits, Rlimit{Resource: unix.RLIMIT_NOFILE, Cur: nofile, Max: nofile})
	if c := p.Limits.CoreFileSize; c != nil {
		s.Rlimits = append(s.Rlimits, Rlimit{Resource: unix.RLIMIT_CORE, Cur: *c, Max: *c})
	}
	warns = append(warns, clampRlimits(s.Rlimits)...)
	if rel, err := filepath.Rel("/tmp", l.Root()); err == nil && !strings.HasPrefix(rel, "..") {
		warns = append(warns, "the BOSH root "+l.Root()+" lies under /tmp, which the process sees as its own tmp directory")
	}
	return s, warns, nil
}

// clampRlimits lowers limits above vigil's own hard limits when vigil lacks
// CAP_SYS_RESOURCE (as in some containers), which raising them needs.
func clampRlimits(rs []Rlimit) []string {
	if HasCapability(capNumbers()["SYS_RESOURCE"]) {
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
	held := effectiveCaps()
	var kept []int
	var missing []string
	for _, c := range caps {
		if held&(1<<uint(c)) != 0 {
			kept = append(kept, c)
			continue
		}
		for n, num := range capNumbers() {
			if num == c {
				missing = append(missing, n)
			}
		}
	}
	if len(missing) > 0 {
		warns = append(warns, "vigil itself lacks, so cannot grant, the capabilities "+strings.Join(missing, ", "))
	}
	return kept, warns
}

// HasCapability reports whether the calling process has capability c in
// its effective set.
func HasCapability(c int) bool { return effectiveCaps()&(1<<uint(c)) != 0 }

// effectiveCaps is the calling thread's effective capability set (capget);
// empty when it cannot be read.
func effectiveCaps() uint64 {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return 0
	}
	return uint64(data[0].Effective) | uint64(data[1].Effective)<<32
}

// RootDir is the host directory each process's root is assembled on (in
// the process's own mount namespace, so they do not collide).
func RootDir(l boshpath.Layout) string { return filepath.Join(l.Root(), "data", "vigil", "rootfs") }

// identity resolves the process's user key ("NAME[:GROUP]"), or the default
// user, to ids. A missing user is a warning and the process runs as nobody.
func identity(spec, def string) (uid, gid int, warns []string) {
	if spec == "" {
		spec = def
	}
	if spec == "" {
		spec = DefaultUser
	}
	name, group, _ := strings.Cut(spec, ":")
	u, err := user.Lookup(name)
	if err != nil {
		return fallbackUID, fallbackUID, []string{fmt.Sprintf("user %s: %v; running as uid and gid %d instead", name, err, fallbackUID)}
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	if group != "" {
		g, err := user.LookupGroup(group)
		if err != nil {
			warns = append(warns, fmt.Sprintf("group %s: %v; using %s's primary group", group, err, name))
		} else {
			gid, _ = strconv.Atoi(g.Gid)
		}
	}
	return uid, gid, warns
}

// mountTable is bpm's mount table (reference 3.2) under the layout root,
// with the shallowest destinations first and the first mount of a
// destination winning.
func mountTable(l boshpath.Layout, p job.Process) []Mount {
	priv := p.Unsafe.Privileged
	var ms []Mount
	add := func(m Mount) {
		if m.Kind == KindBind || m.Kind == KindSymlink {
			m.NoDev = true
			m.NoSuid = !priv
		}
		ms = append(ms, m)
	}
	add(Mount{Kind: KindProc, Dest: "/proc", NoSuid: true, NoExec: true, NoDev: true})
	add(Mount{Kind: KindTmpfs, Dest: "/dev", NoSuid: true, NoExec: true, Data: "mode=755"})
	add(Mount{Kind: KindDevpts, Dest: "/dev/pts", NoSuid: true, NoExec: true, Data: "newinstance,ptmxmode=0666,mode=0620,gid=5"})
	add(Mount{Kind: KindTmpfs, Dest: "/dev/shm", NoSuid: true, NoExec: true, NoDev: true, Data: "mode=1777"})
	add(Mount{Kind: KindMqueue, Dest: "/dev/mqueue", NoSuid: true, NoExec: true, NoDev: true})
	add(Mount{Kind: KindSysfs, Dest: "/sys", ReadOnly: true, NoSuid: true, NoExec: true, NoDev: true})
	for _, d := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		ms = append(ms, Mount{Kind: KindBind, Source: "/dev/" + d, Dest: "/dev/" + d, NoSuid: true, NoExec: true})
	}
	for dest, target := range map[string]string{"/dev/ptmx": "pts/ptmx", "/dev/fd": "/proc/self/fd",
		"/dev/stdin": "/proc/self/fd/0", "/dev/stdout": "/proc/self/fd/1", "/dev/stderr": "/proc/self/fd/2"} {
		ms = append(ms, Mount{Kind: KindSymlink, Source: target, Dest: dest})
	}
	for _, d := range []string{"/bin", "/etc", "/lib", "/lib64", "/sbin", "/usr"} {
		if fi, err := os.Lstat(d); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			if target, err := os.Readlink(d); err == nil {
				ms = append(ms, Mount{Kind: KindSymlink, Source: target, Dest: d})
			}
		} else if err == nil {
			add(Mount{Kind: KindBind, Source: d, Dest: d, ReadOnly: true})
		}
	}
	for _, d := range []string{"/run/resolvconf", "/run/systemd/resolve"} {
		if _, err := os.Stat(d); err == nil {
			add(Mount{Kind: KindBind, Source: d, Dest: d, ReadOnly: true, NoExec: true})
		}
	}
	// The job's directories are where bpm puts them, below /var/vcap,
	// whatever the root; under another root they are at their own paths
	// too, for a bpm.yml written with those.
	boshDir := func(m Mount) {
		add(m)
		if in := l.Inside(m.Dest); in != m.Dest {
			m.Dest = in
			add(m)
		}
	}
	tmp := l.TmpDir(p.Job)
	for _, d := range []string{"/tmp", "/var/tmp"} {
		add(Mount{Kind: KindBind, Source: tmp, Dest: d, NoExec: true})
	}
	boshDir(Mount{Kind: KindBind, Source: tmp, Dest: tmp, NoExec: true})
	pkgs := filepath.Join(l.Root(), "data", "packages")
	for _, d := range []string{pkgs, l.PackagesDir(), l.JobDir(p.Job)} {
		if _, err := os.Stat(d); err == nil {
			boshDir(Mount{Kind: KindBind, Source: d, Dest: d, ReadOnly: true})
		}
	}
	boshDir(Mount{Kind: KindBind, Source: l.LogDir(p.Job), Dest: l.LogDir(p.Job), NoExec: true})
	if p.EphemeralDisk {
		boshDir(Mount{Kind: KindBind, Source: l.DataDir(p.Job), Dest: l.DataDir(p.Job), NoExec: true})
	}
	if p.PersistentDisk {
		boshDir(Mount{Kind: KindBind, Source: l.StoreDir(p.Job), Dest: l.StoreDir(p.Job), NoExec: true})
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

func volumeMount(path string, v job.Volume) Mount {
	return Mount{Kind: KindBind, Source: path, Dest: path, ReadOnly: !v.Writable, NoExec: !v.AllowExecutions, Shared: v.Shared}
}

// underAny reports whether path is at or below the destination of a BOSH
// default mount (bpm drops such unrestricted volumes). The system mounts
// and the identity mounts of the OS directories do not count.
func underAny(path string, ms []Mount) bool {
	for _, m := range ms {
		if m.Kind != KindBind || !strings.HasPrefix(m.Source, "/") || strings.HasPrefix(m.Dest, "/dev") {
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
func sortMounts(ms []Mount) []Mount {
	seen := map[string]bool{}
	var out []Mount
	for _, m := range ms {
		if !seen[m.Dest] {
			seen[m.Dest] = true
			out = append(out, m)
		}
	}
	slices.SortStableFunc(out, func(a, b Mount) int { return depth(a.Dest) - depth(b.Dest) })
	return out
}

func depth(p string) int { return strings.Count(filepath.Clean(p), "/") }

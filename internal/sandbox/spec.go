// Package sandbox gives a bpm process the environment bpm builds with runc,
// without runc: fresh mount, IPC and UTS namespaces (the PID namespace is the
// init's, see procinit), a root made only of bind mounts, the vcap user with
// no capabilities, no_new_privs, a seccomp allowlist, rlimits and a cgroup.
//
// The work is split in two. Build runs in the daemon: it turns a job.Process
// into a Spec (a plain value carried in the init's launch) and prepares what
// must exist on the host. Exec runs in a short-lived helper process that the
// init starts in the new namespaces as the executable's place holder: it
// joins the cgroup, assembles the root, pivots into it, drops privileges,
// installs the seccomp filter and finally execs the executable in place.
package sandbox

// Spec is everything the helper needs to confine and exec the executable.
type Spec struct {
	Root     string   `json:"root"`                // host directory the new root is assembled on (a tmpfs is mounted there)
	RootSuid bool     `json:"root_suid,omitempty"` // the root's tmpfs honours set-user-ID bits (privileged: bpm drops nosuid from every mount); else nosuid
	Mounts   []Mount  `json:"mounts"`              // in order: shallower destinations first
	Masked   []string `json:"masked"`              // paths hidden inside the root
	ReadOnly []string `json:"read_only"`           // paths made read-only inside the root

	UID        int      `json:"uid"`
	GID        int      `json:"gid"`
	OwnerUID   int      `json:"-"` // owner of the job's writable directories: the user, or vcap when privileged
	OwnerGID   int      `json:"-"`
	Caps       []int    `json:"caps"` // capability numbers kept in every set (ambient too)
	NoNewPrivs bool     `json:"no_new_privs"`
	Seccomp    bool     `json:"seccomp"`
	Rlimits    []Rlimit `json:"rlimits"`
	Cgroups    []string `json:"cgroups"` // cgroup directories the executable joins

	Path string   `json:"path"` // the executable, as seen inside the root
	Args []string `json:"args"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`

	// Host runs the executable in the helper's starter's namespaces, on
	// the host's file system (vigil's isolation: host): no new namespace,
	// no root (Root, Mounts, Masked and ReadOnly are unused); the cgroup,
	// rlimits, identity, capabilities and no_new_privs still apply.
	Host bool `json:"host,omitempty"`
}

// Namespaces are the clone flags the helper is created with:
// CloneFlags, or none for a Host spec.
func (s *Spec) Namespaces() uintptr {
	if s.Host {
		return 0
	}
	return CloneFlags
}

// Mount kinds.
const (
	KindBind    = "bind"    // recursive bind of Source (a directory or a file)
	KindSymlink = "symlink" // Dest becomes a symlink to Source
	KindProc    = "proc"
	KindSysfs   = "sysfs"
	KindTmpfs   = "tmpfs"
	KindDevpts  = "devpts"
	KindMqueue  = "mqueue"
)

// Mount is one entry of the root's mount table. Dest is the path inside the
// new root.
type Mount struct {
	Kind     string `json:"kind"`
	Source   string `json:"source,omitempty"`
	Dest     string `json:"dest"`
	ReadOnly bool   `json:"ro,omitempty"`
	NoExec   bool   `json:"noexec,omitempty"`
	NoSuid   bool   `json:"nosuid,omitempty"` // false on a bind clears a nosuid its source's mount has (privileged)
	NoDev    bool   `json:"nodev,omitempty"`
	Data     string `json:"data,omitempty"`   // file-system options, e.g. mode=755
	Shared   bool   `json:"shared,omitempty"` // propagation shared inside the root
}

// Rlimit is one resource limit, applied with soft = Cur and hard = Max.
type Rlimit struct {
	Resource int    `json:"resource"`
	Cur      uint64 `json:"cur"`
	Max      uint64 `json:"max"`
}

package launch

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/sandbox"
	"github.com/vigil-bosh/vigil/internal/sandbox/cgroup"
	"github.com/vigil-bosh/vigil/internal/sandbox/setup"
)

// Environment is what a machine (a container) offers the isolation, read
// once when vigil starts: Problems says what it lacks, for every process
// at once, and what to do about it.
type Environment struct {
	UID         int
	SysAdmin    bool     // CAP_SYS_ADMIN is effective
	ReadOnly    []string // cgroup hierarchies mounted read-only
	NoVcap      bool     // the default user does not exist
	Unwritable  []string // directories of the root vigil cannot write
	DefaultUser string
}

// ReadEnvironment reads the environment of a daemon on l whose processes
// run as user by default ("" is vcap).
func ReadEnvironment(l boshpath.Layout, defaultUser string) Environment {
	if defaultUser == "" {
		defaultUser = setup.DefaultUser
	}
	e := Environment{UID: os.Geteuid(), SysAdmin: sandbox.HasCapability(unix.CAP_SYS_ADMIN), DefaultUser: defaultUser}
	e.ReadOnly, _ = cgroup.ReadOnly()
	var unknown user.UnknownUserError
	if _, err := user.Lookup(defaultUser); errors.As(err, &unknown) {
		e.NoVcap = true
	}
	for _, d := range []string{filepath.Join(l.Root(), "sys"), filepath.Join(l.Root(), "data")} {
		if err := writable(d); err != nil {
			e.Unwritable = append(e.Unwritable, fmt.Sprintf("%s (%v)", d, err))
		}
	}
	return e
}

// writable reports why dir, or the nearest of its parents that exists,
// cannot be written into; nil when it can.
func writable(dir string) error {
	for {
		err := unix.Access(dir, unix.W_OK)
		if !errors.Is(err, os.ErrNotExist) || filepath.Dir(dir) == dir {
			return err
		}
		dir = filepath.Dir(dir)
	}
}

// Problems says, in one sentence each, what the environment leaves
// unenforced or impossible, and what to add; nothing when it has all that
// bpm's isolation needs.
func (e Environment) Problems() []string {
	var out []string
	if len(e.Unwritable) > 0 {
		out = append(out, "vigil cannot write "+strings.Join(e.Unwritable, ", ")+
			": its socket, the jobs' logs and data go there (a read-only root filesystem? mount a writable volume, an emptyDir in a pod, at each)")
	}
	switch {
	case e.UID != 0:
		out = append(out, fmt.Sprintf("vigil runs as uid %d, not root: every process runs as that user without bpm's isolation "+
			"(namespaces, mounts, user, capabilities, seccomp) or cgroup limits of its own; the container's own securityContext and limits apply", e.UID))
		return out
	case !e.SysAdmin:
		out = append(out, "vigil lacks CAP_SYS_ADMIN: every process runs as root in this container without bpm's isolation "+
			"(namespaces, mounts, user, capabilities, seccomp) or cgroup limits of its own; the container's own limits apply "+
			"(bpm's sandbox needs SYS_ADMIN added, with unconfined seccomp and AppArmor profiles, or privileged: true)")
		return out
	}
	if len(e.ReadOnly) > 0 {
		out = append(out, "the cgroup hierarchies "+mountList(e.ReadOnly)+" are read-only (a container's own cgroup): "+
			"every process stays in vigil's cgroup, under the container's limits; limits.memory, limits.processes and the CPU limits of bpm.yml "+
			"are not enforced and OOM kills are not recorded (privileged: true, or a runtime that delegates the cgroup, gives each process its own)")
	}
	if e.NoVcap {
		out = append(out, fmt.Sprintf("there is no user %s, the identity of every process without a user: key: such processes cannot start; "+
			"add it (/etc/passwd: %s:x:1000:1000::/home/%s:/bin/sh, /etc/group: %s:x:1000:; vigil image adds both)",
			e.DefaultUser, e.DefaultUser, e.DefaultUser, e.DefaultUser))
	}
	return out
}

// mountList names mount points shortly: /sys/fs/cgroup/{cpu,memory} when
// they share a parent.
func mountList(points []string) string {
	parent := filepath.Dir(points[0])
	var names []string
	for _, p := range points {
		if filepath.Dir(p) != parent {
			return strings.Join(points, ", ")
		}
		names = append(names, filepath.Base(p))
	}
	if len(names) == 1 {
		return points[0]
	}
	return parent + "/{" + strings.Join(names, ",") + "}"
}

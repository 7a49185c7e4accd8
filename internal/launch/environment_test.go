package launch

import (
	"strings"
	"testing"
)

// TestEnvironmentProblems: each lack of a container is said once, with
// what applies instead and what to add; a full environment says nothing.
func TestEnvironmentProblems(t *testing.T) {
	full := Environment{UID: 0, SysAdmin: true, DefaultUser: "vcap"}
	for _, tt := range []struct {
		name string
		env  func(e Environment) Environment
		want []string
	}{
		{"full", func(e Environment) Environment { return e }, nil},
		{"restricted", func(e Environment) Environment { e.UID, e.SysAdmin, e.NoVcap = 1000, false, true; return e },
			[]string{"vigil runs as uid 1000, not root: every process runs as that user without bpm's isolation"}},
		{"baseline", func(e Environment) Environment {
			e.SysAdmin, e.ReadOnly = false, []string{"/sys/fs/cgroup/memory"}
			return e
		},
			[]string{"vigil lacks CAP_SYS_ADMIN: every process runs as root in this container"}},
		{"read-only cgroups and no vcap", func(e Environment) Environment {
			e.ReadOnly, e.NoVcap = []string{"/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids"}, true
			return e
		}, []string{"the cgroup hierarchies /sys/fs/cgroup/{memory,pids} are read-only (a container's own cgroup): every process stays in vigil's cgroup, under the container's limits",
			"there is no user vcap, the identity of every process without a user: key: such processes cannot start; add it (/etc/passwd: vcap:x:1000:1000::/home/vcap:/bin/sh, /etc/group: vcap:x:1000:; vigil image adds both)"}},
		{"read-only root", func(e Environment) Environment {
			e.Unwritable = []string{"/var/vcap/sys (read-only file system)"}
			return e
		},
			[]string{"vigil cannot write /var/vcap/sys (read-only file system): its socket, the jobs' logs and data go there (a read-only root filesystem? mount a writable volume, an emptyDir in a pod, at each)"}},
	} {
		got := tt.env(full).Problems()
		if len(got) != len(tt.want) {
			t.Errorf("%s: %q", tt.name, got)
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], tt.want[i]) {
				t.Errorf("%s: %q\nwant %q...", tt.name, got[i], tt.want[i])
			}
		}
	}
}

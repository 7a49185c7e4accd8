package proc

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/vigil-bosh/vigil/procinit"
)

// EnterArgs returns the command prefix that runs a program inside the
// confinement of the executable with host pid exe, as runc exec does for
// bpm: nsenter into its mount, PID, IPC and UTS namespaces, its root and
// working directory, as its uid and gid. It returns nil when exe runs in our
// own mount namespace (not isolated): then a program runs as it is.
func EnterArgs(exe int) []string {
	theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", exe))
	ours, err2 := os.Readlink("/proc/self/ns/mnt")
	if err != nil || err2 != nil || theirs == ours {
		return nil
	}
	uid, gid := owner(exe)
	return []string{"nsenter", "--target", strconv.Itoa(exe), "--mount", "--pid", "--ipc", "--uts",
		"--root", "--wd", "--setuid", uid, "--setgid", gid, "--"}
}

// ExecutableOf returns the host pid of the executable below the init with
// host pid init, or 0.
func ExecutableOf(init int) int {
	if kids := procinit.ChildrenOf(init); len(kids) > 0 {
		return kids[0]
	}
	return 0
}

// Enter is EnterArgs for this runner's running executable: nil when none
// runs or it is not isolated.
func (r *Runner) Enter() []string {
	pr := r.current.Load()
	if pr == nil {
		return nil
	}
	if exe := pr.execPIDValue(); exe > 0 {
		return EnterArgs(exe)
	}
	return nil
}

// owner returns the real uid and gid of pid, from /proc/PID/status.
func owner(pid int) (uid, gid string) {
	uid, gid = "0", "0"
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return uid, gid
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 1 && f[0] == "Uid:":
			uid = f[1]
		case len(f) > 1 && f[0] == "Gid:":
			gid = f[1]
		}
	}
	return uid, gid
}

package cgroup

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReadOnlyHierarchy: where the cgroup hierarchies are mounted
// read-only (a container without privileges, whose own cgroup the kubelet
// owns), Create makes no group and fails nothing: it warns that the limits
// are not enforced, naming the read-only hierarchy, and the process runs
// in the caller's group. It runs itself again in a mount namespace of its
// own where every cgroup mount is remounted read-only.
func TestReadOnlyHierarchy(t *testing.T) {
	if os.Getenv("VIGIL_CGROUP_RO") == "1" {
		readOnlyChild(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("remounting the cgroup hierarchies needs root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare from util-linux")
	}
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", os.Args[0], "-test.run", "^TestReadOnlyHierarchy$", "-test.v")
	cmd.Env = append(os.Environ(), "VIGIL_CGROUP_RO=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestReadOnlyHierarchy") {
		t.Fatalf("in a namespace with read-only cgroups: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// readOnlyChild remounts every cgroup hierarchy read-only, then creates a
// group with limits.
func readOnlyChild(t *testing.T) {
	unified, v1, err := mounts()
	if err != nil {
		t.Fatal(err)
	}
	points := []string{}
	if unified != "" {
		points = append(points, unified)
	}
	for _, p := range v1 {
		points = append(points, p)
	}
	if len(points) == 0 {
		t.Skip("no cgroup hierarchy mounted")
	}
	for _, p := range points {
		if err := unix.Mount("", p, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
			t.Fatalf("remount %s read-only: %v", p, err)
		}
	}
	mem, pids := uint64(64<<20), int64(7)
	g, warns, err := Create("test-ro/job/proc", Limits{Memory: &mem, Pids: &pids})
	if err != nil || g != nil {
		t.Fatalf("Create on read-only hierarchies: group %v, error %v", g, err)
	}
	all := strings.Join(warns, "\n")
	for _, want := range []string{"limits.memory is not enforced", "limits.processes is not enforced", "is read-only (a container's own cgroup: its limits apply to every process)"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
	t.Logf("warnings:\n%s", all)
}

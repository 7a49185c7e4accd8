// Package guest holds the scenarios the VM rig runs inside its guest
// (systemd as PID 1, cgroup v2). Outside the rig every test skips: they
// change the machine (units, /var/vcap) and need that guest.
package guest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// inGuest skips unless the test runs inside the VM rig, as root.
func inGuest(t *testing.T) {
	t.Helper()
	if os.Getenv("VIGIL_VM_GUEST") != "1" || os.Geteuid() != 0 {
		t.Skip("runs inside the VM rig: go test -count=1 ./internal/vmrig -vm")
	}
}

// bin is a binary the host built into the guest's copy of the share.
func bin(name string) string { return filepath.Join(os.Getenv("VIGIL_VM_BIN"), name) }

// TestGuestIsTheTarget checks the guest is the machine the scenarios
// are about: systemd as PID 1 and only the unified hierarchy, with the
// controllers vigil's limits use.
func TestGuestIsTheTarget(t *testing.T) {
	inGuest(t)
	comm, err := os.ReadFile("/proc/1/comm")
	if err != nil || strings.TrimSpace(string(comm)) != "systemd" {
		t.Fatalf("PID 1 is %q (%v), want systemd", comm, err)
	}
	mounts, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[2] == "cgroup" {
			t.Fatalf("a cgroup v1 hierarchy is mounted: %s", line)
		}
	}
	ctrl, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"memory", "pids", "cpu", "cpuset"} {
		if !strings.Contains(" "+string(ctrl)+" ", " "+c+" ") {
			t.Errorf("controller %s missing from %q", c, ctrl)
		}
	}
	t.Logf("vmrig: PID 1 systemd, cgroup2 only, controllers %s", strings.TrimSpace(string(ctrl)))
}

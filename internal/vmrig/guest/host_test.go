package guest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vigil-bosh/vigil/control"
)

// sdHost: a process under isolation: host, on the systemd back end, runs
// in the host's namespaces (its pid is the host's, its mount namespace
// systemd's), as vcap with its capability and no seccomp filter, pinned
// to the CPU and memory node its unit allows, held to its unit's memory
// limit; a stop takes it.
func sdHost(t *testing.T, sock string) {
	p := actOn(t, sock, control.ActionStart, "side")
	if p.Isolation != "host" {
		t.Errorf("status isolation %q, want host", p.Isolation)
	}
	exe := execOf(t, p.PID)
	st := procStatus(t, exe)
	want := map[string]string{"NSpid": strconv.Itoa(exe), "Cpus_allowed_list": "1", "Mems_allowed_list": "0",
		"Uid": "1000 1000 1000 1000", "CapEff": "0000000000000400", "CapBnd": "0000000000000400", "Seccomp": "0", "NoNewPrivs": "1"}
	for _, k := range []string{"NSpid", "Uid", "Cpus_allowed_list", "Mems_allowed_list", "CapEff", "CapBnd", "Seccomp", "NoNewPrivs"} {
		t.Logf("vmrig: side/side (pid %d) /proc status %s: %s", exe, k, st[k])
		if st[k] != want[k] {
			t.Errorf("%s %q, want %q", k, st[k], want[k])
		}
	}
	ours, _ := os.Readlink("/proc/1/ns/mnt")
	if theirs, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", exe)); theirs != ours {
		t.Errorf("mount namespace %s, want the host's (systemd's) %s", theirs, ours)
	}
	cg := filepath.Join("/sys/fs/cgroup", show(t, "vigil-side-side.service", "ControlGroup")[0])
	for file, v := range map[string]string{"memory.max": "67108864", "cpuset.cpus": "1", "cpuset.mems": "0", "cpu.weight": "50"} {
		got := readTrim(t, filepath.Join(cg, file))
		t.Logf("vmrig: side/side %s: %s", filepath.Join(cg, file), got)
		if got != v {
			t.Errorf("%s %q, want %q", file, got, v)
		}
	}
	if procs := readTrim(t, filepath.Join(cg, "cgroup.procs")); !strings.Contains(" "+strings.ReplaceAll(procs, "\n", " ")+" ", " "+strconv.Itoa(exe)+" ") {
		t.Errorf("the executable %d is not in its unit's cgroup %s: %q", exe, cg, procs)
	}
	if p := actOn(t, sock, control.ActionStop, "side"); p.State != "stopped" {
		t.Fatalf("vigil stop side: %+v", p)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", exe)); err == nil {
		t.Errorf("the executable %d outlived the stop", exe)
	}
}

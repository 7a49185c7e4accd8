package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestHostIsolation runs a process under isolation: host in the native
// daemon: it runs in the host's PID and mount namespaces, pinned to the
// CPU and memory node asked, its status says it is unisolated, its exec
// probe runs on the host as its user (it is ready only so: in a sandbox
// /root is not there, on the host as root the uid is 0; and once the
// child below is started), its cgroup holds its limits, and a stop takes
// its whole tree, a child in a session of its own included.
func TestHostIsolation(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // the daemon needs no helper program
	r := isolatedRoot(t)
	l := r.Layout
	cpu := testproc.LastCPU(t)
	child := l.TmpDir("side") + "/child"
	r.Config("side", `processes:
- name: side
  executable: /bin/sh
  args: ["-c", "setsid sleep 1000 & echo $! > `+child+`; exec sleep 1000"]
  user: nobody
  isolation: host
  limits: {memory: 64M, cpuset: "`+cpu+`", cpuset_mems: "0", cpu_weight: 50, cpu_quota: 50}
  health:
    readiness:
      exec: [sh, -c, "test -d /root && test $(id -u) = 65534 && test -s `+child+`"]
      period: 50ms
`)
	d := runIsolated(t, r)
	ps := awaitReady(t, d, "side")
	if ps.Isolation != "host" {
		t.Errorf("status isolation %q, want host", ps.Isolation)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", ps.ExecPID))
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, _ := strings.Cut(line, ":")
		fields[k] = strings.TrimSpace(v)
	}
	want := map[string]string{"NSpid": strconv.Itoa(ps.ExecPID), "Cpus_allowed_list": cpu, "Mems_allowed_list": "0",
		"Uid": "65534\t65534\t65534\t65534", "Seccomp": "0", "CapEff": "0000000000000000"}
	for k, v := range want {
		if fields[k] != v {
			t.Errorf("%s: %q, want %q", k, fields[k], v)
		}
	}
	for _, k := range []string{"NSpid", "Uid", "Cpus_allowed_list", "Mems_allowed_list", "CapEff", "Seccomp"} {
		t.Logf("vmrig: daemon host isolation: /proc/%d/status %s: %s", ps.ExecPID, k, strings.Join(strings.Fields(fields[k]), " "))
	}
	limits := cgroupFilesOf(t, ps.ExecPID, "memory.max", "memory.limit_in_bytes", "cpuset.cpus", "cpuset.mems", "cpu.weight", "cpu.max")
	for file, v := range map[string]string{"memory.max": "67108864", "memory.limit_in_bytes": "67108864",
		"cpuset.cpus": cpu, "cpuset.mems": "0", "cpu.weight": "50", "cpu.max": "50000 100000"} {
		if got, ok := limits[file]; ok && got != v {
			t.Errorf("cgroup %s: %q, want %q", file, got, v)
		}
	}
	if limits["memory.max"] == "" && limits["memory.limit_in_bytes"] == "" {
		t.Errorf("no memory limit in the process's cgroup: %v", limits)
	}
	ours, _ := os.Readlink("/proc/self/ns/mnt")
	if theirs, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", ps.ExecPID)); theirs != ours {
		t.Errorf("mount namespace %s, want the host's %s", theirs, ours)
	}
	b, err := os.ReadFile(child)
	if err != nil {
		t.Fatal(err)
	}
	escaped, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if _, err := d.Act(context.Background(), control.ActionRequest{Action: control.ActionStop, Job: "side"}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", escaped)); err == nil && !strings.Contains(string(st), ") Z ") {
		t.Errorf("the child in a session of its own (%d) outlived the stop: %s", escaped, st)
	}
}

// cgroupFilesOf reads the files among names of the cgroups pid is in (from
// /proc/PID/cgroup: the unified one, or those of the v1 hierarchies), and
// logs each with its path.
func cgroupFilesOf(t *testing.T, pid int, names ...string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		dir := filepath.Join("/sys/fs/cgroup", f[2])
		if f[1] != "" {
			dir = filepath.Join("/sys/fs/cgroup", strings.Split(f[1], ",")[0], f[2])
		}
		for _, n := range names {
			if v, err := os.ReadFile(filepath.Join(dir, n)); err == nil {
				got[n] = strings.TrimSpace(string(v))
				t.Logf("vmrig: daemon host isolation: %s: %s", filepath.Join(dir, n), got[n])
			}
		}
	}
	return got
}

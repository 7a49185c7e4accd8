package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/vigil-bosh/vigil/internal/testproc"
	"github.com/vigil-bosh/vigil/job"
)

// TestHostIsolation: a process under isolation: host runs in the host's
// mount, PID, IPC and UTS namespaces (its pid is the host's, it sees the
// host's /proc and /tmp), as its user with its capabilities and
// no_new_privs but no seccomp filter, with its rlimits, its environment
// and working directory at the host's paths, and in a cgroup of its own
// holding its limits: pinned to the CPU and memory node asked. Under
// either init: the test binary, and the embedded vigil-init.
func TestHostIsolation(t *testing.T) {
	t.Run("vigil", func(t *testing.T) { testHostIsolation(t, "") })
	t.Run("vigil-init", func(t *testing.T) { testHostIsolation(t, embeddedInit(t)) })
}

func testHostIsolation(t *testing.T, init string) {
	s := newSandboxed(t)
	s.init = init
	l := s.layout
	hostTmp := fmt.Sprintf("/tmp/vigil-host-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"))
	t.Cleanup(func() { os.Remove(hostTmp) })
	p := s.process("host", "inspect", testproc.EnvWrite+"="+hostTmp+","+l.TmpDir("job")+"/x",
		testproc.EnvList+"=/proc/1", testproc.EnvHold+"=1")
	p.Isolation = job.IsolationHost
	p.Capabilities = []string{"NET_BIND_SERVICE"}
	mem, files := uint64(64<<20), uint64(4096)
	cpu := testproc.LastCPU(t)
	p.Limits.Memory, p.Limits.OpenFiles, p.Limits.CPUSet, p.Limits.CPUSetMems = &mem, &files, cpu, "0"
	_, pr := s.start(p)
	ev := next(t, pr)
	if !ev.Running {
		t.Fatalf("not running: %+v", ev)
	}
	see := s.see(nil)
	want := map[string]string{
		"CapEff": "0000000000000400", "CapPrm": "0000000000000400", "CapBnd": "0000000000000400",
		"CapAmb": "0000000000000400", "NoNewPrivs": "1", "Seccomp": "0", "groups": "0",
		"NSpid": strconv.Itoa(ev.ExecPID), "Cpus_allowed_list": cpu, "Mems_allowed_list": "0",
		"write " + hostTmp: "ok", "write " + l.TmpDir("job") + "/x": "ok", "nofile": "4096 4096", "unshare": "ok", // no seccomp filter refuses it
		"cwd": l.JobDir("job"), "env": l.TmpDir("job") + " " + l.DataDir("job") + " " + envValue(p.Environ(l), "PATH"),
	}
	for _, ns := range []string{"mnt", "pid", "ipc", "uts"} {
		own, _ := os.Readlink("/proc/self/ns/" + ns)
		want["ns/"+ns] = own
	}
	for k, v := range want {
		if see[k] != v {
			t.Errorf("%s: got %q, want %q", k, see[k], v)
		}
	}
	ids := strings.Fields(see["ids"])
	if len(ids) != 4 || ids[0] != strconv.Itoa(s.uid) || ids[2] != strconv.Itoa(ev.ExecPID) || ids[3] != strconv.Itoa(pr.PID()) {
		t.Errorf("ids (uid gid pid ppid) %v: want uid %d, the host's pid %d, its init %d", ids, s.uid, ev.ExecPID, pr.PID())
	}
	if !strings.Contains(see["list /proc/1"], "status") {
		t.Errorf("the host's /proc/1 lists %q", see["list /proc/1"])
	}
	if b, err := os.ReadFile(hostTmp); err != nil || string(b) != "x" {
		t.Errorf("the process's /tmp is not the host's: %q %v", b, err)
	}
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", ev.ExecPID))
	for _, line := range statusLines(string(status), "Uid", "NSpid", "Cpus_allowed_list", "Mems_allowed_list",
		"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp") {
		t.Logf("vmrig: host isolation: /proc/%d/status %s", ev.ExecPID, strings.Join(strings.Fields(line), " "))
	}
	limits := cgroupFiles(t, pr.(*Process), "cpuset.cpus", "cpuset.mems", "memory.limit_in_bytes", "memory.max")
	for f, v := range map[string]string{"cpuset.cpus": cpu, "cpuset.mems": "0", "memory.limit_in_bytes": "67108864", "memory.max": "67108864"} {
		if got, ok := limits[f]; ok && got != v {
			t.Errorf("cgroup %s: got %q, want %q", f, got, v)
		}
	}
	if _, ok := limits["cpuset.cpus"]; !ok {
		t.Errorf("no cpuset.cpus in the process's cgroup: %v", limits)
	}
	s.rep.Expect(t, "ready")
	pr.Signal(syscall.SIGTERM)
	if e := s.exitOf(pr); !e.Success() {
		t.Fatalf("exit %v", e)
	}
}

// envValue is the value of key in env (KEY=VALUE strings), or "".
func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// statusLines picks the lines of a /proc/PID/status that start with keys.
func statusLines(status string, keys ...string) []string {
	var out []string
	for _, line := range strings.Split(status, "\n") {
		k, _, _ := strings.Cut(line, ":")
		for _, want := range keys {
			if k == want {
				out = append(out, line)
			}
		}
	}
	return out
}

// cgroupFiles reads the files of pr's cgroup that exist among names, and
// logs them with their paths.
func cgroupFiles(t *testing.T, pr *Process, names ...string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, d := range cgroupDirs(t, pr) {
		for _, n := range names {
			if b, err := os.ReadFile(filepath.Join(d, n)); err == nil {
				got[n] = strings.TrimSpace(string(b))
				t.Logf("vmrig: host isolation: %s: %s", filepath.Join(d, n), got[n])
			}
		}
	}
	return got
}

// TestHostIsolationOOMKill: limits.memory holds a process in the host's
// namespaces too: past it, the OOM killer ends it, and it is recorded.
func TestHostIsolationOOMKill(t *testing.T) {
	s := newSandboxed(t)
	p := s.process("oom", "alloc", testproc.EnvAlloc+"=1024")
	p.Isolation = job.IsolationHost
	mem := uint64(64 << 20)
	p.Limits.Memory = &mem
	_, pr := s.start(p)
	s.rep.Expect(t, "allocating")
	if e := s.exitOf(pr); !e.OOM || e.Signal != syscall.SIGKILL {
		t.Fatalf("exit %+v (%s), want an OOM kill", e, e)
	}
}

// TestHostIsolationKillsTree: in the host's PID namespace there is no
// namespace to take the process's tree down with it: a stop ends the
// executable, and the child it left, which ignores TERM, goes too.
func TestHostIsolationKillsTree(t *testing.T) {
	s := newSandboxed(t)
	p := s.process("tree", "grandchild")
	p.Isolation = job.IsolationHost
	_, pr := s.start(p)
	grand := s.rep.Expect(t, "grandchild").Fields()[0]
	if ev := next(t, pr); !ev.Running {
		t.Fatalf("not running: %v", ev.Exit)
	}
	s.rep.Expect(t, "ready") // the child's and the grandchild's: TERM is handled,
	s.rep.Expect(t, "ready") // and ignored, from here on
	if err := pr.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	s.exitOf(pr)
	for range pr.Events() {
	}
	if st, err := os.ReadFile("/proc/" + itoa(grand) + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
		t.Errorf("the grandchild %d outlived the stop: %s", grand, st)
	}
}

package systemd

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestExecHostIsolation: `vigil exec`, a unit's ExecStart, runs a process
// under isolation: host in the unit's namespaces (here the test's: its pid
// is the host's, its mount namespace ours), as its user with no
// capability, and its stop (systemd's KillSignal) ends it through the
// ladder with the executable's status. systemd owns the cgroup and its
// limits (the unit's, TestHostIsolationUnit; the VM rig checks them).
func TestExecHostIsolation(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("isolation needs root")
	}
	root := testproc.SandboxRoot(t, "vigil-exec-host-")
	os.Chmod(root, 0o755)
	l, err := boshpath.New(root)
	if err != nil {
		t.Fatal(err)
	}
	seen := filepath.Join(l.TmpDir("side"), "seen")
	cfg := l.BPMConfig("side")
	os.MkdirAll(filepath.Dir(cfg), 0o755)
	os.WriteFile(cfg, []byte(`processes:
- name: side
  executable: /bin/sh
  args: ["-c", "{ echo pid $$; readlink /proc/self/ns/mnt; grep -E '^(NSpid|Uid|CapEff|Seccomp)' /proc/$$/status; } > `+seen+`.new && mv `+seen+`.new `+seen+` && exec sleep 1000"]
  user: nobody
  isolation: host
`), 0o644)
	self, _ := os.Executable()
	sigs := make(chan os.Signal, 1)
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, err := Exec(context.Background(), ExecConfig{Layout: l, Job: "side", Proc: "side", Init: self,
			InitEnv: []string{"GORACE=" + testproc.NoRaceExitDelay}, Signals: sigs})
		done <- result{code, err}
	}()
	testproc.WaitUntil(t, l.TmpDir("side"), func() bool { _, err := os.Stat(seen); return err == nil })
	b, _ := os.ReadFile(seen)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	ours, _ := os.Readlink("/proc/self/ns/mnt")
	fields := map[string]string{}
	for _, line := range lines[2:] {
		k, v, _ := strings.Cut(line, ":")
		fields[k] = strings.Join(strings.Fields(v), " ")
	}
	pid := strings.TrimPrefix(lines[0], "pid ")
	if _, err := strconv.Atoi(pid); err != nil || fields["NSpid"] != pid {
		t.Errorf("pid %s, NSpid %q: want one pid, the host's", pid, fields["NSpid"])
	}
	if lines[1] != ours || fields["Uid"] != "65534 65534 65534 65534" || fields["CapEff"] != "0000000000000000" || fields["Seccomp"] != "0" {
		t.Errorf("the process saw:\n%s\nwant mount namespace %s, uid 65534, no capability, no seccomp filter", b, ours)
	}
	sigs <- syscall.SIGTERM
	if r := <-done; r.err != nil || r.code != 128+int(syscall.SIGTERM) {
		t.Fatalf("vigil exec ended with %d, %v; want 143 (the ladder's TERM)", r.code, r.err)
	}
}

package container

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestContainerHostIsolation: `vigil container` accepts a process under
// isolation: host and runs it in the container's own namespaces (PID,
// mount, UTS, IPC: its pid is the container's, not one of a namespace of
// its own), as its user, pinned to the CPU asked; its status says it is
// unisolated; SIGTERM stops it and the container exits 0.
func TestContainerHostIsolation(t *testing.T) {
	needUnshare(t)
	bin := buildVigil(t)
	root := testproc.SandboxRoot(t, "vigil-container-host-") // its user must reach its TMPDIR
	os.Chmod(root, 0o755)
	seen := filepath.Join(root, "data", "side", "tmp", "seen")
	cpu := testproc.LastCPU(t)
	cfg := filepath.Join(root, "jobs", "side", "config", "bpm.yml")
	os.MkdirAll(filepath.Dir(cfg), 0o755)
	os.WriteFile(cfg, []byte(`processes:
- name: side
  executable: /bin/sh
  args: ["-c", "{ echo pid $$; readlink /proc/self/ns/pid /proc/self/ns/mnt /proc/self/ns/uts; grep -E '^(NSpid|Uid|Cpus_allowed_list)' /proc/$$/status; } > `+seen+`.new && mv `+seen+`.new `+seen+` && exec sleep 1000"]
  user: nobody
  isolation: host
  limits: {memory: 64M, cpuset: "`+cpu+`"}
`), 0o644)
	cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "--uts", "--ipc", bin, "container", "--root", root, "--grace", "10s")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killNamespace(t, cmd)
	testproc.WaitUntil(t, filepath.Dir(seen), func() bool { _, err := os.Stat(seen); return err == nil })
	reaper := childOf(t, cmd.Process.Pid) // vigil, PID 1 of the container
	b, _ := os.ReadFile(seen)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 7 {
		t.Fatalf("the process saw:\n%s", b)
	}
	for i, ns := range []string{"pid", "mnt", "uts"} {
		if want, _ := os.Readlink("/proc/" + strconv.Itoa(reaper) + "/ns/" + ns); lines[1+i] != want {
			t.Errorf("%s namespace %s, want the container's %s", ns, lines[1+i], want)
		}
	}
	fields := map[string]string{}
	for _, line := range lines[4:] {
		k, v, _ := strings.Cut(line, ":")
		fields[k] = strings.Join(strings.Fields(v), " ")
	}
	// NSpid, read in the container's /proc: its pid there (the one $$
	// names), and none of a namespace of its own.
	if f := fields["NSpid"]; f != strings.TrimPrefix(lines[0], "pid ") {
		t.Errorf("NSpid %q, want the container's pid alone (%s)", f, lines[0])
	}
	if fields["Uid"] != "65534 65534 65534 65534" || fields["Cpus_allowed_list"] != cpu {
		t.Errorf("Uid %q, Cpus_allowed_list %q: want nobody, pinned to %s", fields["Uid"], fields["Cpus_allowed_list"], cpu)
	}
	client := control.NewClient(filepath.Join(root, "sys", "run", "vigil", "vigil.sock"))
	st, err := client.Status(context.Background())
	if err != nil || len(st.Processes) != 1 || st.Processes[0].Isolation != "host" {
		t.Fatalf("status %+v %v: want side/side, isolation host", st, err)
	}
	syscall.Kill(reaper, syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("container exited with %v", err)
	}
}

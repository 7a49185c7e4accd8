package bpmcli_test

import (
	"github.com/vigil-bosh/vigil/internal/testproc"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestShellEntersTheSandbox: with isolation on (root), bpm shell runs in the
// process's namespaces, as its user: it sees its own job only (at
// /var/vcap, bpm's place, with bpm's environment and working directory),
// its own processes only, and a read-only /etc — what bpm's runc exec
// gives. It needs no helper program: bpm runs with no PATH at all.
func TestShellEntersTheSandbox(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("isolation needs root")
	}
	root := testproc.SandboxRoot(t, "vigil-shell-")
	for _, j := range []string{"web", "other"} {
		p := filepath.Join(root, "jobs", j, "config", "bpm.yml")
		os.MkdirAll(filepath.Dir(p), 0o755)
		// The user is one every machine has: a start as a missing vcap fails.
		os.WriteFile(p, []byte("processes:\n- name: "+j+"\n  executable: /bin/sleep\n  args: ['1000']\n  user: nobody\n"), 0o644)
	}
	env := []string{"BPM_BOSH_ROOT=" + root, "TERM=vt100"}
	bpm := func(stdin string, args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(binDir, "bpm"), args...)
		cmd.Env, cmd.Stdin = env, strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := bpm("", "start", "web"); err != nil {
		t.Fatalf("start: %v %s", err, out)
	}
	t.Cleanup(func() { bpm("", "stop", "web") })
	out, err := bpm("id -u\nls "+filepath.Join(root, "jobs")+"\nls /proc | grep -c '^[0-9]'\ntouch /etc/x 2>&1 || true\n"+
		"ls /var/vcap/jobs\necho $PWD $TMPDIR $TERM\n", "shell", "web")
	if err != nil {
		t.Fatalf("shell: %v %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 6 || lines[0] == "0" || lines[1] != "web" || !strings.Contains(lines[3], "Read-only file system") ||
		lines[4] != "web" || lines[5] != "/var/vcap/jobs/web /var/vcap/data/web/tmp vt100" {
		t.Fatalf("inside the shell:\n%s", out)
	}
	if n := lines[2]; n == "" || len(n) > 1 { // a handful of processes, not the host's
		t.Fatalf("the shell sees %s processes", n)
	}
}

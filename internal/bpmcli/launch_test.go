package bpmcli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// isolatedRoot is a BOSH root for bpm with isolation on (root only); not
// under /tmp, which the processes have as their own. Its jobs run as
// nobody: a start as a vcap that does not exist fails.
func isolatedRoot(t *testing.T) (string, func(args ...string) (string, error)) {
	if os.Geteuid() != 0 {
		t.Skip("isolation needs root")
	}
	root, err := os.MkdirTemp("/run", "vigil-launch-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	os.Chmod(root, 0o755)
	bpm := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(binDir, "bpm"), args...)
		cmd.Env = []string{"BPM_BOSH_ROOT=" + root}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	return root, bpm
}

func writeJob(t *testing.T, root, job, yml string) {
	p := filepath.Join(root, "jobs", job, "config", "bpm.yml")
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestStartFailsWhenTheLaunchFails: as bpm's start fails when runc cannot
// start the container, vigil's fails (exit 1, "failed to start
// job-process: REASON") when the process cannot be launched, with the
// reason in its stderr log and bpm.log too, and nothing left running.
func TestStartFailsWhenTheLaunchFails(t *testing.T) {
	root, bpm := isolatedRoot(t)
	writeJob(t, root, "j", "processes:\n- name: j\n  executable: /bin/sleep\n  args: ['100']\n  user: nobody\n"+
		"  additional_volumes:\n  - path: "+root+"/data/nothere\n    mount_only: true\n")
	out, err := bpm("start", "j")
	if err == nil || !strings.HasPrefix(out, "Error: failed to start job-process: ") || !strings.Contains(out, "nothere") {
		t.Fatalf("start: %v %s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "sys", "log", "j", "j.stderr.log")); !strings.Contains(string(b), "nothere") {
		t.Errorf("the stderr log lacks the reason: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "sys", "log", "j", "bpm.log")); !strings.Contains(string(b), `"message":"bpm.start.failed-to-start"`) {
		t.Errorf("bpm.log lacks failed-to-start:\n%s", b)
	}
	if out, err := bpm("pid", "j"); err == nil {
		t.Fatalf("something runs: %s", out)
	}
}

// TestOpenFilesLimit: limits.open_files is the process's RLIMIT_NOFILE
// from its first instruction, soft and hard, and it cannot open past it
// (what bpm-release's "cannot open more files than permitted" names).
func TestOpenFilesLimit(t *testing.T) {
	root, bpm := isolatedRoot(t)
	writeJob(t, root, "j", "processes:\n- name: j\n  executable: /bin/bash\n  user: nobody\n  limits: {open_files: 10}\n  args:\n  - -c\n"+
		"  - 'echo \"limit $(ulimit -Sn) $(ulimit -Hn)\"; for i in $(seq 3 12); do eval \"exec $i</dev/null\" 2>/dev/null || { echo \"failed at $i\"; break; }; done'\n")
	out, err := bpm("run", "j")
	if err != nil || !strings.Contains(out, "limit 10 10\n") || !strings.Contains(out, "Too many open files") {
		t.Fatalf("run: %v\n%s", err, out)
	}
}

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vigil-bosh/vigil/internal/testproc"
	"github.com/vigil-bosh/vigil/internal/testroot"
)

// TestInitKeepsOnlyWhatItNeeds: once the executable runs, every thread of
// its init (vigil, root, PID 1 of the process's PID namespace) holds only
// CAP_KILL and CAP_DAC_OVERRIDE, bounded and permitted, none effective
// (bpm's suite reads /proc/1/status in the namespace and wants CapEff 0,
// as under tini), and still does its work by raising them on one thread
// for one act: it forwards a signal to the executable (another user),
// reopens the log in the job's log directory (that user's), and stops the
// process.
func TestInitKeepsOnlyWhatItNeeds(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("isolation needs root")
	}
	tr := testroot.New(t, testproc.SandboxParent()) // not under /tmp: the sandbox has its own
	root := tr.Layout.Root()
	os.Chmod(root, 0o755)
	c := &cli{t: t, tr: tr, root: root, log: make(chan string, 256)}
	script := filepath.Join(root, "packages", "web", "bin", "serve")
	tr.Write(script, "#!/bin/sh\ntrap 'echo got TERM; exit 0' TERM\ntrap 'echo got USR1' USR1\n"+
		"echo started\nwhile :; do sleep 1000 & wait $!; done\n", 0o755)
	c.writeJob("processes:\n- name: a\n  executable: " + script + "\n  user: nobody\n")
	d := exec.Command(vigilBin, "daemon", "--root", root, "--backend", "native")
	d.Env = os.Environ()
	c.startDaemon(d)
	t.Cleanup(func() {
		d.Process.Signal(syscall.SIGTERM)
		d.Wait()
	})
	p := c.status().Processes[0]
	if p.State != "running" {
		t.Fatalf("not running: %+v", p)
	}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", p.PID))
	if len(tasks) == 0 {
		t.Fatal("no threads of the init")
	}
	const kept = "0000000000000022" // CAP_KILL, CAP_DAC_OVERRIDE
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimSpace(v)
			switch k {
			case "CapEff":
				if v != "0000000000000000" {
					t.Errorf("%s %s: %s, want none", task, k, v)
				}
			case "CapPrm", "CapBnd":
				if v != kept {
					t.Errorf("%s %s: %s, want %s", task, k, v, kept)
				}
			case "CapInh", "CapAmb":
				if v != "0000000000000000" {
					t.Errorf("%s %s: %s, want none", task, k, v)
				}
			case "Uid":
				if !strings.HasPrefix(v, "0\t") {
					t.Errorf("%s: uid %s, want root", task, v)
				}
			}
		}
	}
	logPath := filepath.Join(root, "sys", "log", "web", "a.stdout.log")
	c.rotate(d, logPath, "started\n", "USR1", "got USR1\n")
	if out, code := c.run("stop", "web"); code != 0 || out != "web/a: stopped\n" {
		t.Fatalf("stop: %d %q", code, out)
	}
	if b, _ := os.ReadFile(logPath); string(b) != "got USR1\ngot TERM\n" {
		t.Fatalf("the reopened log holds %q", b)
	}
}

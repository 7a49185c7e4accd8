package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/vigil-bosh/vigil/control"
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
	c, d := isolatedDaemon(t, "#!/bin/sh\ntrap 'echo got TERM; exit 0' TERM\ntrap 'echo got USR1' USR1\n"+
		"echo started\nwhile :; do sleep 1000 & wait $!; done\n", "")
	root := c.root
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

// TestPrivilegedInitHoldsWhatTheJobHolds: the init of a privileged job
// holds, on every thread, the capabilities its executable holds, in every
// set (bpm's tini in a privileged container holds the job's; bpm's suite
// reads CapEff in /proc/1/status and wants the privileged set): Docker's
// 38, less any this machine's bounding set withholds.
func TestPrivilegedInitHoldsWhatTheJobHolds(t *testing.T) {
	p := runningPrivileged(t)
	job := capLines(t, fmt.Sprintf("/proc/%d/status", p.ExecPID))
	own := capLines(t, "/proc/self/status")
	var bnd uint64
	fmt.Sscanf(own["CapBnd"], "%x", &bnd)
	if want := fmt.Sprintf("%016x", bnd&(1<<38-1)); job["CapEff"] != want {
		t.Fatalf("the job's CapEff %s, want %s (Docker's 38 within ours)", job["CapEff"], want)
	}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", p.PID))
	if len(tasks) == 0 {
		t.Fatal("no threads of the init")
	}
	for _, task := range tasks {
		got := capLines(t, task)
		for k, v := range job {
			if got[k] != v {
				t.Errorf("%s %s: %s, the job's %s", task, k, got[k], v)
			}
		}
	}
}

// capLines reads the Cap* lines of a /proc status file.
func capLines(t *testing.T, path string) map[string]string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.HasPrefix(k, "Cap") {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// isolatedDaemon runs a daemon, isolation on, over a root outside /tmp
// (the sandbox has its own) whose job web has one process a, running
// script as nobody, with more of a's bpm.yml keys in extra, its command
// line after wrap (a command that execs the rest); the cleanup stops the
// daemon.
func isolatedDaemon(t *testing.T, script, extra string, wrap ...string) (*cli, *exec.Cmd) {
	tr := testroot.New(t, testproc.SandboxParent())
	root := tr.Layout.Root()
	os.Chmod(root, 0o755)
	c := &cli{t: t, tr: tr, root: root, log: make(chan string, 256)}
	path := filepath.Join(root, "packages", "web", "bin", "serve")
	tr.Write(path, script, 0o755)
	c.writeJob("processes:\n- name: a\n  executable: " + path + "\n  user: nobody\n" + extra)
	argv := append(wrap, vigilBin, "daemon", "--root", root, "--backend", "native")
	d := exec.Command(argv[0], argv[1:]...)
	d.Env = os.Environ()
	c.startDaemon(d)
	t.Cleanup(func() {
		d.Process.Signal(syscall.SIGTERM)
		d.Wait()
	})
	return c, d
}

// TestPrivilegedJobHasNoNosuidMount: no mount a privileged job sees has
// nosuid, its root's included (bpm drops nosuid from every mount of a
// privileged container, and bpm-release's privileged spec greps
// /proc/mounts for it), nor the device files bound from a /dev mounted
// nosuid, as systemd mounts it: the daemon runs in a mount namespace of
// its own where /dev is.
func TestPrivilegedJobHasNoNosuidMount(t *testing.T) {
	p := runningPrivileged(t, "unshare", "--mount", "--propagation", "private",
		"sh", "-c", `mount -o remount,bind,nosuid /dev && exec "$0" "$@"`)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mounts", p.ExecPID))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(line); len(f) > 3 && slices.Contains(strings.Split(f[3], ","), "nosuid") {
			t.Errorf("nosuid: %s", line)
		}
	}
}

// runningPrivileged runs a privileged job under an isolated daemon (its
// command line after wrap) and returns its status once it runs.
func runningPrivileged(t *testing.T, wrap ...string) control.ProcessStatus {
	if os.Geteuid() != 0 {
		t.Skip("isolation needs root")
	}
	c, _ := isolatedDaemon(t, "#!/bin/sh\nwhile :; do sleep 1000 & wait $!; done\n", "  unsafe:\n    privileged: true\n", wrap...)
	p := c.status().Processes[0]
	if p.State != "running" || p.ExecPID == 0 {
		t.Fatalf("not running: %+v", p)
	}
	return p
}

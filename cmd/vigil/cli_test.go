package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/pidfile"
	"github.com/vigil-bosh/vigil/internal/testproc"
	"github.com/vigil-bosh/vigil/internal/testroot"
)

// vigilBin is the vigil binary built once for these tests.
var vigilBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "vigil-cli")
	if err != nil {
		panic(err)
	}
	vigilBin = filepath.Join(dir, "vigil")
	build := exec.Command("go", "build", "-o", vigilBin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as the README builds it
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type cli struct {
	t    *testing.T
	tr   *testroot.Root
	root string
	log  chan string // the daemon's log lines after "supervising"
	// early are the daemon's log lines up to "supervising" (written
	// before startDaemon returns).
	early []string
}

// newCLI makes a BOSH root with one job "web" of two shell processes that
// print what they receive.
func newCLI(t *testing.T) *cli {
	tr := testroot.New(t, "")
	root := tr.Layout.Root()
	script := filepath.Join(root, "packages", "web", "bin", "serve")
	tr.Write(script, "#!/bin/sh\ntrap 'echo got HUP' HUP\ntrap 'exit 0' TERM\necho started $1\nwhile :; do sleep 1000 & wait $!; done\n", 0o755)
	c := &cli{t: t, tr: tr, root: root, log: make(chan string, 256)}
	c.writeJob("processes:\n- name: a\n  executable: " + script + "\n  args: [one]\n- name: b\n  executable: " + script + "\n")
	return c
}

func (c *cli) writeJob(yml string) { c.tr.Config("web", yml) }

// daemon starts `vigil daemon` and returns once it has settled (it logs
// "supervising"); the cleanup sends SIGTERM and checks it exits 0.
func (c *cli) daemon() *exec.Cmd {
	cmd := exec.Command(vigilBin, "daemon", "--root", c.root, "--backend", "native")
	cmd.Env = append(os.Environ(), "VIGIL_ISOLATION=off") // the test jobs live under /tmp
	c.startDaemon(cmd)
	c.t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			c.t.Errorf("daemon exited with %v", err)
		}
	})
	return cmd
}

func (c *cli) run(args ...string) (string, int) {
	cmd := exec.Command(vigilBin, append(args, "--root", c.root)...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		c.t.Fatal(err)
	}
	return string(out), 0
}

func (c *cli) status() control.Status {
	out, code := c.run("status", "--json")
	var st control.Status
	if (code != 0 && code != 3) || json.Unmarshal([]byte(out), &st) != nil { // 3: not all running
		c.t.Fatalf("status --json: %d %s", code, out)
	}
	return st
}

func TestCommands(t *testing.T) {
	c := newCLI(t)
	c.daemon()
	st := c.status()
	if len(st.Processes) != 2 || st.Processes[0].State != "running" || st.Processes[0].PID == 0 || st.Daemon.Root != c.root {
		t.Fatalf("status %+v", st)
	}
	if out, code := c.run("status"); code != 0 || !strings.HasPrefix(out, "JOB  PROCESS  STATE") || !strings.Contains(out, "web  a        running") {
		t.Fatalf("status table (%d):\n%s", code, out)
	}
	// stop blocks until nothing is left; start until running.
	pid := st.Processes[0].PID
	if out, code := c.run("stop", "web", "-p", "a"); code != 0 || out != "web/a: stopped\n" {
		t.Fatalf("stop: %d %q", code, out)
	}
	if syscall.Kill(pid, 0) == nil {
		t.Fatal("stopped init still alive")
	}
	if _, err := os.Stat(filepath.Join(c.root, "sys", "run", "bpm", "web", "a.pid")); !os.IsNotExist(err) {
		t.Fatalf("pid file left: %v", err)
	}
	if out, code := c.run("start", "web"); code != 0 || out != "web/a: running\nweb/b: running\n" {
		t.Fatalf("start: %d %q", code, out)
	}
	if _, code := c.run("signal", "web", "-p", "a", "HUP"); code != 0 {
		t.Fatal("signal failed")
	}
	// Errors: a one-line reason and a non-zero exit.
	for _, args := range [][]string{{"start", "nope"}, {"stop", "web", "-p", "zzz"}, {"signal", "nope", "-p", "a", "HUP"}} {
		out, code := c.run(args...)
		if code == 0 || !strings.HasPrefix(out, "vigil: ") || strings.Count(out, "\n") != 1 {
			t.Errorf("%v: %d %q", args, code, out)
		}
	}
	if out, code := c.run("frobnicate"); code != 2 || !strings.Contains(out, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: %d %q", code, out)
	}
}

// expectLog waits for a daemon log line containing s.
func (c *cli) expectLog(s string) {
	c.t.Helper()
	guard := time.After(time.Minute)
	for {
		select {
		case line := <-c.log:
			if strings.Contains(line, s) {
				return
			}
		case <-guard:
			c.t.Fatalf("the daemon never logged %q", s)
		}
	}
}

// TestSIGHUPReopensLogs rotates a log the way logrotate's create mode does.
func TestSIGHUPReopensLogs(t *testing.T) {
	c := newCLI(t)
	d := c.daemon()
	logPath := filepath.Join(c.root, "sys", "log", "web", "a.stdout.log")
	c.rotate(d, logPath, "started one\n", "HUP", "got HUP\n")
	old, _ := os.ReadFile(logPath + ".1")
	cur, _ := os.ReadFile(logPath)
	if string(old) != "started one\n" || string(cur) != "got HUP\n" {
		t.Fatalf("rotated %q, new %q", old, cur)
	}
}

// rotate waits for web/a's log to hold first (running means exec'd, not
// yet printed), moves it away as logrotate's create mode does, has the
// daemon reopen the logs (SIGHUP), then sends the process sig and waits
// for the new log to hold line: the trap runs when the shell gets to it,
// so the wait is for its line rather than a stop under it.
func (c *cli) rotate(d *exec.Cmd, logPath, first, sig, line string) {
	c.t.Helper()
	testproc.WaitUntil(c.t, filepath.Dir(logPath), testproc.FileHolds(logPath, first))
	if err := os.Rename(logPath, logPath+".1"); err != nil {
		c.t.Fatal(err)
	}
	d.Process.Signal(syscall.SIGHUP)
	c.expectLog("reopened logs")
	if _, code := c.run("signal", "web", "-p", "a", sig); code != 0 {
		c.t.Fatal("signal failed")
	}
	testproc.WaitUntil(c.t, filepath.Dir(logPath), testproc.FileHolds(logPath, line))
}

func TestReloadKeepsUnchanged(t *testing.T) {
	c := newCLI(t)
	c.daemon()
	before := c.status()
	script := filepath.Join(c.root, "packages", "web", "bin", "serve")
	c.writeJob("processes:\n- name: a\n  executable: " + script + "\n  args: [one]\n- name: b\n  executable: " + script + "\n  args: [changed]\n")
	out, code := c.run("reload")
	if code != 0 || out != "restarted web/b\n1 unchanged\n" {
		t.Fatalf("reload: %d %q", code, out)
	}
	after := c.status()
	if after.Processes[0].PID != before.Processes[0].PID || after.Processes[1].PID == before.Processes[1].PID {
		t.Fatalf("before %+v after %+v", before.Processes, after.Processes)
	}
	if pid, _ := pidfile.Read(filepath.Join(c.root, "sys", "run", "bpm", "web", "b.pid")); pid != after.Processes[1].PID {
		t.Fatalf("pid file %d, status %d", pid, after.Processes[1].PID)
	}
}

func TestNoDaemon(t *testing.T) {
	c := newCLI(t)
	for _, cmd := range []string{"status", "start", "reload", "events"} {
		args := []string{cmd}
		if cmd == "start" {
			args = append(args, "web")
		}
		out, code := c.run(args...)
		if code != 7 || !strings.HasPrefix(out, "vigil: the vigil daemon is not running") || strings.Count(out, "\n") != 1 {
			t.Errorf("%s: %d %q", cmd, code, out)
		}
	}
}

// TestDrainWithDaemon: drain unmonitors first, so a drain script that kills
// its own process (and removes its pid file, as bpm asks) does not see it
// come back, and a later stop succeeds; a drain that calls bpm stop works.
func TestDrainWithDaemon(t *testing.T) {
	c := newCLI(t)
	script := filepath.Join(c.root, "packages", "web", "bin", "serve")
	pidOf := func(job, p string) string { return filepath.Join(c.root, "sys", "run", "bpm", job, p+".pid") }
	bpm := filepath.Join(c.root, "jobs", "bpm", "bin", "bpm")
	for _, j := range []struct{ name, drain string }{
		{"killer", "kill $(cat " + pidOf("killer", "killer") + ") && rm -f " + pidOf("killer", "killer") + "\necho 0"},
		{"stopper", bpm + " stop stopper >&2 && echo 0"},
	} {
		dir := filepath.Join(c.root, "jobs", j.name)
		os.MkdirAll(filepath.Join(dir, "config"), 0o755)
		os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
		os.WriteFile(filepath.Join(dir, "config", "bpm.yml"), []byte("processes:\n- name: "+j.name+"\n  executable: "+script+"\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "bin", "drain"), []byte("#!/bin/sh\n"+j.drain+"\n"), 0o755)
	}
	if out, code := c.run("install"); code != 0 {
		t.Fatalf("install: %s", out)
	}
	c.daemon()
	cmd := exec.Command(vigilBin, "drain", "--shutdown", "--root", c.root)
	cmd.Env = append(os.Environ(), "VIGIL_ROOT="+c.root) // the drain scripts' bpm finds the root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("drain: %v\n%s", err, out)
	}
	// The killer's drain only sent its signal: its exit comes after.
	events, ecmd, _ := c.streamLines("events", "--json", "-n", "1024")
	for l := range events {
		var ev control.Event
		if json.Unmarshal([]byte(l), &ev) == nil && ev.Job == "killer" && ev.Kind == control.EventExited {
			break
		}
	}
	ecmd.Process.Kill()
	ecmd.Wait()
	for _, p := range c.status().Processes {
		switch p.Job {
		case "killer", "stopper":
			if p.State == "running" || p.Restarts != 0 || !p.Unmonitored {
				t.Errorf("%s after its drain: %+v", p.Job, p)
			}
		case "web":
			if p.State != "running" || !p.Unmonitored {
				t.Errorf("web after the drains: %+v", p)
			}
		}
	}
	if out, code := c.run("stop", "killer"); code != 0 || out != "killer/killer: stopped\n" {
		t.Fatalf("stop after the drain: %d %q", code, out)
	}
}

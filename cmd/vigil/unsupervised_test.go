package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestUnsupervisedJobs: once a job has a monit file, a job without one
// (and a process no check starts) is not supervised, as under monit; that
// is said in the daemon's log, in status (whose exit is 3 for such a job
// named) and in check.
func TestUnsupervisedJobs(t *testing.T) {
	c := newCLI(t) // web/a and web/b
	c.monitRoot()
	script := filepath.Join(c.root, "packages", "web", "bin", "serve")
	c.tr.Config("other", "processes:\n- name: o\n  executable: "+script+"\n")
	monitFile := filepath.Join(c.root, "monit", "job", "0000_web.monitrc")
	os.WriteFile(monitFile, []byte("check process a\n  with pidfile "+c.root+"/sys/run/bpm/web/a.pid\n"+
		"  start program \""+c.root+"/jobs/bpm/bin/bpm start web -p a\"\n  stop program \""+c.root+"/jobs/bpm/bin/bpm stop web -p a\"\n"), 0o600)
	d := c.rawDaemon()
	defer func() { d.Process.Signal(syscall.SIGTERM); d.Wait() }()

	log := strings.Join(c.early, "\n")
	for _, want := range []string{`msg="not supervised" job=other`, `msg="not supervised" job=web process=b`} {
		if !strings.Contains(log, want) {
			t.Errorf("the daemon's log lacks %q:\n%s", want, log)
		}
	}
	out, code := c.run("status")
	for _, want := range []string{
		"warning: job other: not supervised: no monit file starts it (once jobs have monit files, only what their checks start runs, as under monit)",
		"warning: process web/b: not supervised: no monit check starts it with bpm start web -p b",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status (%d) lacks %q:\n%s", code, want, out)
		}
	}
	for _, target := range []string{"other", "web/b"} {
		if out, code := c.run("status", target); code != exitNotRunning || !strings.Contains(out, "not supervised") {
			t.Errorf("status %s: %d %q, want 3 and why", target, code, out)
		}
	}
	if out, code := c.run("start", "other"); code != exitNotFound || !strings.Contains(out, "vigil: job other: not supervised: no monit file starts it") {
		t.Errorf("start other: %d %q", code, out)
	}
	out, code = c.run("check")
	if code != 0 || !strings.Contains(out, "warning: job other: not supervised") || !strings.Contains(out, "a daemon would start 1 process(es)") {
		t.Errorf("check: %d\n%s", code, out)
	}
	if _, code := c.run("check", "--strict"); code != 1 {
		t.Errorf("check --strict: %d, want 1 (the warnings)", code)
	}
}

// TestDaemonLogSaysNoNil: from its start to its exit, the daemon's log
// never writes an error that did not happen (error=<nil>).
func TestDaemonLogSaysNoNil(t *testing.T) {
	c := newCLI(t)
	cmd := exec.Command(vigilBin, "daemon", "--root", c.root, "--backend", "native")
	cmd.Env = append(os.Environ(), "VIGIL_ISOLATION=off")
	var log strings.Builder
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	buf := make([]byte, 4096)
	for !strings.Contains(log.String(), "msg=supervising") {
		n, err := r.Read(buf)
		log.Write(buf[:n])
		if err != nil {
			t.Fatalf("the daemon ended: %v\n%s", err, log.String())
		}
	}
	if _, code := c.run("stop", "web"); code != 0 {
		t.Fatal("stop failed")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	for {
		n, err := r.Read(buf)
		log.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if err := cmd.Wait(); err != nil || !strings.Contains(log.String(), "msg=stopped") {
		t.Fatalf("the daemon: %v\n%s", err, log.String())
	}
	if strings.Contains(log.String(), "<nil>") {
		t.Errorf("the log says <nil>:\n%s", log.String())
	}
}

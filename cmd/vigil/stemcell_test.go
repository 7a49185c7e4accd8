package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/stemcell"
)

// TestInstallUnits: install --unit-dir writes the stemcell's two units,
// naming this binary and the root (the VM rig runs them under systemd).
func TestInstallUnits(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	if out, code := c.run("install", "--unit-dir", dir); code != 0 {
		t.Fatalf("install --unit-dir: %d %s", code, out)
	}
	want, err := stemcell.Render(vigilBin, c.root)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range want {
		b, err := os.ReadFile(filepath.Join(dir, u.Name))
		if err != nil || string(b) != u.Text {
			t.Errorf("%s: %v\n%s", u.Name, err, b)
		}
	}
}

// TestRunitService is the runit stemcell's path (Jammy), under a real
// runsv: the stemcell's run script execs `monit -I`, which is vigil's
// daemon in one process, and the agent reloads it with `sv kill monit`
// (SIGKILL to runsv's child alone) and `sv start monit`. Three times: the
// jobs keep their pids, the next daemon adopts them, and the incarnation
// the agent polls for changes.
func TestRunitService(t *testing.T) {
	for _, tool := range []string{"runsv", "sv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs runit's %s (apt-get install runit; .ci/run installs it)", tool)
		}
	}
	c := newCLI(t)
	port := c.monitRoot()
	c.monit("-V") // makes ROOT/bosh/bin/monit, the link to vigil
	sv := filepath.Join(t.TempDir(), "monit")
	os.MkdirAll(sv, 0o755)
	// The stemcell's run script (stemcell builder, bosh_go_agent's
	// runit/monit/run), for this root.
	run := "#!/bin/bash\nset -e\nexport PATH=" + c.root + "/bosh/bin:$PATH\nexec 2>&1\n" +
		"exec nice -n -10 " + c.root + "/bosh/bin/monit -I -c " + c.root + "/bosh/etc/monitrc\n"
	if err := os.WriteFile(filepath.Join(sv, "run"), []byte(run), 0o755); err != nil {
		t.Fatal(err)
	}
	runsv := exec.Command("runsv", sv)
	runsv.Env = append(os.Environ(), "VIGIL_ISOLATION=off") // the test jobs live under /tmp
	runsv.Stdout, runsv.Stderr = io.Discard, io.Discard     // the daemon's log
	if err := runsv.Start(); err != nil {
		t.Fatal(err)
	}
	svCmd := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("sv", append(args, sv)...).CombinedOutput(); err != nil {
			t.Fatalf("sv %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	defer func() {
		// As the agent's StopAndWait, then the service down and runsv gone.
		c.monit("stop", "-g", "vcap")
		c.eventually("everything stopped", func() bool {
			return c.proc("a").State == "stopped" && c.proc("b").State == "stopped"
		})
		svCmd("down")
		svCmd("exit")
		runsv.Wait()
	}()
	client := control.NewClient(filepath.Join(c.root, "sys/run/vigil/vigil.sock"))
	c.eventually("the jobs running under runsv", func() bool {
		st, err := client.Status(t.Context())
		return err == nil && len(st.Processes) == 2 && st.Processes[0].State == "running" && st.Processes[1].State == "running"
	})
	a1, b1 := c.proc("a"), c.proc("b")
	daemon := c.status().Daemon.PID
	inc := incarnation(t, port)
	for i := range 3 {
		svCmd("kill")
		svCmd("start")
		c.eventually("a new daemon with a new incarnation", func() bool {
			st, err := client.Status(t.Context())
			next, ierr := readIncarnation(port)
			return err == nil && st.Daemon.PID != daemon && ierr == nil && next != inc
		})
		if syscall.Kill(daemon, 0) == nil {
			t.Fatalf("round %d: the killed daemon %d still runs", i, daemon)
		}
		daemon, inc = c.status().Daemon.PID, incarnation(t, port)
		for _, p1 := range []control.ProcessStatus{a1, b1} {
			p := c.proc(p1.Process)
			if p.State != "running" || p.PID != p1.PID || p.ExecPID != p1.ExecPID || p.Restarts != p1.Restarts {
				t.Fatalf("round %d: %s was %+v, now %+v", i, p1.Process, p1, p)
			}
		}
	}
}

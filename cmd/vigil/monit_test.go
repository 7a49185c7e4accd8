package main

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
)

// monitRoot adds the stemcell's monit layout to c's root: a monitrc with
// httpd on a free port and a job file with a bpm shim check per process.
func (c *cli) monitRoot() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	files := map[string]string{
		"bosh/etc/monitrc": fmt.Sprintf("set daemon 10\nset httpd port %d and use address 127.0.0.1\n"+
			"  allow cleartext /var/vcap/monit/monit.user\ninclude /var/vcap/monit/job/*.monitrc\n", port),
		"monit/monit.user": "vcap:random-password",
		"monit/job/0000_web.monitrc": "check process a\n  with pidfile /var/vcap/sys/run/bpm/web/a.pid\n" +
			"  start program \"/var/vcap/jobs/bpm/bin/bpm start web -p a\"\n  stop program \"/var/vcap/jobs/bpm/bin/bpm stop web -p a\"\n  group vcap\n" +
			"check process b\n  with pidfile /var/vcap/sys/run/bpm/web/b.pid\n" +
			"  start program \"/var/vcap/jobs/bpm/bin/bpm start web -p b\"\n  stop program \"/var/vcap/jobs/bpm/bin/bpm stop web -p b\"\n  group vcap\n",
	}
	for rel, content := range files {
		p := filepath.Join(c.root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			c.t.Fatal(err)
		}
	}
	return port
}

// incarnation reads monit@incarnation as the agent does.
func incarnation(t *testing.T, port int) string {
	t.Helper()
	inc, err := readIncarnation(port)
	if err != nil {
		t.Fatal(err)
	}
	return inc
}

// readIncarnation is incarnation, with its error (no API answering yet).
func readIncarnation(port int) (string, error) {
	req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/_status2?format=xml", port), nil)
	req.SetBasicAuth("vcap", "random-password")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var doc struct {
		Incarnation string `xml:"incarnation,attr"`
	}
	d := xml.NewDecoder(resp.Body)
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	if err := d.Decode(&doc); err != nil || doc.Incarnation == "" {
		return "", fmt.Errorf("incarnation: %v (%s)", err, resp.Status)
	}
	return doc.Incarnation, nil
}

// rawDaemon starts `vigil daemon` and waits until it has settled; the
// caller ends it.
func (c *cli) rawDaemon() *exec.Cmd {
	return c.startDaemon(exec.Command(vigilBin, "daemon", "--root", c.root))
}

// startDaemon starts cmd (a daemon) and waits until it has settled (it
// logs "supervising"); later log lines go to c.log, dropped when nobody
// reads them, so the daemon never blocks on its log.
func (c *cli) startDaemon(cmd *exec.Cmd) *exec.Cmd {
	if cmd.Env == nil {
		// The test jobs live under /tmp, and their user (vcap) need not
		// exist here: a start as a missing user fails.
		cmd.Env = append(os.Environ(), "VIGIL_ISOLATION=off")
	}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			c.early = append(c.early, sc.Text())
			if strings.Contains(sc.Text(), "msg=supervising") {
				close(ready)
				break
			}
		}
		for sc.Scan() {
			select {
			case c.log <- sc.Text():
			default:
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(time.Minute):
		c.t.Fatal("the daemon never settled")
	}
	return cmd
}

// monit runs the binary under the name monit, as the agent does.
func (c *cli) monit(args ...string) (string, int) {
	link := filepath.Join(c.root, "bosh", "bin", "monit")
	if _, err := os.Lstat(link); err != nil {
		os.MkdirAll(filepath.Dir(link), 0o755)
		if err := os.Symlink(vigilBin, link); err != nil {
			c.t.Fatal(err)
		}
	}
	cmd := exec.Command(link, args...)
	cmd.Env = append(os.Environ(), "VIGIL_ROOT="+c.root)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		c.t.Fatal(err)
	}
	return string(out), 0
}

// eventually polls cond (as the agent polls monit) until it holds.
func (c *cli) eventually(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

func (c *cli) proc(name string) control.ProcessStatus {
	for _, p := range c.status().Processes {
		if p.Process == name {
			return p
		}
	}
	return control.ProcessStatus{}
}

// TestMonitSurvivesKill: kill -9 of the daemon leaves the jobs running; a
// new daemon adopts them (same pids), keeps an unmonitored service
// unmonitored, and restarts an adopted process that dies later.
func TestMonitSurvivesKill(t *testing.T) {
	c := newCLI(t)
	port := c.monitRoot()
	d1 := c.rawDaemon()
	inc1 := incarnation(t, port)
	c.eventually("a and b running", func() bool { return c.proc("a").State == "running" && c.proc("b").State == "running" })
	a1, b1 := c.proc("a"), c.proc("b")
	out, code := c.monit("summary")
	if code != 0 || !strings.HasPrefix(out, "The Monit daemon 5.2.5 uptime: 0m \n\n") ||
		!strings.Contains(out, "\nProcess 'a'                         running\nProcess 'b'                         running\n") {
		t.Fatalf("summary %d:\n%s", code, out)
	}
	if out, code := c.monit("unmonitor", "b"); code != 0 {
		t.Fatalf("unmonitor: %d %s", code, out)
	}
	c.eventually("b not monitored", func() bool {
		out, _ := c.monit("summary")
		return strings.Contains(out, "Process 'b'                         not monitored\n")
	})
	if out, code := c.monit("status", "nope"); code != 0 || !strings.Contains(out, "  monitoring status                 not monitored\n") {
		t.Fatalf("status: %d %s", code, out)
	}
	if out, code := c.monit("restart", "nope"); code != 1 || out != "monit: action failed -- There is no service by that name\n" {
		t.Fatalf("unknown: %d %q", code, out)
	}

	d1.Process.Signal(syscall.SIGKILL)
	d1.Wait()
	for _, p := range []control.ProcessStatus{a1, b1} {
		if syscall.Kill(p.PID, 0) != nil || syscall.Kill(p.ExecPID, 0) != nil {
			t.Fatalf("%s did not survive the daemon's death", p.Process)
		}
	}

	d2 := c.rawDaemon()
	defer func() {
		d2.Process.Signal(syscall.SIGTERM)
		if err := d2.Wait(); err != nil {
			t.Errorf("second daemon: %v", err)
		}
	}()
	if inc2 := incarnation(t, port); inc2 == inc1 {
		t.Fatalf("the incarnation did not change across the restart: %s", inc2)
	}
	a2, b2 := c.proc("a"), c.proc("b")
	if a2.State != "running" || a2.PID != a1.PID || a2.ExecPID != a1.ExecPID {
		t.Fatalf("a not adopted: before %+v, after %+v", a1, a2)
	}
	if b2.PID != b1.PID || !b2.Unmonitored {
		t.Fatalf("b not adopted unmonitored: before %+v, after %+v", b1, b2)
	}
	out, _ = c.monit("summary")
	if !strings.Contains(out, "Process 'a'                         running\nProcess 'b'                         not monitored\n") {
		t.Fatalf("summary after adoption:\n%s", out)
	}
	// A later death of the adopted executable is restarted as usual.
	syscall.Kill(a1.ExecPID, syscall.SIGKILL)
	c.eventually("a restarted", func() bool {
		p := c.proc("a")
		return p.State == "running" && p.ExecPID != 0 && p.ExecPID != a1.ExecPID
	})
	// Start re-monitors b.
	if out, code := c.monit("start", "b"); code != 0 {
		t.Fatalf("start b: %d %s", code, out)
	}
	c.eventually("b monitored", func() bool { return !c.proc("b").Unmonitored })
}

// TestInstallMonit: vigil install puts monit where the agent finds it.
func TestInstallMonit(t *testing.T) {
	c := newCLI(t)
	if out, code := c.run("install"); code != 0 {
		t.Fatalf("install: %d %s", code, out)
	}
	link := filepath.Join(c.root, "bosh", "bin", "monit")
	if target, err := os.Readlink(link); err != nil || target != vigilBin {
		t.Fatalf("%s -> %q (%v)", link, target, err)
	}
	out, err := exec.Command(link, "-V").Output()
	if err != nil || !strings.HasPrefix(string(out), "This is Monit version 5.2.5\n") {
		t.Fatalf("monit -V: %q %v", out, err)
	}
	if out, code := c.run("monit", "-V"); code != 0 || !strings.HasPrefix(out, "This is Monit version 5.2.5\n") {
		t.Fatalf("vigil monit -V: %d %q", code, out)
	}
}

// TestMonitForeground: the stemcell's service runs `monit -I -c monitrc`;
// its SIGTERM (systemctl kill) leaves the jobs running, and the next one
// adopts them.
func TestMonitForeground(t *testing.T) {
	c := newCLI(t)
	c.monitRoot()
	c.monit("-V") // makes the monit link
	link := filepath.Join(c.root, "bosh", "bin", "monit")
	monitrc := filepath.Join(c.root, "bosh", "etc", "monitrc")
	d1 := c.startDaemon(exec.Command(link, "-I", "-c", monitrc))
	c.eventually("a running", func() bool { return c.proc("a").State == "running" })
	a1 := c.proc("a")
	d1.Process.Signal(syscall.SIGTERM)
	if err := d1.Wait(); err != nil {
		t.Fatalf("monit -I after SIGTERM: %v", err)
	}
	if syscall.Kill(a1.PID, 0) != nil || syscall.Kill(a1.ExecPID, 0) != nil {
		t.Fatal("SIGTERM of monit -I stopped the jobs")
	}
	d2 := c.startDaemon(exec.Command(link, "-I", "-c", monitrc))
	if a2 := c.proc("a"); a2.PID != a1.PID || a2.State != "running" {
		t.Fatalf("not adopted: %+v then %+v", a1, a2)
	}
	// Clean up as the agent's StopAndWait would, then end the daemon.
	if out, code := c.monit("stop", "-g", "vcap"); code != 0 {
		t.Fatalf("stop -g vcap: %d %s", code, out)
	}
	c.eventually("everything stopped", func() bool {
		return c.proc("a").State == "stopped" && c.proc("b").State == "stopped"
	})
	d2.Process.Signal(syscall.SIGTERM)
	if err := d2.Wait(); err != nil {
		t.Fatal(err)
	}
}

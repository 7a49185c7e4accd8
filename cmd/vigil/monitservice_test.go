package main

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// monitService starts `vigil monit-service` on c's root, as monit.service
// runs it (with env added to the test's environment), and returns it with
// its log lines (each line read, in order, until it ends; the channel is
// closed then).
func (c *cli) monitService(env []string, args ...string) (*exec.Cmd, <-chan string) {
	cmd := exec.Command(vigilBin, append([]string{"monit-service", "--root", c.root}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return cmd, lines
}

// awaitLine reads lines until one contains want, failing if they end first.
func (c *cli) awaitLine(lines <-chan string, want string) string {
	c.t.Helper()
	var seen []string
	for l := range lines {
		if strings.Contains(l, want) {
			return l
		}
		seen = append(seen, l)
	}
	c.t.Fatalf("no line with %q; got:\n%s", want, strings.Join(seen, "\n"))
	return ""
}

// TestMonitService is the agent's reload as monit.service runs it, three
// times: each start makes the daemon re-read the control files (a new
// incarnation on the monit API), each SIGTERM ends the client with 0, and
// no job is touched: the same daemon, the same pids, no restart.
func TestMonitService(t *testing.T) {
	c := newCLI(t)
	port := c.monitRoot()
	d := c.rawDaemon()
	defer func() {
		d.Process.Signal(syscall.SIGTERM)
		d.Wait()
	}()
	c.eventually("a and b running", func() bool { return c.proc("a").State == "running" && c.proc("b").State == "running" })
	before := c.status()
	a1, b1 := c.proc("a"), c.proc("b")
	inc := incarnation(t, port)
	notify := notifySocket(t)
	for i := range 3 {
		cmd, lines := c.monitService([]string{"NOTIFY_SOCKET=" + notify.LocalAddr().String()})
		// Ready (monit.service is Type=notify: the agent's start returns
		// now) only once the new incarnation is in force.
		if msg := readDatagram(t, notify); !strings.HasPrefix(msg, "READY=1\n") {
			t.Fatalf("round %d: notified %q", i, msg)
		}
		next := incarnation(t, port)
		if next == inc {
			t.Fatalf("round %d: the incarnation stayed %s when monit-service said it was ready", i, inc)
		}
		c.awaitLine(lines, "the daemon re-read the control files")
		inc = next
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("round %d: monit-service after SIGTERM: %v", i, err)
		}
		st := c.status()
		if st.Daemon.PID != before.Daemon.PID {
			t.Fatalf("round %d: the daemon changed: %d then %d", i, before.Daemon.PID, st.Daemon.PID)
		}
		for _, p1 := range []control.ProcessStatus{a1, b1} {
			p := c.proc(p1.Process)
			if p.State != "running" || p.PID != p1.PID || p.ExecPID != p1.ExecPID || p.Restarts != p1.Restarts {
				t.Fatalf("round %d: %s was %+v, now %+v", i, p1.Process, p1, p)
			}
		}
	}
}

// TestMonitServiceWaitsForTheDaemon: started before the daemon (systemd
// starts monit.service once vigil.service's process runs, before its
// socket listens), the client waits and reloads once the daemon answers.
func TestMonitServiceWaitsForTheDaemon(t *testing.T) {
	c := newCLI(t)
	c.monitRoot()
	cmd, lines := c.monitService(nil)
	c.awaitLine(lines, "waiting up to 1m0s for the daemon")
	d := c.rawDaemon()
	defer func() {
		d.Process.Signal(syscall.SIGTERM)
		d.Wait()
	}()
	c.awaitLine(lines, "the daemon re-read the control files")
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("monit-service after SIGTERM: %v", err)
	}
}

// TestMonitServiceWithoutDaemon: with no daemon it fails once --wait has
// passed, saying so with exit 7 (systemd starts it again); a SIGTERM while it waits
// ends it with 0.
func TestMonitServiceWithoutDaemon(t *testing.T) {
	c := newCLI(t)
	cmd := exec.Command(vigilBin, "monit-service", "--root", c.root, "--wait", "100ms")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitNoDaemon || !strings.Contains(string(out), "the vigil daemon is not running") {
		t.Fatalf("monit-service without a daemon: %v\n%s", err, out)
	}
	waiting, lines := c.monitService(nil, "--wait", time.Hour.String())
	c.awaitLine(lines, "waiting up to 1h0m0s")
	waiting.Process.Signal(syscall.SIGTERM)
	if err := waiting.Wait(); err != nil {
		t.Fatalf("monit-service killed while it waits: %v", err)
	}
}

// notifySocket is a datagram socket standing for systemd's notification
// socket, closed when the test ends.
func notifySocket(t *testing.T) *net.UnixConn {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(t.TempDir(), "notify"), Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// readDatagram returns the next message on conn.
func readDatagram(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(testproc.Guard)) // a failure guard only
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("no notification: %v", err)
	}
	return string(buf[:n])
}

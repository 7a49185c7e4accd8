package daemon

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// awaitMail waits for an alert mail holding every string of want,
// passing over the others.
func awaitMail(t *testing.T, mails <-chan string, want ...string) string {
	t.Helper()
	guard := time.NewTimer(testproc.Guard) // a failure guard only
	defer guard.Stop()
	for {
		select {
		case m := <-mails:
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(m, w)
			}
			if ok {
				return m
			}
		case <-guard.C:
			t.Fatalf("no alert mail with %q", want)
		}
	}
}

// TestMonitForeignPidFileNeverKilled: the attack of issue 33. A check
// whose programs run as another user (uid 65534, as vcap would) writes
// the pid of a root process into its own pid file, and its stop program
// does nothing; `monit stop` then used to send the stop ladder to the
// root process (SIGQUIT, then SIGKILL to it and its group). The pid file
// names a process that is not the service's: vigil never takes it for
// the service (the start fails, saying why), logs and mails that, and
// the stop signals nothing: the root process lives on.
func TestMonitForeignPidFileNeverKilled(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: a check run as another user")
	}
	h := newHarness(t)
	root := h.layout.Root()
	port, mails := h.writeAlertingMonitrc(1)
	victim := exec.Command("sleep", "1000") // root's: the BOSH agent, sshd, another job
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { victim.Process.Kill(); victim.Wait() })
	pidPath := filepath.Join(root, "sys", "run", "evil", "evil.pid")
	h.write("jobs/evil/bin/ctl", "#!/bin/sh\ncase $1 in\nstart) echo "+strconv.Itoa(victim.Process.Pid)+" > "+pidPath+" ;;\n"+
		"stop) ;;\nesac\n", 0o755)
	for _, d := range []string{root, filepath.Dir(pidPath)} { // the job's user writes its run directory
		os.MkdirAll(d, 0o755)
		os.Chmod(d, 0o777)
	}
	h.write("monit/job/0000_evil.monitrc", "check process evil with pidfile /var/vcap/sys/run/evil/evil.pid\n"+
		"  start program \"/var/vcap/jobs/evil/bin/ctl start\" as uid 65534 and gid 65534 with timeout 2 seconds\n"+
		"  stop program \"/var/vcap/jobs/evil/bin/ctl stop\" as uid 65534 and gid 65534 with timeout 1 seconds\n"+
		"  group vcap\n", 0o644)
	h.start(supervise.Timing{})
	api := monitAPI{t: t, base: "http://127.0.0.1:" + strconv.Itoa(port)}
	h.waitFor("evil's start to end", func() bool { return api.service("evil").Monitor == 1 })
	if code, body := api.do("POST", "/evil", "action=stop"); code != 200 {
		t.Fatalf("stop: %d %s", code, body)
	}
	h.waitFor("the stop done", func() bool {
		st := api.service("evil")
		return st.Pending == 0 && st.Monitor == 0 && h.status("evil", "evil").State == "stopped"
	})
	if err := unix.Kill(victim.Process.Pid, 0); err != nil {
		t.Fatalf("the root process was signalled: %v", err)
	}
	var ws unix.WaitStatus
	if pid, _ := unix.Wait4(victim.Process.Pid, &ws, unix.WNOHANG, nil); pid != 0 {
		t.Fatalf("the root process ended: %v", ws)
	}
	// Never taken for the service: its start failed, and said why.
	m := awaitMail(t, mails, "Service: evil\r\n", "Event: PID failed\r\n")
	if !strings.Contains(m, "names pid "+strconv.Itoa(victim.Process.Pid)+", a process of uid 0") {
		t.Fatalf("the alert does not name the foreign process:\n%s", m)
	}
	if code, body := api.do("POST", "/evil", "action=start"); code != 200 {
		t.Fatalf("start: %d %s", code, body)
	}
	h.waitFor("evil's start failed", func() bool {
		st := api.service("evil")
		return st.Status&0x1000 != 0 && st.Monitor == 1 && st.PID == 0 // Execution failed, no process of its own
	})
}

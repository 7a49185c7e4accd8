package faults

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/pidfile"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestRecycledPidNeverSignalled: a daemon and its process's init are
// killed outright, so the pid file stays behind, and a stranger then takes
// that very pid. The next daemon neither adopts nor signals the stranger: it
// starts the process afresh and rewrites the pid file, and stopping
// everything leaves the stranger alone. (bpm without a daemon, against a
// planted pid: bpmcli.TestStalePidFile.)
func TestRecycledPidNeverSignalled(t *testing.T) {
	r := newRig(t)
	r.job("web", tp{name: "victim", behaviour: "serve"}, tp{name: "steady", behaviour: "serve"})
	r.up(0)
	victim := r.once("web", "victim")
	kids := r.killDaemon()
	unix.Kill(victim.PID, unix.SIGKILL) // its executable dies with it (parent-death signal)
	r.waitGone(victim.PID)
	r.waitGone(victim.ExecPID)
	r.orphansSettle(kids)
	if r.pidFile("web", "victim") != victim.PID {
		t.Fatal("the pid file of the init killed outright is gone: nothing to recycle")
	}

	strangers := testproc.Listen(t) // the stranger's reports only
	stranger := r.spawnWithPid(victim.PID, strangers.Env("serve"))
	strangers.Expect(t, "ready")
	if stranger != victim.PID {
		t.Logf("pid %d was not free again: the pid file names the stranger %d instead", victim.PID, stranger)
		if err := pidfile.Write(r.layout.PidFile("web", "victim"), stranger); err != nil {
			t.Fatal(err)
		}
	}

	r.up(0)
	if st := r.once("web", "victim"); st.PID == stranger {
		t.Fatalf("the stranger was adopted: %+v", st)
	}
	r.stopDaemon() // stops every process, through its own handles
	for _, sig := range []unix.Signal{unix.SIGUSR1, unix.SIGUSR2} {
		unix.Kill(stranger, sig)
		if ln := strangers.Expect(t, "signal"); ln.Text != "signal "+unix.SignalName(sig)[3:] {
			t.Fatalf("the stranger got a signal from vigil: it reported %q before our %s", ln.Text, unix.SignalName(sig))
		}
	}
}

// spawnWithPid starts the test binary with env, in the background of a
// shell that first asks the kernel for that pid next (ns_last_pid), and
// returns the pid it got: another process may take the pid first, so it
// tries a few times.
func (r *rig) spawnWithPid(pid int, env map[string]string) int {
	r.t.Helper()
	got := 0
	for try := range 20 {
		cmd := exec.Command("/bin/sh", "-c", "echo $1 > /proc/sys/kernel/ns_last_pid; \"$2\" </dev/null >/dev/null 2>&1 & echo $!",
			"sh", strconv.Itoa(pid-1), r.self)
		cmd.Env = os.Environ()
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.Output()
		if err != nil {
			r.t.Fatalf("spawn: %v", err)
		}
		if got, _ = strconv.Atoi(strings.TrimSpace(string(out))); got == pid || try == 19 {
			break
		}
		unix.Kill(got, unix.SIGKILL)
		r.waitGone(got)
		r.reap()
	}
	r.t.Cleanup(func() { unix.Kill(got, unix.SIGKILL); r.waitGone(got); r.reap() })
	return got
}

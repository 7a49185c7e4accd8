package faults

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/launch/procinit"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestStdoutClosedEarly: a process that closes its stdout at once keeps
// running and supervised, its stderr is still logged, and a reopen of the
// logs does not wait on the finished stdout.
func TestStdoutClosedEarly(t *testing.T) {
	r := newRig(t)
	r.job("web", tp{name: "quiet", behaviour: "closeout"})
	r.up(0)
	r.rep.Expect(t, "closed")
	r.rep.Expect(t, "ready")
	before := r.once("web", "quiet")
	r.daemon.cmd.Process.Signal(unix.SIGHUP)
	r.expectLog("reopened logs")
	unix.Kill(before.ExecPID, unix.SIGUSR2)
	r.rep.Expect(t, "printed")
	testproc.WaitUntil(t, r.layout.LogDir("web"), testproc.FileContains(r.layout.StderrLog("web", "quiet"), "stderr after USR2\n"))
	r.same(before)
}

// TestOutputFlood: a process writes to stdout as fast as it can. Its
// output is logged; the daemon, which never touches a process's output,
// stays responsive (status answers, another process is restarted as
// usual) and its memory does not grow with the flood, nor does the init's.
func TestOutputFlood(t *testing.T) {
	const flood = 64 << 20 // bytes to see logged
	r := newRig(t)
	r.job("web", tp{name: "flood", behaviour: "flood"}, tp{name: "steady", behaviour: "serve"})
	r.up(0)
	r.rep.Expect(t, "flooding")
	r.rep.Expect(t, "ready")
	daemonRSS := rss(t, r.daemon.cmd.Process.Pid)
	init := r.once("web", "flood").PID
	initRSS := rss(t, init)
	log := r.layout.StdoutLog("web", "flood")
	testproc.WaitUntil(t, r.layout.LogDir("web"), func() bool {
		fi, err := os.Stat(log)
		return err == nil && fi.Size() >= flood
	})

	start := time.Now()
	steady := r.once("web", "steady")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("status took %s during the flood", took)
	}
	unix.Kill(steady.ExecPID, unix.SIGKILL)
	r.rep.Expect(t, "ready")
	r.waitFor("steady restarted", func() bool {
		st := r.status("web", "steady")
		return st.State == "running" && st.ExecPID != steady.ExecPID && st.Restarts == 1
	})
	if st := r.once("web", "flood"); st.Restarts != 0 {
		t.Fatalf("the flooding process was restarted: %+v", st)
	}
	const slack = 32 << 20
	if now := rss(t, r.daemon.cmd.Process.Pid); now > daemonRSS+slack {
		t.Errorf("the daemon grew from %d to %d bytes during a %d-byte flood", daemonRSS, now, flood)
	}
	if now := rss(t, init); now > initRSS+slack {
		t.Errorf("the init grew from %d to %d bytes during a %d-byte flood", initRSS, now, flood)
	}
	b := make([]byte, 1024)
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.ReadAt(b, flood/2); err != nil || strings.Trim(string(b), "x\n") != "" {
		t.Fatalf("the log holds something else than the flood: %v %q", err, b[:64])
	}
}

// rss is the resident memory of pid, in bytes.
func rss(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS for %d", pid)
	return 0
}

// TestDoubleForkAndExit: a process double-forks (the middle process exits
// at once, reaped by the program itself, so the grandchild, in a session of
// its own and ignoring TERM and QUIT, is orphaned). The orphan comes back
// to the process's init (a subreaper), and when the executable ends the
// init kills the orphan: nothing the process started outlives it, and no
// zombie is left below the daemon.
func TestDoubleForkAndExit(t *testing.T) {
	r := newRig(t)
	r.job("web", tp{name: "forker", behaviour: "doublefork"})
	r.up(0)
	grand := r.rep.Expect(t, "grandchild").Fields()[0]
	r.rep.Expect(t, "ready") // the grandchild's and the executable's, in any order
	r.rep.Expect(t, "ready")
	before := r.once("web", "forker")
	if ppid, _ := procinit.ParentOf(grand); ppid != before.PID {
		t.Fatalf("the orphan %d has parent %d, not the init %d", grand, ppid, before.PID)
	}
	r.noZombies()
	unix.Kill(before.ExecPID, unix.SIGTERM) // the executable ends; its orphan ignores TERM
	r.waitGone(grand)
	r.rep.Expect(t, "grandchild") // the restarted instance
	r.waitFor("forker restarted", func() bool { return r.status("web", "forker").Restarts == 1 })
	r.noZombies()
}

package faults

import (
	"os"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestJobDirRemoved: a job's directory vanishes while its process runs.
// The process keeps running and stays supervised (its executable, like a
// BOSH package's, lives elsewhere); the next reload finds no bpm.yml, which
// is how a removed job looks, and stops the process cleanly, saying so in
// its result. Other jobs are not touched.
func TestJobDirRemoved(t *testing.T) {
	r := newRig(t)
	r.job("web", tp{name: "gone", behaviour: "serve"})
	r.job("api", tp{name: "steady", behaviour: "serve"})
	r.up(2)
	gone, steady := r.once("web", "gone"), r.once("api", "steady")
	if err := os.RemoveAll(r.layout.JobDir("web")); err != nil {
		t.Fatal(err)
	}
	unix.Kill(gone.ExecPID, unix.SIGUSR1)
	if ln := r.rep.Expect(t, "signal"); ln.PID != gone.ExecPID || ln.Text != "signal USR1" {
		t.Fatalf("the process without its job directory: %+v", ln)
	}
	r.same(gone)
	res, err := r.client().Reload(t.Context())
	if err != nil || !slices.Equal(res.Stopped, []string{"web/gone"}) || len(res.Restarted)+len(res.Started) != 0 {
		t.Fatalf("reload: %v %+v", err, res)
	}
	if ln := r.rep.Expect(t, "signal"); ln.PID != gone.ExecPID || ln.Text != "signal TERM" {
		t.Fatalf("the stop: %+v", ln)
	}
	r.waitGone(gone.PID)
	if got := r.instances("web", "gone"); len(got) != 0 || r.pidFile("web", "gone") != 0 || r.status("web", "gone").Job != "" {
		t.Fatalf("after the reload: instances %v, pid file %d, status %+v", got, r.pidFile("web", "gone"), r.status("web", "gone"))
	}
	r.same(steady) // the other job is not touched
	r.noZombies()
}

// TestLogDirRemoved: a job's log directory vanishes while its process
// writes. The process keeps running and is never blocked by its output
// (what it writes meanwhile cannot be logged); a reopen (SIGHUP to the
// daemon) while the directory is missing changes nothing, and once the
// directory is back, its output is logged into new files there (at the
// latest after the next reopen).
func TestLogDirRemoved(t *testing.T) {
	r := newRig(t)
	r.job("web", tp{name: "talker", behaviour: "serve"})
	r.up(1)
	before := r.once("web", "talker")
	stdout, stderr := r.layout.StdoutLog("web", "talker"), r.layout.StderrLog("web", "talker")
	say := func() {
		t.Helper()
		unix.Kill(before.ExecPID, unix.SIGUSR2)
		r.rep.Expect(t, "printed")
	}
	if err := os.RemoveAll(r.layout.LogDir("web")); err != nil {
		t.Fatal(err)
	}
	say() // it writes, and is not blocked
	reopen := func() {
		t.Helper()
		r.daemon.cmd.Process.Signal(unix.SIGHUP)
		r.expectLog("reopened logs")
	}
	reopen()
	say()
	if err := os.MkdirAll(r.layout.LogDir("web"), 0o750); err != nil {
		t.Fatal(err)
	}
	reopen()
	say()
	for _, f := range []string{stdout, stderr} {
		testproc.WaitUntil(t, r.layout.LogDir("web"), testproc.FileContains(f, "after USR2\n"))
	}
	r.same(before)
}

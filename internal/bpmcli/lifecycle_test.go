package bpmcli_test

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/testproc"
)

const notRunning = "Error: process is not running or could not be found\n"

func webJob(r *root) { r.job("web", tp{name: "web", behaviour: "serve"}) }

// TestDrainScriptContract drives bpm the way drain scripts and monit do.
func TestDrainScriptContract(t *testing.T) {
	modes(t, webJob, func(t *testing.T, r *root) {
		r.must("start", "web")
		exe := r.rep.Expect(t, "ready")
		pidPath := r.layout.PidFile("web", "web")
		initPID := r.pidFile("web", "web")
		// gorouter's drain: kill -USR1 $(cat PIDFILE) reaches the executable.
		if res := r.sh("kill -USR1 $(cat " + pidPath + ")"); res.code != 0 {
			t.Fatalf("kill: %+v", res)
		}
		r.rep.Expect(t, "signal USR1")
		// haproxy's drain: pgrep -P $(cat PIDFILE) finds the executable.
		if res := r.sh("pgrep -P $(cat " + pidPath + ")"); strings.TrimSpace(res.out) != strconv.Itoa(exe.PID) {
			t.Fatalf("pgrep -P found %q, executable is %d", res.out, exe.PID)
		}
		if out := r.must("pid", "web"); out != fmt.Sprintf("%d\n", initPID) {
			t.Fatalf("bpm pid printed %q, pid file holds %d", out, initPID)
		}
		if out := r.must("running", "web"); out != "yes\n" {
			t.Fatalf("running printed %q", out)
		}
		// A drain script's stop returns once nothing of the process is left.
		res := r.sh("bpm stop web -p web\necho stopped")
		if res.code != 0 || res.out != "stopped\n" {
			t.Fatalf("stop: %+v", res)
		}
		for _, pid := range []int{initPID, exe.PID} {
			if !gone(pid) {
				t.Fatalf("pid %d is still there after bpm stop returned", pid)
			}
		}
		if _, err := os.Stat(pidPath); !os.IsNotExist(err) {
			t.Fatalf("pid file after stop: %v", err)
		}
		if res := r.bpm("pid", "web"); res.code != 1 || res.err != notRunning || res.out != "" {
			t.Fatalf("pid of a stopped process: %+v", res)
		}
		if res := r.bpm("running", "web"); res.code != 1 || res.out != "no\n" || res.err != "" {
			t.Fatalf("running of a stopped process: %+v", res)
		}
		// Stopping what is stopped is fine, and so is stopping an unknown job.
		r.must("stop", "web")
		r.must("stop", "nosuchjob")
	})
}

func TestStartTwiceLeavesOneProcess(t *testing.T) {
	modes(t, webJob, func(t *testing.T, r *root) {
		res := r.sh("bpm start web\nbpm start web -p web\nbpm pid web")
		if res.code != 0 {
			t.Fatalf("%+v", res)
		}
		if got := r.inits("web", "web"); len(got) != 1 || strconv.Itoa(got[0])+"\n" != res.out {
			t.Fatalf("inits %v, bpm pid said %q", got, res.out)
		}
	})
}

// TestStopAndStartAtOnce is monit restart: a start issued while a stop is
// under way waits for the stop (bpm's lock) and then starts afresh.
func TestStopAndStartAtOnce(t *testing.T) {
	setup := func(r *root) {
		r.job("web", tp{name: "web", behaviour: "serve", env: []string{testproc.EnvIgnore + "=TERM"}})
	}
	modes(t, setup, func(t *testing.T, r *root) {
		r.must("start", "web")
		exe := r.rep.Expect(t, "ready")
		old := r.pidFile("web", "web")
		stop := r.command("stop", "web")
		if err := stop.Start(); err != nil {
			t.Fatal(err)
		}
		r.rep.Expect(t, "signal TERM") // the stop holds the lock now
		opened := watchOpen(t, r.lockPath("web.web"))
		start := r.command("start", "web")
		if err := start.Start(); err != nil {
			t.Fatal(err)
		}
		select { // the start is at the lock
		case <-opened:
		case <-time.After(testproc.Guard):
			t.Fatal("the start never opened the lock")
		}
		// End the stop's wait (the executable ignores TERM) instead of
		// waiting 15 s for its SIGQUIT.
		unix.Kill(exe.PID, unix.SIGKILL)
		for _, c := range []*exec.Cmd{stop, start} {
			if err := c.Wait(); err != nil {
				t.Fatalf("%s: %v", c.Args, err)
			}
		}
		got := r.inits("web", "web")
		if len(got) != 1 || got[0] == old || got[0] != r.pidFile("web", "web") {
			t.Fatalf("inits %v (old %d): want exactly one new one", got, old)
		}
		// Take the new one down the same way, so that the cleanup does not
		// sit out the 15 s before SIGQUIT.
		exe = r.rep.Expect(t, "ready")
		stop = r.command("stop", "web")
		if err := stop.Start(); err != nil {
			t.Fatal(err)
		}
		r.rep.Expect(t, "signal TERM")
		unix.Kill(exe.PID, unix.SIGKILL)
		if err := stop.Wait(); err != nil {
			t.Fatal(err)
		}
	})
}

// lockPath is bpm's lock file for an encoded JOB.PROC id.
func (r *root) lockPath(id string) string {
	return r.layout.Root() + "/data/bpm/locks/job-" + strings.ReplaceAll(id, ".", ".2e") + ".lock"
}

// watchOpen returns a channel that is closed when path is next opened.
func watchOpen(t *testing.T, path string) <-chan struct{} {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_OPEN); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	ch := make(chan struct{})
	go func() {
		defer unix.Close(fd)
		buf := make([]byte, 4096)
		unix.Read(fd, buf) // blocks until the first event
		close(ch)
	}()
	return ch
}

// TestErrandRun: bpm run passes the exit code through, and the output goes
// both to the terminal and to the logs. No pid file exists meanwhile.
func TestErrandRun(t *testing.T) {
	setup := func(r *root) {
		pid := r.layout.PidFile("errand", "errand")
		r.errand("errand", `echo "out $KEY"; echo "err $OTHER" >&2; test -e `+pid+` && echo "pid file present"; exit 3`)
	}
	modes(t, setup, func(t *testing.T, r *root) {
		res := r.sh("set +e\nbpm run errand -e KEY=val --env=OTHER=x=y\necho \"code $?\"")
		if res.out != "out val\ncode 3\n" {
			t.Fatalf("stdout %q", res.out)
		}
		if res.err != "err x=y\nError: failed to run job-process: exit status 3 (exit status 3)\n" {
			t.Fatalf("stderr %q", res.err)
		}
		for path, want := range map[string]string{
			r.layout.StdoutLog("errand", "errand"): "out val\n",
			r.layout.StderrLog("errand", "errand"): "err x=y\n",
		} {
			if got, _ := os.ReadFile(path); string(got) != want {
				t.Errorf("%s holds %q, want %q", path, got, want)
			}
		}
	})
}

func TestTermQuitAndLogs(t *testing.T) {
	setup := func(r *root) {
		r.job("web", tp{name: "web", behaviour: "serve", env: []string{testproc.EnvIgnore + "=QUIT"}})
	}
	modes(t, setup, func(t *testing.T, r *root) {
		r.must("start", "web")
		exe := r.rep.Expect(t, "ready")
		r.must("quit", "web")
		r.rep.Expect(t, "signal QUIT")
		unix.Kill(exe.PID, unix.SIGUSR2) // prints a line to each log
		r.rep.Expect(t, "printed")
		// The child has written; the init copies into the logs on its own time.
		testproc.WaitUntil(t, r.layout.LogDir("web"), testproc.FileEndsWith(r.layout.StdoutLog("web", "web"), "stdout after USR2\n"))
		testproc.WaitUntil(t, r.layout.LogDir("web"), testproc.FileEndsWith(r.layout.StderrLog("web", "web"), "stderr after USR2\n"))
		if out := r.must("logs", "web", "-n", "1"); out != "stdout after USR2\n\n" {
			t.Fatalf("logs -n 1: %q", out)
		}
		if out := r.must("logs", "web", "-e"); out != "stderr after USR2\n\n" {
			t.Fatalf("logs -e: %q", out)
		}
		if out := r.must("logs", "-aq", "web", "--lines=1"); out != "stdout after USR2\nstderr after USR2\n\n" {
			t.Fatalf("logs -aq: %q", out)
		}
		init := r.pidFile("web", "web")
		r.must("term", "web")
		r.rep.Expect(t, "signal TERM")
		waitGone(t, exe.PID)
		waitGone(t, init)
		if res := r.bpm("quit", "web"); res.code != 1 || res.err != notRunning {
			t.Fatalf("quit of a stopped process: %+v", res)
		}
		if res := r.bpm("logs", "web", "-p", "other"); res.code != 1 || res.err != "Error: logs not found\n" {
			t.Fatalf("logs of a process without logs: %+v", res)
		}
	})
}

// TestAfterAKill: what bpm-release's suite checks with "runc kill": once a
// process started without a daemon has been killed, pid and trace say it
// is not running, list shows it stopped, and start starts it again.
func TestAfterAKill(t *testing.T) {
	r := newRoot(t)
	webJob(r)
	r.must("start", "web")
	exe := r.rep.Expect(t, "ready")
	init := r.pidFile("web", "web")
	unix.Kill(init, unix.SIGKILL)
	waitGone(t, init)
	waitGone(t, exe.PID)
	for _, cmd := range []string{"pid", "trace"} {
		if res := r.bpm(cmd, "web"); res.code != 1 || res.err != notRunning {
			t.Fatalf("%s after the kill: %+v", cmd, res)
		}
	}
	if out := r.must("list"); !regexp.MustCompile(`\nweb +- +stopped\n`).MatchString(out) {
		t.Fatalf("list after the kill:\n%s", out)
	}
	r.must("start", "web")
	if again := r.rep.Expect(t, "ready"); again.PID == exe.PID || r.pidFile("web", "web") == init {
		t.Fatal("start did not start a new instance")
	}
}

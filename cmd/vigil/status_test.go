package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// runIn runs vigil on c's root and returns stdout, stderr and the status.
func (c *cli) runIn(args ...string) (string, string, int) {
	c.t.Helper()
	return runSplit(c.t, append(args, "--root", c.root)...)
}

// TestStatusExitAndFilter: status exits 3 when a process that should run
// does not, or a configuration has errors; JOB, JOB/PROC and -p narrow it;
// an unknown one is 4.
func TestStatusExitAndFilter(t *testing.T) {
	c := newCLI(t)
	c.daemon()
	if _, _, code := c.runIn("status"); code != 0 {
		t.Fatalf("all running: %d", code)
	}
	if _, _, code := c.runIn("stop", "web", "-p", "a"); code != 0 {
		t.Fatal("stop failed")
	}
	// Stopped on purpose: not wanted up, so not a failure.
	if _, _, code := c.runIn("status"); code != 0 {
		t.Fatalf("a process stopped on purpose: %d", code)
	}
	c.tr.Config("broken", "processes:\n- name: x\n  executable: /nonexistent\n")
	if out, errs, code := c.runIn("reload"); code != 1 || !strings.Contains(errs, "the configuration of broken was rejected") {
		t.Fatalf("reload with a broken job: %d %q %q", code, out, errs)
	}
	for _, tc := range []struct {
		args []string
		code int
		rows []string // the JOB/PROCESS of each row shown
	}{
		{[]string{"status"}, 3, []string{"web a", "web b"}},
		{[]string{"status", "web"}, 0, []string{"web a", "web b"}},
		{[]string{"status", "web/b"}, 0, []string{"web b"}},
		{[]string{"status", "web", "-p", "a"}, 0, []string{"web a"}},
		{[]string{"status", "broken"}, 3, nil},
		{[]string{"status", "nope"}, 4, nil},
		{[]string{"status", "web/zzz"}, 4, nil},
	} {
		out, errs, code := c.runIn(tc.args...)
		var rows []string
		for _, l := range strings.Split(out, "\n")[1:] {
			if f := strings.Fields(l); len(f) > 2 && f[0] == "web" {
				rows = append(rows, f[0]+" "+f[1])
			}
		}
		if code != tc.code || (code != 4 && strings.Join(rows, ",") != strings.Join(tc.rows, ",")) {
			t.Errorf("%v: %d %q\n%s%s", tc.args, code, rows, out, errs)
		}
	}
	out, _, code := c.runIn("status", "--json", "broken")
	var st control.Status
	if code != 3 || json.Unmarshal([]byte(out), &st) != nil || len(st.Processes) != 0 || len(st.Problems) == 0 || st.Problems[0].Job != "broken" {
		t.Fatalf("status --json broken: %d %s", code, out)
	}
	// A process that should run and does not: 3.
	os.RemoveAll(filepath.Join(c.root, "jobs", "broken"))
	// Its backoff keeps it down once it has exited; the start's wait for an
	// hour's uptime ends at that exit.
	c.writeJob("processes:\n- name: a\n  executable: /bin/false\n  restart: {backoff: {initial: 1h, max: 1h}}\n- name: b\n  executable: " + filepath.Join(c.root, "packages", "web", "bin", "serve") + "\n")
	c.runIn("reload")
	events := c.events()
	if _, errs, code := c.runIn("start", "web", "-p", "a", "--wait", "running", "--uptime", "1h", "--timeout", "60s"); code == 0 || !strings.Contains(errs, "exited") {
		t.Fatalf("start of a crash-looping process: %d %q", code, errs)
	}
	// The first restart is immediate: the status is read once the backoff
	// holds the process down, not while it runs again.
	c.awaitEvent(events, "a", control.EventBackoff)
	if _, _, code := c.runIn("status", "web/a"); code != 3 {
		t.Fatalf("a crash-looping process: %d", code)
	}
}

// TestReloadDryRunAndRejected: --dry-run says what a reload would do and
// does nothing; a reload that rejects a configuration exits 1 naming it.
func TestReloadDryRunAndRejected(t *testing.T) {
	c := newCLI(t)
	c.daemon()
	before := c.status()
	script := filepath.Join(c.root, "packages", "web", "bin", "serve")
	c.writeJob("processes:\n- name: a\n  executable: " + script + "\n  args: [one]\n- name: b\n  executable: " + script + "\n  args: [two]\n")
	out, _, code := c.runIn("reload", "--dry-run")
	if code != 0 || out != "would restart web/b\n1 unchanged\n" {
		t.Fatalf("reload --dry-run: %d %q", code, out)
	}
	if after := c.status(); after.Processes[1].PID != before.Processes[1].PID {
		t.Fatal("the dry run restarted a process")
	}
	out, _, code = c.runIn("reload", "--json", "-n")
	var res control.ReloadResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || !res.DryRun || len(res.Restarted) != 1 {
		t.Fatalf("reload --json -n: %d %s", code, out)
	}
	c.writeJob("processes:\n- name: a\n  executable: " + script + "\n  shutdown_signal: KILL\n")
	out, errs, code := c.runIn("reload")
	if code != 1 || out != "2 unchanged\n" || !strings.Contains(errs, "bpm.yml:4: processes[0].shutdown_signal:") ||
		!strings.HasSuffix(errs, "vigil: the configuration of web was rejected: each keeps what it runs (its previous configuration, or nothing)\n") {
		t.Fatalf("reload of a broken job: %d %q %q", code, out, errs)
	}
	if after := c.status(); after.Processes[1].State != "running" || after.Processes[0].PID != before.Processes[0].PID {
		t.Fatalf("the rejected configuration harmed what runs: %+v", after.Processes)
	}
}

// TestStartFailsWithTheLastExitAndLogs: a process that dies right after
// its exec fails start (exit 1), with its last exit and the last lines of
// its logs; an unknown job is 5; a wait that runs out is 124; Ctrl-C is
// 130 and leaves the start to the daemon.
func TestStartFailsWithTheLastExitAndLogs(t *testing.T) {
	c := newCLI(t)
	dying := filepath.Join(c.root, "packages", "web", "bin", "dying")
	c.tr.Write(dying, "#!/bin/sh\necho 'cannot bind :8080: address in use' >&2\nexit 3\n", 0o755)
	flag := filepath.Join(c.root, "ready")
	serve := filepath.Join(c.root, "packages", "web", "bin", "serve")
	c.writeJob("processes:\n- name: a\n  executable: " + dying + "\n- name: b\n  executable: " + serve +
		"\n  health:\n    readiness:\n      exec: [/bin/test, -e, " + flag + "]\n      period: 100ms\n")
	c.daemon()
	out, errs, code := c.runIn("start", "web", "-p", "a", "--uptime", "1h")
	if code != 1 || !strings.Contains(errs, "vigil: web/a exited after it started: exited with code 3") ||
		!strings.Contains(errs, "web/a: last exit: exited with code 3") ||
		!regexp.MustCompile(`web/a: the last lines of `+regexp.QuoteMeta(filepath.Join(c.root, "sys", "log", "web", "a.stderr.log"))+
			`:\n  cannot bind :8080: address in use(   \(\d+ times in a row\))?\n`).MatchString(errs) {
		t.Fatalf("start of a dying process: %d %q\n%s", code, out, errs)
	}
	if _, errs, code := c.runIn("start", "nope"); code != 5 || !strings.HasPrefix(errs, "vigil: ") {
		t.Fatalf("start of an unknown job: %d %q", code, errs)
	}
	if _, errs, code := c.runIn("start", "web", "-p", "b", "--timeout", "300ms", "--uptime", "0"); code != 124 ||
		!strings.Contains(errs, "web/b not ready; readiness probe failing") || !strings.Contains(errs, "(the daemon goes on)") {
		t.Fatalf("a wait that runs out: %d %q", code, errs)
	}

	// Ctrl-C while waiting: 130, and the daemon goes on: once the probe
	// passes, b is ready without another start.
	events := c.events()
	cmd := exec.Command(vigilBin, "restart", "web", "-p", "b", "--timeout", "0", "--root", c.root)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.awaitEvent(events, "b", control.EventStarted)
	c.awaitEvent(events, "b", control.EventProbeFailed) // the restart is waiting on the probe
	cmd.Process.Signal(syscall.SIGINT)
	msg, _ := bufio.NewReader(stderr).ReadString('\n')
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 ||
		msg != "vigil: interrupted: the daemon goes on with the restart of web/b (vigil status shows where it stands)\n" {
		t.Fatalf("Ctrl-C: %v %q", err, msg)
	}
	os.WriteFile(flag, nil, 0o644)
	c.awaitEvent(events, "b", control.EventReady)
	if p := c.proc("b"); p.Restarts != 0 || !p.Ready {
		t.Fatalf("after the interrupted restart: %+v", p)
	}
}

// events subscribes to the daemon's events until the test ends.
func (c *cli) events() <-chan control.Event {
	c.t.Helper()
	ch, err := control.NewClient(filepath.Join(c.root, "sys", "run", "vigil", "vigil.sock")).Events(c.t.Context(), 0)
	if err != nil {
		c.t.Fatal(err)
	}
	return ch
}

// awaitEvent reads events until one of kind for web/proc.
func (c *cli) awaitEvent(events <-chan control.Event, proc, kind string) control.Event {
	c.t.Helper()
	guard := time.After(testproc.Guard)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				c.t.Fatalf("the event stream ended before %s of %s", kind, proc)
			}
			if ev.Job == "web" && ev.Process == proc && ev.Kind == kind {
				return ev
			}
		case <-guard:
			c.t.Fatalf("no %s event for web/%s", kind, proc)
		}
	}
}

// TestStopShowsTheLadderOnATerminal runs stop with stderr on a terminal:
// each step of the stop is printed as it happens.
func TestStopShowsTheLadderOnATerminal(t *testing.T) {
	c := newCLI(t)
	c.daemon()
	tty := openPTY(t)
	cmd := exec.Command(vigilBin, "stop", "web", "-p", "a", "--root", c.root)
	cmd.Stderr = tty.slave
	out, err := cmd.Output()
	tty.slave.Close()
	if err != nil || string(out) != "web/a: stopped\n" {
		t.Fatalf("stop: %v %q", err, out)
	}
	shown := tty.read(t)
	for _, want := range []string{`web/a stopping`, `web/a exited stopped by SIGTERM after [0-9.]+m?s \(exited with code 0\)`, `web/a stopped`} {
		if !regexp.MustCompile(want).MatchString(shown) {
			t.Errorf("the terminal lacks %q:\n%s", want, shown)
		}
	}
}

// TestLogsFollowPrefixesLines: following several files prefixes each line
// with its job and process instead of tail's headers.
func TestLogsFollowPrefixesLines(t *testing.T) {
	c := newCLI(t)
	c.daemon()
	dir := filepath.Join(c.root, "sys", "log", "web")
	a, b := filepath.Join(dir, "a.stdout.log"), filepath.Join(dir, "b.stdout.log")
	testproc.WaitUntil(t, dir, func() bool { return testproc.FileHolds(a, "started one\n")() && testproc.FileHolds(b, "started\n")() })
	if out, _, code := c.runIn("logs", "web", "--prefix"); code != 0 || out != "web/a | started one\nweb/b | started\n" {
		t.Fatalf("logs --prefix: %d %q", code, out)
	}
	lines, cmd, _ := c.streamLines("logs", "web", "-f", "-n", "1")
	defer cmd.Process.Kill()
	got := map[string]bool{}
	for range 2 {
		l, ok := nextLine(t, lines)
		if !ok {
			t.Fatal("logs -f ended")
		}
		got[l] = true
	}
	if !got["web/a | started one"] || !got["web/b | started"] {
		t.Fatalf("logs -f of two files: %v", got)
	}
	c.runIn("signal", "web", "-p", "a", "HUP")
	if l, _ := nextLine(t, lines); l != "web/a | got HUP" {
		t.Fatalf("a followed line: %q", l)
	}
	out, _, _ := c.runIn("logs", "web", "-p", "b", "--json")
	var rec struct{ Job, Process, Stream, Line string }
	if json.Unmarshal([]byte(out), &rec) != nil || rec != (struct{ Job, Process, Stream, Line string }{"web", "b", "stdout", "started"}) {
		t.Fatalf("logs --json: %q", out)
	}
}

// TestDaemonRefusesWhatCannotWork: a missing root, or a systemd back end
// without systemd, is refused at once with the reason.
func TestDaemonRefusesWhatCannotWork(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nowhere")
	if _, errs, code := runSplit(t, "daemon", "--root", missing); code != 1 ||
		errs != "vigil: the BOSH root "+missing+" does not exist: give --root DIR or VIGIL_ROOT\n" {
		t.Fatalf("missing root: %d %q", code, errs)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatal("the daemon created the root")
	}
	if _, errs, code := runSplit(t, "monit", "-I", "-c", filepath.Join(missing, "bosh", "etc", "monitrc")); code != 1 ||
		!strings.Contains(errs, "no such file or directory") {
		t.Fatalf("monit -I on a missing root: %d %q", code, errs)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatal("monit -I created the root")
	}
	offline := filepath.Join(t.TempDir(), "systemctl")
	os.WriteFile(offline, []byte("#!/bin/sh\necho offline\nexit 1\n"), 0o755)
	if _, errs, code := runSplit(t, "daemon", "--root", t.TempDir(), "--backend", "systemd", "--systemctl", offline); code != 1 ||
		!strings.Contains(errs, `is-system-running says "offline": use --backend native`) {
		t.Fatalf("systemd not running: %d %q", code, errs)
	}
	if _, errs, code := runSplit(t, "daemon", "--root", t.TempDir(), "--backend", "systemd", "--systemctl", "/nonexistent/systemctl"); code != 1 ||
		!strings.Contains(errs, "the systemd back end needs systemctl") {
		t.Fatalf("no systemctl: %d %q", code, errs)
	}
}

// TestPersonalitiesTakeRoot: bpm and monit take --root like vigil's own
// commands, and keep their own exit statuses.
func TestPersonalitiesTakeRoot(t *testing.T) {
	c := newCLI(t)
	c.daemon()
	if out, _, code := runSplit(t, "bpm", "--root", c.root, "pid", "web", "-p", "a"); code != 0 || strings.TrimSpace(out) == "" {
		t.Fatalf("vigil bpm --root pid: %d %q", code, out)
	}
	if out, _, code := runSplit(t, "--root", c.root, "bpm", "pid", "web", "-p", "a"); code != 0 || strings.TrimSpace(out) == "" {
		t.Fatalf("vigil --root DIR bpm pid: %d %q", code, out)
	}
	if _, _, code := runSplit(t, "--root="+c.root, "status", "web"); code != 0 {
		t.Fatalf("vigil --root=DIR status: %d", code)
	}
	if _, errs, code := runSplit(t, "bpm", "pid", "nope", "--root", c.root); code != 1 || !strings.HasPrefix(errs, "Error: ") {
		t.Fatalf("bpm's own exit status: %d %q", code, errs)
	}
	link := filepath.Join(t.TempDir(), "bpm")
	os.Symlink(vigilBin, link)
	if out, err := exec.Command(link, "list", "--root="+c.root).Output(); err != nil || !strings.Contains(string(out), "web.a") {
		t.Fatalf("bpm --root= list: %v %q", err, out)
	}
	if out, _, code := runSplit(t, "monit", "--root", c.root, "-V"); code != 0 || !strings.Contains(out, "5.2.5") {
		t.Fatalf("vigil monit --root -V: %d %q", code, out)
	}
}

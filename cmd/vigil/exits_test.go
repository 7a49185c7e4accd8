package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/testproc"
	"github.com/vigil-bosh/vigil/internal/testroot"
)

// exitCase runs one documented exit status of one command for real.
type exitCase struct {
	cmd  string // as in commands(): "start", "systemd generate"
	code int
	// args (after the command's name, --root added unless the command
	// reads none) run against root; or run runs the case itself.
	args []string
	root string
	run  func(t *testing.T) int
}

// TestExitStatuses runs every command's every documented exit status
// (its help's, exitsOf) and checks that the command gives it; a status a
// command documents without a case here fails the test, so the help, the
// table and the behaviour cannot drift apart.
func TestExitStatuses(t *testing.T) {
	f := newExitFixture(t)
	covered := map[string]bool{}
	for _, c := range f.cases() {
		key := c.cmd + " " + strconv.Itoa(c.code)
		covered[key] = true
		t.Run(strings.ReplaceAll(key, " ", "_"), func(t *testing.T) {
			var got int
			var out string
			if c.run != nil {
				got = c.run(t)
			} else {
				got, out = f.vigil(t, c.root, c.cmd, c.args...)
			}
			if got != c.code {
				t.Errorf("vigil %s %s: exit %d, want %d\n%s", c.cmd, strings.Join(c.args, " "), got, c.code, out)
			}
		})
	}
	for _, s := range visibleCommands() {
		if s.own != nil {
			continue // bpm and monit: their own statuses, tested with them
		}
		for _, e := range exitsOf(&s) {
			if !covered[s.name+" "+strconv.Itoa(e.code)] {
				t.Errorf("vigil %s documents exit %d (%s), which no case here runs", s.name, e.code, e.meaning)
			}
		}
	}
}

// exitFixture holds the roots the cases run against: main, a daemon's
// root with a job of every kind a failure needs; clean, a daemon's root
// without a problem; idle, a root no daemon serves.
type exitFixture struct {
	main, clean, idle string
	mainCLI           *cli
	cleanDaemon       *exec.Cmd
}

// The jobs of the main root: web (a and b, which run), crash (exits at
// once), slow (never ready; its stop takes a second) and bad (an invalid
// bpm.yml).
func newExitFixture(t *testing.T) *exitFixture {
	c := newCLI(t)
	closed := closedPort(t)
	c.tr.Config("crash", "processes:\n- name: p\n  executable: /bin/sh\n  args: [-c, 'echo crashing >&2; exit 1']\n")
	slow := filepath.Join(c.root, "packages", "web", "bin", "slow")
	c.tr.Write(slow, "#!/bin/sh\ntrap 'sleep 1; exit 0' TERM\nwhile :; do sleep 1000 & wait $!; done\n", 0o755)
	c.tr.Config("slow", fmt.Sprintf("processes:\n- name: p\n  executable: %s\n  health:\n    readiness: {tcp: {port: %d}, period: 1s}\n", slow, closed))
	c.tr.Config("bad", "processes:\n- name: p\n  executable: /bin/true\n  limits: {memory: lots}\n")
	c.daemon()

	clean := newCLI(t)
	f := &exitFixture{main: c.root, clean: clean.root, idle: testroot.New(t, "").Layout.Root(), mainCLI: c}
	f.cleanDaemon = clean.daemon()
	return f
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// vigil runs `vigil CMD ARGS --root ROOT` (no --root for a command that
// reads none, or for root "") and returns its status and output.
func (f *exitFixture) vigil(t *testing.T, root, cmd string, args ...string) (int, string) {
	t.Helper()
	argv := append(strings.Fields(cmd), args...)
	if s, _ := lookup(strings.Fields(cmd)); s != nil && !s.noRoot && root != "" {
		argv = append(argv, "--root", root)
	}
	run := exec.Command(vigilBin, argv...)
	run.Env = append(os.Environ(), "VIGIL_ISOLATION=off")
	out, err := run.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// newRoot is a root no daemon serves, with files written (path relative
// to the root: content; a path under bin/ is executable).
func newRoot(t *testing.T, files map[string]string) string {
	r := testroot.New(t, "")
	for path, content := range files {
		mode := os.FileMode(0o644)
		if strings.Contains(path, "/bin/") {
			mode = 0o755
		}
		r.Write(filepath.Join(r.Layout.Root(), path), content, mode)
	}
	return r.Layout.Root()
}

func (f *exitFixture) cases() []exitCase {
	m, clean, idle := f.main, f.clean, f.idle
	missing := filepath.Join(idle, "missing")
	var cs []exitCase
	add := func(cmd string, code int, root string, args ...string) {
		cs = append(cs, exitCase{cmd: cmd, code: code, root: root, args: args})
	}
	run := func(cmd string, code int, fn func(t *testing.T) int) {
		cs = append(cs, exitCase{cmd: cmd, code: code, run: fn})
	}
	// Every command: an unknown flag is a usage error.
	for _, s := range visibleCommands() {
		if s.own == nil {
			add(s.name, exitUsage, m, "--bogus")
		}
	}

	add("status", exitOK, m, "web")
	add("status", exitNotRunning, m, "bad") // its configuration has errors
	add("status", exitUnknown, m, "nope")
	add("status", exitNoDaemon, idle)

	run("top", exitOK, func(t *testing.T) int {
		s := startOnPTY(t, nil, "top", "--root", m)
		s.waitFor(`web/a`)
		s.keys("q")
		return s.end()
	})
	add("top", exitFailed, m) // not on a terminal
	add("top", exitNoDaemon, idle)

	run("events", exitOK, func(t *testing.T) int { return f.interruptAfterLine(t, m, "events", "-n", "1") })
	add("events", exitNoDaemon, idle)
	// events 1 comes last: it ends the clean root's daemon.

	// The actions, in an order that leaves each process as the next case wants it.
	for _, a := range []string{"start", "restart"} {
		add(a, exitOK, m, "web")
		add(a, exitFailed, m, "crash")
		add(a, exitNotFound, m, "nope")
		add(a, exitConfig, m, "bad")
		add(a, exitNoDaemon, idle, "web")
		add(a, exitTimeout, m, "slow", "--timeout", "300ms")
		run(a, exitInterrupted, func(t *testing.T) int { return f.interruptAfterAction(t, a, "slow") })
	}
	run("stop", exitInterrupted, func(t *testing.T) int { return f.interruptAfterAction(t, "stop", "slow") })
	add("stop", exitOK, m, "web", "-p", "b")
	run("stop", exitFailed, func(t *testing.T) int { return f.refusingDaemon(t, "stop", "web") })
	add("stop", exitNotFound, m, "web", "-p", "nope")
	add("stop", exitConfig, m, "bad")
	add("stop", exitNoDaemon, idle, "web")

	add("signal", exitOK, m, "web", "-p", "a", "HUP")
	add("signal", exitFailed, m, "web", "-p", "b", "HUP") // stopped above
	add("signal", exitNotFound, m, "nope", "-p", "p", "HUP")
	add("signal", exitConfig, m, "bad", "-p", "p", "HUP")
	add("signal", exitNoDaemon, idle, "web", "-p", "a", "HUP")

	add("logs", exitOK, m, "web")
	add("logs", exitFailed, m, "bad") // configured, never ran: no log files
	add("logs", exitUnknown, m, "nope")

	add("reload", exitOK, clean)
	add("reload", exitFailed, m) // bad's configuration is rejected
	add("reload", exitNoDaemon, idle)

	run("check", exitOK, func(t *testing.T) int {
		r := newRoot(t, map[string]string{"jobs/j/config/bpm.yml": "processes:\n- name: p\n  executable: /bin/true\n"})
		code, _ := f.vigil(t, "", "check", filepath.Join(r, "jobs/j/config/bpm.yml"))
		return code
	})
	run("check", exitFailed, func(t *testing.T) int {
		code, _ := f.vigil(t, "", "check", filepath.Join(m, "jobs/bad/config/bpm.yml"))
		return code
	})

	run("demo", exitOK, func(t *testing.T) int {
		return f.interruptAfterLine(t, "", "demo", "--http", "127.0.0.1:0")
	})
	add("demo", exitFailed, "", "--http", "256.0.0.1:1")

	add("lifecycle", exitOK, clean, "pre-start")
	run("lifecycle", exitFailed, func(t *testing.T) int {
		r := newRoot(t, map[string]string{"jobs/j/bin/pre-start": "#!/bin/sh\nexit 1\n"})
		code, _ := f.vigil(t, r, "lifecycle", "pre-start")
		return code
	})
	run("drain", exitOK, func(t *testing.T) int {
		r := newRoot(t, map[string]string{"jobs/j/bin/drain": "#!/bin/sh\necho 0\n"})
		code, _ := f.vigil(t, r, "drain")
		return code
	})
	run("drain", exitFailed, func(t *testing.T) int {
		r := newRoot(t, map[string]string{"jobs/j/bin/drain": "#!/bin/sh\nexit 1\n"})
		code, _ := f.vigil(t, r, "drain")
		return code
	})

	run("container", exitOK, func(t *testing.T) int {
		r := newRoot(t, map[string]string{"jobs/j/config/bpm.yml": "processes:\n- name: p\n  executable: /bin/sleep\n  args: ['1000']\n"})
		return f.signalAfterLog(t, syscall.SIGTERM, "msg=supervising", "container", "--root", r)
	})
	add("container", exitFailed, missing)

	run("image", exitOK, func(t *testing.T) int {
		r := newRoot(t, map[string]string{"jobs/j/bin/drain": "#!/bin/sh\necho 0\n"})
		code, _ := f.vigil(t, r, "image", "--output", filepath.Join(t.TempDir(), "j.tar"), "localhost/j:1")
		return code
	})
	run("image", exitFailed, func(t *testing.T) int {
		code, _ := f.vigil(t, t.TempDir(), "image", "--output", filepath.Join(t.TempDir(), "j.tar"), "localhost/j:1") // no jobs
		return code
	})

	add("probe", exitOK, m, "live")
	add("probe", exitNotRunning, m, "ready") // crash and slow are not ready
	add("probe", exitNoDaemon, idle, "live")

	run("monit-service", exitOK, func(t *testing.T) int {
		return f.signalAfterLog(t, syscall.SIGTERM, "re-read the control files", "monit-service", "--root", clean)
	})
	add("monit-service", exitNoDaemon, idle, "--wait", "100ms")

	run("install", exitOK, func(t *testing.T) int {
		r := newRoot(t, nil)
		code, _ := f.vigil(t, r, "install")
		if code == 0 {
			code, _ = f.vigil(t, r, "uninstall")
		}
		return code
	})
	run("uninstall", exitOK, func(t *testing.T) int {
		code, _ := f.vigil(t, newRoot(t, nil), "uninstall") // nothing installed: nothing to do
		return code
	})
	realBPM := map[string]string{"jobs/bpm/bin/bpm": "#!/bin/sh\n"}
	run("install", exitFailed, func(t *testing.T) int { code, _ := f.vigil(t, newRoot(t, realBPM), "install"); return code })
	run("uninstall", exitFailed, func(t *testing.T) int { code, _ := f.vigil(t, newRoot(t, realBPM), "uninstall"); return code })

	run("systemd generate", exitOK, func(t *testing.T) int {
		code, _ := f.vigil(t, clean, "systemd generate", "--out", t.TempDir())
		return code
	})
	run("systemd generate", exitFailed, func(t *testing.T) int {
		code, _ := f.vigil(t, m, "systemd generate", "--out", t.TempDir())
		return code
	})

	run("exec", exitOK, func(t *testing.T) int {
		r := newRoot(t, map[string]string{"jobs/j/config/bpm.yml": "processes:\n- name: p\n  executable: /bin/true\n"})
		code, _ := f.vigil(t, r, "exec", "j", "p")
		return code
	})
	add("exec", exitFailed, idle, "nope", "p")

	for _, c := range []struct{ cmd, ok, bad string }{
		{"completion", "bash", "tcsh"}, {"man", "", "extra"}, {"version", "", "extra"}, {"help", "start", "nope"},
	} {
		add(c.cmd, exitOK, "", strings.Fields(c.ok)...)
		add(c.cmd, exitUsage, "", c.bad)
	}

	run("daemon", exitOK, func(t *testing.T) int {
		r := newRoot(t, map[string]string{"jobs/j/config/bpm.yml": "processes:\n- name: p\n  executable: /bin/sleep\n  args: ['1000']\n"})
		return f.signalAfterLog(t, syscall.SIGTERM, "msg=supervising", "daemon", "--root", r)
	})
	add("daemon", exitFailed, missing)

	// Last: the clean root's daemon goes away under an events stream.
	run("events", exitFailed, func(t *testing.T) int {
		lines, cmd, _ := (&cli{t: t, root: clean}).streamLines("events", "-n", "1")
		<-lines
		f.cleanDaemon.Process.Signal(syscall.SIGTERM)
		for range lines {
		}
		return exitCode(t, cmd.Wait())
	})
	return cs
}

func exitCode(t *testing.T, err error) int {
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return 0
}

// interruptAfterLine starts vigil with args (and --root root unless ""),
// sends it SIGINT once it has printed a line, and returns its status.
func (f *exitFixture) interruptAfterLine(t *testing.T, root string, args ...string) int {
	if root != "" {
		args = append(args, "--root", root)
	}
	cmd, out := startPiped(t, true, args...)
	r := bufio.NewReader(out)
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatalf("no line: %v", err)
	}
	cmd.Process.Signal(syscall.SIGINT)
	io.Copy(io.Discard, r)
	return exitCode(t, cmd.Wait())
}

// signalAfterLog starts vigil with args, sends it sig once its standard
// error has a line holding want, and returns its status.
func (f *exitFixture) signalAfterLog(t *testing.T, sig syscall.Signal, want string, args ...string) int {
	cmd, stderr := startPiped(t, false, args...)
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.Contains(sc.Text(), want) {
			cmd.Process.Signal(sig)
			break
		}
	}
	io.Copy(io.Discard, stderr)
	return exitCode(t, cmd.Wait())
}

// startPiped starts vigil with args and returns it with its standard
// output (stdout) or error, to read until its end.
func startPiped(t *testing.T, stdout bool, args ...string) (*exec.Cmd, io.Reader) {
	cmd := exec.Command(vigilBin, args...)
	cmd.Env = append(os.Environ(), "VIGIL_ISOLATION=off")
	pipe := cmd.StderrPipe
	if stdout {
		pipe = cmd.StdoutPipe
	}
	out, err := pipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

// interruptAfterAction runs `vigil ACTION JOB` on the main root and sends
// it SIGINT once the daemon has published the action (the command is
// then waiting for its outcome), and returns its status.
func (f *exitFixture) interruptAfterAction(t *testing.T, action, job string) int {
	ctx, cancel := context.WithTimeout(context.Background(), testproc.Guard)
	defer cancel()
	events, err := control.NewClient(filepath.Join(f.main, "sys", "run", "vigil", "vigil.sock")).Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(vigilBin, action, job, "--root", f.main)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for ev := range events {
		if ev.Kind == control.EventAction && ev.Job == job && strings.HasPrefix(ev.Message, action) {
			cmd.Process.Signal(syscall.SIGINT)
			break
		}
	}
	return exitCode(t, cmd.Wait())
}

// refusingDaemon runs `vigil ACTION JOB` against a daemon that refuses
// every action as a daemon shutting down does (409, ErrFailed), and
// returns its status.
func (f *exitFixture) refusingDaemon(t *testing.T, action, job string) int {
	root := newRoot(t, nil)
	ln, err := control.Listen(filepath.Join(root, "sys", "run", "vigil", "vigil.sock"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- control.Serve(ctx, ln, refusing{}, time.Second) }()
	defer func() { cancel(); <-served }()
	code, _ := f.vigil(t, root, action, job)
	return code
}

// refusing is a control.Manager that refuses every action.
type refusing struct{}

func (refusing) Status(context.Context) (control.Status, error) { return control.Status{}, nil }
func (refusing) Act(context.Context, control.ActionRequest) ([]control.ProcessStatus, error) {
	return nil, control.Errorf(control.ErrFailed, "the daemon is shutting down")
}
func (refusing) Signal(context.Context, control.SignalRequest) error {
	return control.Errorf(control.ErrFailed, "the daemon is shutting down")
}
func (refusing) Reload(context.Context) (control.ReloadResult, error) {
	return control.ReloadResult{}, control.Errorf(control.ErrFailed, "the daemon is shutting down")
}

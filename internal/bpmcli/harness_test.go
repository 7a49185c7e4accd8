package bpmcli_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/launch"
	"github.com/vigil-bosh/vigil/internal/pidfile"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/testproc"
	"github.com/vigil-bosh/vigil/internal/testroot"
)

// testVersion is the version the tests' vigil binary is stamped with, as
// the BOSH release's packaging stamps its own.
const testVersion = "0.0.0-test"

// binDir holds the vigil binary built for the tests and a "bpm" symlink to
// it. It is set once by TestMain, before any test runs.
var binDir string

func TestMain(m *testing.M) {
	testproc.Main() // jobs run this binary as their executable
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "go env GOMOD:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "bpmbin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	build := exec.Command("go", "build", "-ldflags", "-X main.version="+testVersion, "-o", filepath.Join(dir, "vigil"), "./cmd/vigil")
	build.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build vigil: %v\n%s", err, out)
		return 1
	}
	if err := os.Symlink("vigil", filepath.Join(dir, "bpm")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	binDir = dir
	return m.Run()
}

// root is a throwaway BOSH root whose jobs run this test binary (reporting
// to rep) or small shell scripts.
type root struct {
	t      *testing.T
	tr     *testroot.Root
	layout boshpath.Layout
	rep    *testproc.Listener
	daemon *exec.Cmd // nil in the no-daemon mode
}

func newRoot(t *testing.T) *root {
	tr := testroot.New(t, "")
	r := &root{t: t, tr: tr, layout: tr.Layout, rep: tr.Rep}
	t.Cleanup(func() { // before the root goes
		r.stopDaemon()
		r.stopLeftovers()
	})
	return r
}

// tp is a process of a job that runs this test binary with a behaviour.
type tp struct {
	name, behaviour string
	env             []string
}

// job writes ROOT/jobs/NAME/config/bpm.yml for processes running the test
// binary.
func (r *root) job(name string, procs ...tp) {
	tps := make([]testroot.Proc, len(procs))
	for i, p := range procs {
		tps[i] = testroot.Proc{Name: p.name, Behaviour: p.behaviour, Env: p.env}
	}
	r.tr.Job(name, tps...)
}

// errand writes a job whose single process (named like the job) is the
// shell script body, installed as bin/run so that it counts as an errand.
func (r *root) errand(name, body string) string {
	exe := filepath.Join(r.layout.JobBinDir(name), "run")
	r.write(exe, "#!/bin/sh\n"+body+"\n", 0o755)
	r.write(r.layout.BPMConfig(name), "processes:\n- name: "+name+"\n  executable: "+exe+"\n", 0o644)
	return exe
}

func (r *root) write(path, content string, mode os.FileMode) { r.tr.Write(path, content, mode) }

func (r *root) read(path string) string {
	r.t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		r.t.Fatal(err)
	}
	return string(b)
}

// result is how a command ended.
type result struct {
	out, err string
	code     int
}

func (r *root) env() []string {
	return append(os.Environ(), "BPM_BOSH_ROOT="+r.layout.Root(), "PATH="+binDir+":"+os.Getenv("PATH"),
		launch.IsolationEnv+"=off") // the test jobs live under /tmp
}

// command returns "bpm ARGS..." ready to run against this root.
func (r *root) command(args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(binDir, "bpm"), args...)
	cmd.Env = r.env()
	return cmd
}

func (r *root) bpm(args ...string) result { return r.run(r.command(args...)) }

// sh runs a shell script the way a drain or monit script would, with bpm
// on the PATH.
func (r *root) sh(script string) result {
	cmd := exec.Command("/bin/sh", "-ec", script)
	cmd.Env = r.env()
	return r.run(cmd)
}

func (r *root) run(cmd *exec.Cmd) result {
	r.t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		r.t.Fatal(err)
	}
	return result{out: out.String(), err: errb.String(), code: cmd.ProcessState.ExitCode()}
}

// must runs bpm and fails the test unless it exits 0.
func (r *root) must(args ...string) string {
	r.t.Helper()
	res := r.bpm(args...)
	if res.code != 0 {
		r.t.Fatalf("bpm %s: exit %d, stderr %q", strings.Join(args, " "), res.code, res.err)
	}
	return res.out
}

// startDaemon runs "vigil daemon" on the root and returns once it has
// started every job and settled: it says "supervising" on its log then.
func (r *root) startDaemon() {
	r.t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "vigil"), "daemon", "--root", r.layout.Root())
	cmd.Env = r.env()
	logs, err := cmd.StderrPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.daemon = cmd
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "msg=supervising") {
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(testproc.Guard):
		r.t.Fatal("the daemon never said it was supervising")
	}
}

func (r *root) stopDaemon() {
	if r.daemon != nil {
		r.daemon.Process.Signal(syscall.SIGTERM)
		r.daemon.Wait()
		r.daemon = nil
	}
}

// stopLeftovers takes down whatever a test left running without a daemon.
func (r *root) stopLeftovers() {
	files, _ := filepath.Glob(filepath.Join(r.layout.Root(), "sys", "run", "bpm", "*", "*.pid"))
	for _, f := range files {
		launch.Stop(r.layout, filepath.Base(filepath.Dir(f)), strings.TrimSuffix(filepath.Base(f), ".pid"),
			supervise.Timing{StopSignal: syscall.SIGKILL, StopTimeout: time.Millisecond})
	}
}

// modes runs test in both modes: without a daemon, and with one started on
// the root after setup has written the jobs.
func modes(t *testing.T, setup func(r *root), test func(t *testing.T, r *root)) {
	for _, withDaemon := range []bool{false, true} {
		name := "no daemon"
		if withDaemon {
			name = "daemon"
		}
		t.Run(name, func(t *testing.T) {
			r := newRoot(t)
			setup(r)
			if withDaemon {
				r.startDaemon()
			}
			test(t, r)
		})
	}
}

func (r *root) pidFile(job, p string) int {
	r.t.Helper()
	pid, err := pidfile.Read(r.layout.PidFile(job, p))
	if err != nil {
		r.t.Fatal(err)
	}
	return pid
}

// gone reports whether pid has exited (a zombie counts as gone).
func gone(pid int) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return true
	}
	defer unix.Close(fd)
	n, _ := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
	return n == 1
}

// waitGone waits on a pidfd for pid to exit.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	if n, _ := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(testproc.Guard/time.Millisecond)); n != 1 {
		t.Fatalf("pid %d still runs", pid)
	}
}

// inits lists the live vigil inits for JOB/PROC on the whole machine.
// inits lists the live vigil inits of JOB/PROC under this root: every
// "BINARY init ..." process whose stdout is the process's log file (spares
// from the daemon's pool carry no label, and other tests' roots may run
// the same JOB/PROC names).
func (r *root) inits(job, p string) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	stdout := r.layout.StdoutLog(job, p)
	var out []int
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) < 2 || args[1] != "init" {
			continue
		}
		if fd1, _ := os.Readlink(filepath.Join(d, "fd", "1")); fd1 != stdout {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		out = append(out, pid)
	}
	return out
}

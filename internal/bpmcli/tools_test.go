package bpmcli_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestRunForwardsSignals: the signals bpm run gets go to the process, and
// bpm run ends with it.
func TestRunForwardsSignals(t *testing.T) {
	r := newRoot(t)
	webJob(r)
	run := r.command("run", "web")
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	r.rep.Expect(t, "ready")
	if res := r.bpm("pid", "web"); res.code != 1 {
		t.Fatalf("bpm run wrote a pid file: %+v", res)
	}
	run.Process.Signal(syscall.SIGUSR1)
	r.rep.Expect(t, "signal USR1")
	run.Process.Signal(syscall.SIGTERM)
	r.rep.Expect(t, "signal TERM")
	if err := run.Wait(); err != nil {
		t.Fatalf("bpm run after TERM: %v", err)
	}
}

// TestShell: the shell runs in the process's working directory with its
// environment.
func TestShell(t *testing.T) {
	r := newRoot(t)
	webJob(r)
	if res := r.bpm("shell", "web"); res.code != 1 || res.err != notRunning {
		t.Fatalf("shell of a stopped process: %+v", res)
	}
	r.must("start", "web")
	sh := r.command("shell", "web")
	sh.Stdin = strings.NewReader(`echo "$PWD $TMPDIR $TESTPROC"` + "\n")
	out, err := sh.Output()
	want := r.layout.JobDir("web") + " " + r.layout.TmpDir("web") + " serve\n"
	if err != nil || string(out) != want {
		t.Fatalf("shell printed %q (%v), want %q", out, err, want)
	}
}

// TestTrace: bpm trace attaches strace to the job's executable (not to
// vigil's init, whose system calls are not the job's), even with no PATH
// to find strace in, and ^C ends it with success.
func TestTrace(t *testing.T) {
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("strace is not installed")
	}
	r := newRoot(t)
	webJob(r)
	r.must("start", "web")
	exe := r.rep.Expect(t, "ready")
	trace := r.command("trace", "web")
	trace.Env = slices.DeleteFunc(trace.Env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
	errs, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer errs.Close()
	trace.Stderr = w
	err = trace.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(errs)
	attached, said := "", ""
	for attached == "" && sc.Scan() {
		said += sc.Text() + "\n"
		if strings.Contains(sc.Text(), "attached") {
			attached = sc.Text()
		}
	}
	if attached == "" && strings.HasPrefix(said, "Error:") {
		t.Fatalf("bpm trace: %v: %s", trace.Wait(), said)
	}
	if attached == "" {
		t.Skipf("strace could not attach (no ptrace here?): %v: %s", trace.Wait(), said)
	}
	if !strings.Contains(attached, fmt.Sprintf("Process %d attached", exe.PID)) {
		t.Errorf("strace attached to another process than the executable %d: %s", exe.PID, attached)
	}
	go func() {
		for sc.Scan() { // strace must never block on its stderr
		}
	}()
	trace.Process.Signal(syscall.SIGINT)
	if err := trace.Wait(); err != nil {
		t.Fatalf("bpm trace after ^C: %v", err)
	}
}

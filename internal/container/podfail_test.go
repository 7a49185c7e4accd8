package container

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestFailedDrainWaitsForThePod is a pod of two containers under vigil
// container, each with vigil drain --wait-all as its preStop hook: a's
// drain fails at once (it prints nothing and exits 1), b's takes until the
// test lets it finish. a's hook must still wait until b has drained, then
// fail with the agent's words; a's vigil logs the failure at ERROR (never
// "drained" at INFO), publishes it, and exits 1 on SIGTERM; b exits 0.
func TestFailedDrainWaitsForThePod(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root for a new PID namespace (unshare --pid)")
	}
	bin := buildVigil(t)
	stamps := t.TempDir()
	release := filepath.Join(t.TempDir(), "release")
	if err := syscall.Mkfifo(release, 0o600); err != nil {
		t.Fatal(err)
	}
	pod := map[string]*podMember{}
	for name, drain := range map[string]string{
		"a": "exit 1",
		"b": "read x < " + release + "\necho 0",
	} {
		pm := &podMember{root: t.TempDir()}
		podJob(t, pm.root, name, false)
		os.WriteFile(filepath.Join(pm.root, "jobs", "job", "bin", "drain"), []byte("#!/bin/sh\n"+drain+"\n"), 0o755)
		pm.cmd = exec.Command("unshare", "--pid", "--fork", "--mount-proc", bin, "container", "--root", pm.root,
			"--grace", "60s", "--stamps", stamps, "--name", name)
		pm.start(t)
		pod[name] = pm
	}
	for _, pm := range pod {
		testproc.WaitUntil(t, filepath.Join(pm.root, "sys", "log", "job"), testproc.FileHolds(filepath.Join(pm.root, "sys", "log", "job", "job.stdout.log"), "started\n"))
	}
	type ended struct {
		out      string
		err      error
		bDrained bool
	}
	hooks := map[string]chan ended{}
	for name, pm := range pod {
		hook := exec.Command(bin, "drain", "--root", pm.root, "--wait-all", stamps, "--name", name)
		done := make(chan ended, 1)
		hooks[name] = done
		go func() {
			out, err := hook.CombinedOutput()
			_, serr := os.Stat(filepath.Join(stamps, "b.drained"))
			done <- ended{string(out), err, serr == nil}
		}()
	}
	// a's drain has failed and its stamp is marked; b still drains.
	testproc.WaitUntil(t, stamps, func() bool { _, err := os.Stat(filepath.Join(stamps, "a.drained")); return err == nil })
	// Its outcome was published before its stamp was marked: it is among
	// the recent events at once (the guard only ends a failing wait).
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	events, err := control.NewClient(filepath.Join(pod["a"].root, "sys", "run", "vigil", "vigil.sock")).Events(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var failed *control.Event
	for ev := range events {
		if ev.Kind == control.EventDrainFailed {
			failed = &ev
			break
		}
	}
	if failed == nil || failed.Job != "job" || !strings.Contains(failed.Message, `Script did not return a signed integer: printed "" (exit status 1)`) {
		t.Errorf("a's drain-failed event: %+v", failed)
	}
	cancel()
	// a's hook still waits; b's drain is let go once it reads the release
	// (a blocking open of the FIFO waits for its reader: b's drain may not
	// have reached its read yet).
	select {
	case a := <-hooks["a"]:
		t.Fatalf("a's preStop returned (%v) while b drains:\n%s", a.err, a.out)
	default:
	}
	testproc.Within(t, "the release of b's drain", func() {
		f, err := os.OpenFile(release, os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		f.WriteString("go\n")
		f.Close()
	})
	a, b := <-hooks["a"], <-hooks["b"]
	if !a.bDrained {
		t.Fatalf("a's preStop returned (%v) before b had drained:\n%s", a.err, a.out)
	}
	var exit *exec.ExitError
	if !errors.As(a.err, &exit) || exit.ExitCode() != 1 ||
		!strings.Contains(a.out, `1 of 1 drain scripts failed. Failed Jobs: job. Successful Jobs: .`) ||
		!strings.Contains(a.out, `job: Script did not return a signed integer: printed "" (exit status 1)`) {
		t.Fatalf("a's preStop: %v\n%s", a.err, a.out)
	}
	if b.err != nil {
		t.Fatalf("b's preStop: %v\n%s", b.err, b.out)
	}
	for name, want := range map[string]int{"a": 1, "b": 0} {
		pm := pod[name]
		syscall.Kill(childOf(t, pm.cmd.Process.Pid), syscall.SIGTERM)
		err := pm.cmd.Wait()
		if code := pm.cmd.ProcessState.ExitCode(); code != want {
			t.Errorf("%s exited %d (%v), want %d", name, code, err, want)
		}
	}
	logA, logB := pod["a"].log(), pod["b"].log()
	if !strings.Contains(logA, `level=ERROR msg="drain failed" job=job output="" exit="exit status 1"`) ||
		strings.Contains(logA, "level=INFO msg=drained") || !strings.Contains(logA, `level=ERROR msg="drains failed"`) {
		t.Errorf("a's log:\n%s", logA)
	}
	if !strings.Contains(logB, `level=INFO msg="drain done" job=job output=0 exit="exit status 0"`) ||
		!strings.Contains(logB, "level=INFO msg=drained jobs=1") {
		t.Errorf("b's log:\n%s", logB)
	}
}

// podMember is one container of a test pod: vigil container under
// unshare, its stderr kept.
type podMember struct {
	root string
	cmd  *exec.Cmd
	mu   sync.Mutex
	logs strings.Builder
}

// start starts the container and returns once vigil supervises.
func (pm *podMember) start(t *testing.T) {
	t.Helper()
	stderr, _ := pm.cmd.StderrPipe()
	if err := pm.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killNamespace(t, pm.cmd)
	sc := bufio.NewScanner(stderr)
	for sc.Scan() && !strings.Contains(pm.add(sc.Text()), "msg=supervising") {
	}
	go func() {
		for sc.Scan() {
			pm.add(sc.Text())
		}
	}()
}

func (pm *podMember) add(line string) string {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	pm.logs.WriteString(line + "\n")
	return line
}

// log is what vigil logged so far.
func (pm *podMember) log() string {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	return pm.logs.String()
}

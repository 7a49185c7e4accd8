package sandbox

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The main goroutine keeps the main thread (from init on), so that a test
// can run a function there through onMain.
func init() { runtime.LockOSThread() }

// mainCalls are the functions TestMain runs on the main thread.
var mainCalls = make(chan func())

func TestMain(m *testing.M) {
	code := make(chan int)
	go func() { code <- m.Run() }()
	for {
		select {
		case f := <-mainCalls:
			f()
		case c := <-code:
			os.Exit(c)
		}
	}
}

// onMain runs f on the process's main thread and returns once it has.
func onMain(f func()) {
	ran := make(chan struct{})
	mainCalls <- func() { f(); close(ran) }
	<-ran
}

// TestEntryLeavesTheMainThread: a command started inside a process's
// namespaces from the main thread runs there, and the main thread (whose
// namespaces and mount table are the whole process's in /proc/self) stays
// in the caller's: a daemon whose exec probe was started from it would
// otherwise read the sandbox's mount table ever after, find no cgroup
// hierarchy there and start the next processes without their limits.
func TestEntryLeavesTheMainThread(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("entering namespaces needs root")
	}
	pid, err := syscall.ForkExec("/bin/sleep", []string{"sleep", "1000"},
		&syscall.ProcAttr{Sys: &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWNS}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = unix.Kill(pid, unix.SIGKILL)
		var ws unix.WaitStatus
		_, _ = unix.Wait4(pid, &ws, 0, nil)
	})
	e, err := Enter(pid)
	if err != nil || e == nil || !e.Joins() {
		t.Fatalf("Enter(%d) = %v, %v: want a way into its mount namespace", pid, e, err)
	}
	defer e.Close()
	theirs, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/mnt")
	ours, _ := os.Readlink("/proc/self/ns/mnt")
	if theirs == ours {
		t.Fatal("the process shares our mount namespace")
	}
	cmd := exec.Command("/bin/sh", "-c", "readlink /proc/self/ns/mnt")
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	var out strings.Builder
	cmd.Stdout = &out
	onMain(func() { // what Start does, from the main thread
		done := make(chan error, 1)
		e.startOnThread(cmd, done)
		err = <-done
	})
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); got != theirs {
		t.Errorf("the command ran in %s, want the process's %s", got, theirs)
	}
	if after, _ := os.Readlink("/proc/self/ns/mnt"); after != ours {
		t.Errorf("the process's main thread is in %s after the start, want %s", after, ours)
	}
}

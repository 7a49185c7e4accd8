package procinit

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
)

func TestChildrenOf(t *testing.T) {
	var pids []int
	for range 2 {
		cmd := exec.Command("sleep", "1000")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		pids = append(pids, cmd.Process.Pid)
	}
	for name, got := range map[string][]int{"children files": childrenOf(os.Getpid()), "/proc scan": scanChildren(os.Getpid())} {
		for _, pid := range pids {
			if !slices.Contains(got, pid) {
				t.Errorf("%s: %v lacks %d", name, got, pid)
			}
		}
	}
}

// TestParentOfOddNames: a command name may hold spaces and parentheses.
func TestParentOfOddNames(t *testing.T) {
	dir := t.TempDir()
	odd := dir + "/a (b) c"
	if err := os.Symlink("/bin/sleep", odd); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(odd, "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if ppid, ok := parentOf(cmd.Process.Pid); !ok || ppid != os.Getpid() {
		t.Fatalf("parentOf = %d %v, want %d", ppid, ok, os.Getpid())
	}
}

func TestForwarded(t *testing.T) {
	got := forwarded()
	for _, s := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGPIPE, syscall.SIGCONT} {
		if !slices.Contains(got, os.Signal(s)) {
			t.Errorf("%v not forwarded", s)
		}
	}
	for _, s := range []syscall.Signal{syscall.SIGKILL, syscall.SIGSTOP, syscall.SIGCHLD, syscall.SIGSEGV, syscall.SIGTTIN} {
		if slices.Contains(got, os.Signal(s)) {
			t.Errorf("%v forwarded", s)
		}
	}
}

package initimage

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// noexecEnv makes the test binary the probe of noexecProbe instead of a
// test run: it sets its PID namespace's vm.memfd_noexec to the value and
// reports what Open and Resolve do there.
const noexecEnv = "VIGIL_INITIMAGE_NOEXEC"

func TestMain(m *testing.M) {
	if v := os.Getenv(noexecEnv); v != "" {
		os.Exit(noexecProbe(v))
	}
	os.Exit(m.Run())
}

// noexecProbe runs in a PID namespace of its own (the sysctl is the
// namespace's): it prints "opened", and "ran" once the image has executed
// (its exit: no launch), or "fallback" when Resolve fell back to the
// binary itself.
func noexecProbe(value string) int {
	if err := os.WriteFile("/proc/sys/vm/memfd_noexec", []byte(value), 0); err != nil {
		fmt.Println("sysctl:", err)
		return 2
	}
	prog, err := Resolve()
	if err != nil {
		fmt.Println("resolve:", err)
		return 1
	}
	defer prog.Close()
	if prog.Fallback != nil {
		fmt.Println("fallback:", prog.Fallback)
		return 0
	}
	fmt.Println("opened")
	cmd := exec.Command(prog.Path, "init")
	cmd.Args[0] = Name
	var exit *exec.ExitError
	if err := cmd.Run(); errors.As(err, &exit) && exit.ExitCode() == 126 {
		fmt.Println("ran")
	} else {
		fmt.Println("exec:", err)
	}
	return 0
}

// TestExecutableWhereMemoryFilesAreNot: where the kernel seals memory files
// against execution unless asked (vm.memfd_noexec=1), the image is asked
// for as executable and runs; where it refuses executable ones (2), vigil
// falls back to itself as the init instead of starting inits that cannot
// exec.
func TestExecutableWhereMemoryFilesAreNot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a PID namespace of its own needs root")
	}
	if _, err := os.Stat("/proc/sys/vm/memfd_noexec"); err != nil {
		t.Skip("kernel without vm.memfd_noexec (before Linux 6.3)")
	}
	if len(embedded) == 0 {
		t.Skip(ErrNone)
	}
	self, _ := os.Executable()
	for value, want := range map[string]string{"1": "opened\nran\n", "2": "fallback: "} {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), noexecEnv+"="+value)
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), want) {
			t.Errorf("vm.memfd_noexec=%s: %v, said %q, want %q...", value, err, out, want)
		}
	}
}

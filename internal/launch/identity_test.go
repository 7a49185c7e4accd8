package launch

import (
	"fmt"
	"os"
	"os/user"
	"strings"
	"syscall"
	"testing"

	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestSandboxIdentityIsComplete checks the identity a sandboxed executable
// ends up with, in /proc/PID/status: real, effective, saved and filesystem
// uid and gid are all the job's user's, and no supplementary group is left.
// This also shows the drop's order: setgroups and setgid need CAP_SETGID,
// which the switch to a non-root uid clears from the effective set, so had
// setuid come first, the drop (and the start) would have failed.
func TestSandboxIdentityIsComplete(t *testing.T) {
	s := newSandboxed(t)
	u, err := user.Lookup(s.user)
	if err != nil {
		t.Fatal(err)
	}
	_, pr := s.start(s.process("ids", "inspect", testproc.EnvHold+"=1"))
	ev := next(t, pr)
	if !ev.Running {
		t.Fatalf("not running: %+v", ev)
	}
	s.see(nil)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", ev.ExecPID))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"Uid":    strings.Repeat(u.Uid+" ", 4),
		"Gid":    strings.Repeat(u.Gid+" ", 4),
		"Groups": "",
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, _ := strings.Cut(line, ":")
		if w, ok := want[k]; ok {
			if got := strings.Join(strings.Fields(v), " "); got != strings.TrimSpace(w) {
				t.Errorf("%s: got %q, want %q", k, got, strings.TrimSpace(w))
			}
			delete(want, k)
		}
	}
	if len(want) > 0 {
		t.Errorf("not in the status: %v", want)
	}
	s.rep.Expect(t, "ready")
	pr.Signal(syscall.SIGTERM)
	s.exitOf(pr)
}

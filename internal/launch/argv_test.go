package launch

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vigil-bosh/vigil/job"
)

// TestArgsReachTheExecutableAsWritten: arguments and environment values
// from bpm.yml are never interpreted by a shell: shell syntax arrives
// byte for byte, and nothing it would run runs.
func TestArgsReachTheExecutableAsWritten(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	mark := filepath.Join(dir, "ran")
	args := []string{"%s\n", "$(touch " + mark + ")", "`touch " + mark + "`", "; touch " + mark, "*", "a  b", "$HOME", "${PATH}"}
	printf := "/usr/bin/printf"
	p := job.Process{Job: "job", Name: "argv", Executable: printf, ResolvedExecutable: printf,
		Args: args, Workdir: dir, ShutdownSignal: syscall.SIGTERM,
		Env: map[string]string{"INJECT": "$(touch " + mark + ")"}}
	_, pr := f.start(p)
	if ev := next(t, pr); !ev.Running {
		t.Fatalf("did not start: %+v", ev)
	}
	if ev := next(t, pr); ev.Running || ev.Exit.Code != 0 {
		t.Fatalf("printf ended with %+v", ev)
	}
	out, err := os.ReadFile(f.layout.StdoutLog("job", "argv"))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Join(args[1:], "\n") + "\n"; string(out) != want {
		t.Fatalf("the executable got\n%q\nwant\n%q", out, want)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("shell syntax from the config was run")
	}
}

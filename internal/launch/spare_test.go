package launch

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/vigil-bosh/vigil/internal/launch/procinit"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// spareWithStderr starts an init as the pool does (no stderr given) while
// this process's stderr is a pipe, and returns the spare and the pipe's
// read end. os.Stderr is restored before it returns: the init has its copy.
func spareWithStderr(t *testing.T) (*spare, *os.File) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	saved := os.Stderr
	os.Stderr = w
	s, err := startInit(self, []string{"GORACE=" + testproc.NoRaceExitDelay}, "", nil, nil, 0)
	os.Stderr = saved
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return s, r
}

// TestSpareTellsItsStarterWhyItFailed: an init that fails before it has
// its launch writes why on its starter's stderr (a daemon's log), not into
// /dev/null; a spare whose socket simply closes says nothing.
func TestSpareTellsItsStarterWhyItFailed(t *testing.T) {
	s, errs := spareWithStderr(t)
	if _, err := s.ctrl.Write([]byte("not a launch\n")); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(errs) // until the init has exited
	_ = s.cmd.Wait()
	s.ctrl.Close()
	if !strings.Contains(string(b), "read launch") || s.cmd.ProcessState.ExitCode() != procinit.ExitBadLaunch {
		t.Fatalf("a bad launch: exit %v, stderr %q", s.cmd.ProcessState, b)
	}

	s, errs = spareWithStderr(t)
	s.ctrl.Close()
	b, _ = io.ReadAll(errs)
	_ = s.cmd.Wait()
	if len(b) != 0 || s.cmd.ProcessState.ExitCode() != procinit.ExitBadLaunch {
		t.Fatalf("a spare let go: exit %v, stderr %q", s.cmd.ProcessState, b)
	}
}

package launch

import (
	"testing"

	"github.com/vigil-bosh/vigil/internal/launch/procinit"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestSupervisorGoneDuringHook: an init whose supervisor goes away while
// the pre_start hook runs (its daemon was killed) abandons the start: the
// hook is killed, the executable never runs, and the log says why. The
// next daemon, finding no pid file, starts the process afresh. (The whole
// fault, with a daemon killed outright: faults.TestKillDuringStart.)
func TestSupervisorGoneDuringHook(t *testing.T) {
	f := newFixture(t)
	// The hook is the test binary serving: it says when it runs.
	p := f.process("orphaned", "serve")
	p.Hooks.PreStart = p.ResolvedExecutable
	_, pr := f.start(p)
	hook := f.rep.Expect(t, "ready")
	pr.(*Process).ctrl.Close() // as a daemon killed outright lets go
	if ev := next(t, pr); ev.Running || ev.Exit.Code != procinit.ExitHookFailed {
		t.Fatalf("got %+v", ev)
	}
	if alive(hook.PID) {
		t.Fatal("the hook outlived the abandoned start")
	}
	if !testproc.FileContains(f.layout.StderrLog("job", "orphaned"), "the supervisor went away while the prestart hook ran")() {
		t.Fatal("the log does not say why the start was abandoned")
	}
}

package launch

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/initimage"
)

// embeddedInit opens the vigil-init that vigil carries, for the test's
// life; it skips where vigil carries none.
func embeddedInit(t *testing.T) string {
	im, err := initimage.Open()
	if errors.Is(err, initimage.ErrNone) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { im.Close() })
	return im.Path()
}

// TestEmbeddedInit runs a process under the embedded vigil-init, executed
// from its memory file: it keeps the init contract (the executable its
// direct child, signals forwarded, the exit reported) and shows as
// vigil-init (initimage's tests check the memory file's seals).
func TestEmbeddedInit(t *testing.T) {
	f := newFixture(t)
	init := embeddedInit(t)
	_, pr := f.start(f.process("server", "serve"), func(o *Options) { o.Init = init })
	ready := f.rep.Expect(t, "ready")
	if ev := next(t, pr); !ev.Running || ev.ExecPID != ready.PID {
		t.Fatalf("running event %+v, child says pid %d", ev, ready.PID)
	}
	if ppid := ready.Fields()[1]; ppid != pr.PID() {
		t.Fatalf("executable's parent is %d, init is %d", ppid, pr.PID())
	}
	exe := fmt.Sprintf("/proc/%d/exe", pr.PID())
	if l, err := os.Readlink(exe); err != nil || !strings.HasPrefix(l, "/memfd:"+initimage.Name) {
		t.Fatalf("init executes %q (%v), want the vigil-init memory file", l, err)
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pr.PID())); err != nil || !strings.HasPrefix(string(b), initimage.Name+"\x00init\x00") {
		t.Fatalf("init's command line %q (%v)", b, err)
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pr.PID())); err != nil || string(b) != initimage.Name+"\n" {
		t.Errorf("init's name %q (%v), want %s", b, err, initimage.Name)
	}
	if err := unix.Kill(pr.PID(), unix.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	f.rep.Expect(t, "signal USR1")
	unix.Kill(ready.PID, unix.SIGKILL)
	if ev := next(t, pr); ev.Running || ev.Exit.Signal != syscall.SIGKILL {
		t.Fatalf("exit event %+v", ev)
	}
}

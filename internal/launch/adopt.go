package launch

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/atomicfile"
	"github.com/vigil-bosh/vigil/internal/launch/procinit"
	"github.com/vigil-bosh/vigil/internal/regfile"
	"github.com/vigil-bosh/vigil/internal/sandbox/cgroup"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

// Adopt takes over a live init of JOB/PROC that another daemon (one that
// died) or a detached bpm start left running, as a supervise.Process: it
// reports Running at once, then the exit when the init's pidfd says it has
// gone. The init is not our child, so its wait status is not ours to read:
// the exit is the one the init recorded in ROOT/sys/run/vigil/exit (it does
// once nobody holds its socket, over the claim Adopt leaves there), or an
// exit without a code when there is no record (an init that ended before
// it saw the claim). It fails with ErrNoInit when no live init runs for
// the process.
func Adopt(l boshpath.Layout, jobName, procName string) (supervise.Process, error) {
	it, err := FindInit(l, jobName, procName)
	if err != nil {
		return nil, err
	}
	a := &adopted{it: it, exitFile: l.ExitFile(jobName, procName), events: make(chan supervise.ProcessEvent, 2)}
	// Best effort: without the claim, the exit is reported without its code.
	if os.MkdirAll(filepath.Dir(a.exitFile), 0o700) == nil {
		_ = atomicfile.Write(a.exitFile, procinit.ExitClaim(it.PID), 0o600)
	}
	exec := 0
	if kids := procinit.ChildrenOf(it.PID); len(kids) > 0 {
		exec = kids[0]
	}
	if exec > 0 { // its group is ours to remove once the init is gone
		if a.group = cgroup.Of(exec); a.group == nil {
			a.group = adoptedScope(l, jobName, procName, it.PID, exec)
		}
	}
	a.events <- supervise.ProcessEvent{Running: true, ExecPID: exec} // ready before Adopt returns
	go a.watch()
	return a, nil
}

// maxRecord bounds the size of a record an init leaves (its exit, its
// identity): a few hundred bytes of JSON.
const maxRecord = 64 << 10

type adopted struct {
	it       *Init
	exitFile string
	group    *cgroup.Group // the executable's cgroup, nil without one
	events   chan supervise.ProcessEvent
	mu       sync.Mutex // guards the pidfd against its close
	closed   bool
}

// with runs f on the init unless its pidfd is closed (it has exited).
func (a *adopted) with(f func(*Init) error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	return f(a.it)
}

func (a *adopted) PID() int                              { return a.it.PID }
func (a *adopted) Events() <-chan supervise.ProcessEvent { return a.events }

func (a *adopted) watch() {
	if err := a.it.waitInPoller(); err != nil {
		for !a.it.Wait(time.Hour) { // no poller for it: wait in a thread of our own
		}
	}
	a.mu.Lock()
	a.it.removePidFile()
	a.it.Close()
	a.closed = true
	a.mu.Unlock()
	_ = a.group.Remove() // as the daemon that started it would have
	a.events <- supervise.ProcessEvent{Exit: a.recorded()}
	close(a.events)
}

// recorded reads and removes the exit the init left over Adopt's claim,
// if it is this init's.
func (a *adopted) recorded() supervise.Exit {
	e := supervise.Exit{At: time.Now()}
	b, err := regfile.ReadFile(a.exitFile, maxRecord)
	if err != nil {
		return e
	}
	var rec procinit.ExitRecord
	if json.Unmarshal(b, &rec) != nil || rec.PID != a.it.PID {
		return e // another instance's, or garbage: not ours to use
	}
	_ = os.Remove(a.exitFile)
	if rec.Report.Event != procinit.EventExit {
		return e // our claim, unanswered
	}
	e.Code, e.Signal, e.OOM = rec.Report.Code, unix.Signal(rec.Report.Signal), rec.Report.OOM
	return e
}

// Signal forwards sig through the init.
func (a *adopted) Signal(sig unix.Signal) error {
	return a.with(func(it *Init) error { return it.Signal(sig) })
}

// Kill kills the init's children; the init then exits.
func (a *adopted) Kill() error {
	return a.with(func(it *Init) error { it.killChildren(); return nil })
}

// ForceKill kills the init itself.
func (a *adopted) ForceKill() error {
	return a.with(func(it *Init) error { return it.Signal(unix.SIGKILL) })
}

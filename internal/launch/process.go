package launch

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/launch/procinit"
	"github.com/vigil-bosh/vigil/internal/pidfile"
	"github.com/vigil-bosh/vigil/internal/sandbox/cgroup"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

// Process is one running init with its executable. It implements
// supervise.Process. Its watch goroutine ends once the init has been reaped.
type Process struct {
	cmd     *exec.Cmd
	ctrl    *os.File
	pidPath string
	events  chan supervise.ProcessEvent
	execPID atomic.Int64
	sendMu  sync.Mutex    // one writer at a time on ctrl
	reopen  chan struct{} // a reopen took effect (buffered: the watcher never blocks)
	exited  chan struct{} // closed once the init is reaped
	group   *cgroup.Group // the executable's cgroup, if any (set before watch starts)
	ready   chan bool     // readiness notifications, when the process sends them (see Ready)
	drops   *drops        // the runner's dropped-output counters, if any (set before watch starts)
	seen    outputSeen    // the init's last output report (watch's own)
}

func newProcess(cmd *exec.Cmd, ctrl *os.File, pidPath string) *Process {
	return &Process{cmd: cmd, ctrl: ctrl, pidPath: pidPath, events: make(chan supervise.ProcessEvent, 2),
		reopen: make(chan struct{}, 1), exited: make(chan struct{})}
}

// PID is the init's pid, the one in the pid file.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Events delivers Running, then Exited, then is closed.
func (p *Process) Events() <-chan supervise.ProcessEvent { return p.events }

// Signal sends sig to the init, which forwards it to the executable.
func (p *Process) Signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// Kill asks the init to kill the executable's whole tree, and kills the
// executable's process group itself in case the init cannot be reached.
func (p *Process) Kill() error {
	if pid := int(p.execPID.Load()); pid > 0 {
		_ = unix.Kill(-pid, unix.SIGKILL)
	}
	p.group.Signal()
	if err := p.send(procinit.Command{Cmd: procinit.CmdKill}); err != nil {
		return p.ForceKill()
	}
	return nil
}

// ForceKill kills the init and the executable's process group outright.
func (p *Process) ForceKill() error {
	if pid := int(p.execPID.Load()); pid > 0 {
		_ = unix.Kill(-pid, unix.SIGKILL)
	}
	p.group.Signal()
	err := p.cmd.Process.Kill()
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

func (p *Process) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	_, err = p.ctrl.Write(append(b, '\n')) // EPIPE, not SIGPIPE: the daemon does not catch it
	return err
}

// watch reads the init's reports until it closes the socket, and reaps
// it. The init writes the pid file before it reports running and removes it
// before it reports the exit, once nothing of the process is left; the exit
// is delivered at that report, without waiting for the init itself to end.
// An init that dies without a report (killed outright) is cleaned up after
// here: its executable's group is killed and its pid file removed.
func (p *Process) watch() {
	defer close(p.events)
	var last procinit.Report
	sc := bufio.NewScanner(p.ctrl)
	sc.Buffer(make([]byte, 512), bufio.MaxScanTokenSize) // a report is a short line; a longer one grows it
	for sc.Scan() {
		r, err := procinit.DecodeReport(sc.Bytes())
		if err != nil {
			continue
		}
		switch r.Event {
		case procinit.EventRunning:
			p.execPID.Store(int64(r.PID))
			p.events <- supervise.ProcessEvent{Running: true, ExecPID: r.PID, Warnings: r.Warnings}
		case procinit.EventReady:
			p.sendReady(true)
		case procinit.EventOutput:
			p.seen = p.drops.note(p.seen, r)
		case procinit.EventReopen:
			select {
			case p.reopen <- struct{}{}:
			default:
			}
		case procinit.EventExit, procinit.EventFailed:
			if last.Event == "" {
				last = r
				p.seen = p.drops.note(p.seen, r)
				p.events <- supervise.ProcessEvent{Exit: p.oom(exitFrom(r, nil)), Reaped: p.exited}
			}
		}
	}
	_ = p.cmd.Wait()
	var lost supervise.Exit // the exit of an init that died without a report
	if last.Event == "" {
		lost = p.oom(exitFrom(last, p.cmd.ProcessState)) // read before its group goes
	}
	// Nothing of the process outlives its init, and its group goes before
	// the process counts as reaped: a stop (the daemon's shutdown among
	// them) settles only once the group is gone, when the init could not
	// remove it itself (it was killed outright, or its removal failed).
	_ = p.group.Remove()
	close(p.exited)
	p.ctrl.Close()
	if last.Event != "" {
		return
	}
	if pid := int(p.execPID.Load()); pid > 0 {
		_ = unix.Kill(-pid, unix.SIGKILL) // the kernel killed the executable; take its group
	}
	if p.pidPath != "" {
		_ = pidfile.RemoveIf(p.pidPath, p.PID())
	}
	p.events <- supervise.ProcessEvent{Exit: lost}
}

// oom marks an exit by SIGKILL as the OOM killer's when the process's
// cgroup recorded an OOM kill.
func (p *Process) oom(e supervise.Exit) supervise.Exit {
	if e.Signal == syscall.SIGKILL && p.group.OOMKills() > 0 {
		e.OOM = true
	}
	return e
}

// exitFrom prefers the init's own report; an init that died without one
// (killed outright) is described by its wait status.
func exitFrom(r procinit.Report, ps *os.ProcessState) supervise.Exit {
	e := supervise.Exit{At: time.Now()}
	switch r.Event {
	case procinit.EventExit:
		e.Code, e.Signal, e.OOM = r.Code, syscall.Signal(r.Signal), r.OOM
		return e
	case procinit.EventFailed:
		e.Err = r.Error
		return e
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		e.Signal = ws.Signal()
		return e
	}
	e.Code = ps.ExitCode()
	if e.Code == procinit.ExitBadLaunch {
		e.Err = "the init could not read its launch"
	}
	return e
}

// Reopen asks the init to reopen the log files by path and waits until it
// has, or until the process is gone or ctx is done.
func (p *Process) Reopen(ctx context.Context) error {
	if err := p.send(procinit.Command{Cmd: procinit.CmdReopen}); err != nil {
		return fmt.Errorf("reopen logs: %w", err)
	}
	select {
	case <-p.reopen:
	case <-p.exited:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// execPIDValue is the executable's pid once reported, else 0.
func (p *Process) execPIDValue() int { return int(p.execPID.Load()) }

package monit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
	"github.com/vigil-bosh/vigil/internal/pidfile"
	"github.com/vigil-bosh/vigil/internal/procstat"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

// pidFilePoll is how often a start waits for the pid file to name a live
// process (monit polls every second).
const pidFilePoll = 100 * time.Millisecond

// ProgramRunner runs a check process monit's way: the start program (no
// shell, stdio on /dev/null, MONIT_* environment), then the process the pid
// file names, watched through a pidfd; stopping runs the stop program. It
// implements supervise.Runner. Use its Timing for the supervisor: the first
// stop signal runs the stop program. The process a pid file names is
// taken, and ever signalled, only when it is the service's (owner): a pid
// file that names another is reported to OnForeign and taken for no
// process at all.
type ProgramRunner struct {
	Service *monitrc.Service
	Host    string
	// OnForeign, if set, is told once of each foreign process a pid file
	// names (a *ForeignError). It must not block.
	OnForeign func(error)

	mu      sync.Mutex
	foreign int // the pid last reported to OnForeign
}

// Timing returns the supervisor timing that fits: the stop program's
// timeout before the process is killed.
func (r *ProgramRunner) Timing(t supervise.Timing) supervise.Timing {
	t.StopSignal = syscall.SIGTERM
	if r.Service.Stop != nil {
		t.StopTimeout = r.Service.Stop.Timeout
	}
	return t
}

// Start runs the start program unless the pid file already names the
// service's live process, and returns a Process that reports Running once
// the pid file names the service's process, or an exit when the start
// program fails or the timeout passes.
func (r *ProgramRunner) Start(ctx context.Context) (supervise.Process, error) {
	o := ownerOf(r)
	if p := r.adopt(o); p != nil {
		return p, nil
	}
	if r.Service.Start == nil {
		return nil, errors.New("no start program")
	}
	run, err := Spawn(r.Service.Start, Env(r.Service, r.Host, "Started", "start", 0))
	if err != nil {
		return nil, err
	}
	o.session = run.PID
	p := &pidProcess{r: r, owner: o, events: make(chan supervise.ProcessEvent, 2), quit: make(chan struct{})}
	go p.await(ctx, run, r.Service.Start.Timeout)
	return p, nil
}

// Adopt returns the service's process that the pid file names, found
// running (a daemon that died left it), watched as Start's would be; nil
// when the pid file names none (or one that is not the service's).
func (r *ProgramRunner) Adopt() supervise.Process {
	if p := r.adopt(ownerOf(r)); p != nil {
		return p
	}
	return nil
}

func (r *ProgramRunner) adopt(o owner) *pidProcess {
	pid, fd, err := r.open(o)
	if err != nil {
		return nil
	}
	p := &pidProcess{r: r, owner: o, events: make(chan supervise.ProcessEvent, 2), quit: make(chan struct{}),
		pid: pid, fd: fd}
	go p.watch()
	return p
}

// open is livePid for the service's pid file and owner; a foreign process
// is reported (once for each pid) and not opened.
func (r *ProgramRunner) open(o owner) (pid, fd int, err error) {
	pid, fd, err = livePid(r.Service.PidFile, o)
	var fe *ForeignError
	if errors.As(err, &fe) {
		r.mu.Lock()
		report := r.foreign != fe.PID
		r.foreign = fe.PID
		r.mu.Unlock()
		if report && r.OnForeign != nil {
			r.OnForeign(err)
		}
	}
	return pid, fd, err
}

// pidProcess is one process a pid file names.
type pidProcess struct {
	r      *ProgramRunner
	owner  owner // whose processes it may signal
	events chan supervise.ProcessEvent
	quit   chan struct{} // closed by Kill while the pid file is awaited
	once   sync.Once

	mu      sync.Mutex
	pid, fd int
	stopRan bool
}

func (p *pidProcess) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid
}

func (p *pidProcess) Events() <-chan supervise.ProcessEvent { return p.events }

func (p *pidProcess) exit(e supervise.Exit) {
	e.At = time.Now()
	p.events <- supervise.ProcessEvent{Exit: e}
	close(p.events)
}

// await waits for the pid file to name a live process, up to the start
// timeout, as monit does: the start program's exit status does not count
// (a program that fails but leaves the process running has started it).
// A start that fails ends the start program's session, so that what it
// left behind does not pile up at every retry.
func (p *pidProcess) await(ctx context.Context, run *Running, timeout time.Duration) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pidFilePoll)
	defer tick.Stop()
	done, status := run.Done, "still running"
	var foreign error
	fail := func(why string) {
		EndSession(run.PID, 0)
		p.exit(supervise.Exit{Err: why})
	}
	for {
		pid, fd, err := p.r.open(p.owner)
		if err == nil {
			p.mu.Lock()
			p.pid, p.fd = pid, fd
			p.mu.Unlock()
			p.watch()
			return
		}
		if fe := (*ForeignError)(nil); errors.As(err, &fe) {
			foreign = err
		}
		select {
		case err := <-done:
			done, status = nil, "exited 0"
			if err != nil {
				status = err.Error()
			}
		case <-tick.C:
		case <-deadline.C:
			why := fmt.Sprintf("no process in %s after %s (start program: %s)", p.r.Service.PidFile, timeout, status)
			if foreign != nil {
				why = fmt.Sprintf("%v (start program: %s)", foreign, status)
			}
			fail(why)
			return
		case <-p.quit:
			fail("stopped before it ran")
			return
		case <-ctx.Done():
			fail("supervisor ended")
			return
		}
	}
}

// watch reports Running, then waits on the pidfd for the exit.
func (p *pidProcess) watch() {
	p.events <- supervise.ProcessEvent{Running: true, ExecPID: p.pid}
	fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if err == nil || !errors.Is(err, unix.EINTR) {
			break
		}
	}
	p.mu.Lock()
	unix.Close(p.fd)
	p.fd = -1
	p.mu.Unlock()
	p.exit(supervise.Exit{}) // not our child: its status is not ours to read
}

// Signal runs the stop program on the first SIGTERM (the supervisor's
// first stop stage), and sends any other signal to the process, if it is
// still the service's.
func (p *pidProcess) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	// The stop program runs only for a process that runs (monit's do_stop):
	// a start still waiting for its pid file ends at once, as its session.
	if sig == syscall.SIGTERM && p.pid == 0 {
		p.once.Do(func() { close(p.quit) })
		return nil
	}
	if sig == syscall.SIGTERM && !p.stopRan && p.r.Service.Stop != nil {
		p.stopRan = true
		_, err := Spawn(p.r.Service.Stop, Env(p.r.Service, p.r.Host, "Stopped", "stop", p.pid))
		return err
	}
	if p.fd < 0 || p.pid == 0 || !p.owner.mayKill(p.pid) {
		return nil
	}
	return unix.PidfdSendSignal(p.fd, sig, nil, 0)
}

// Kill kills the process and, when it leads a process group, the members
// of the group that are the service's too.
func (p *pidProcess) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pid == 0 {
		p.once.Do(func() { close(p.quit) })
		return nil
	}
	if p.fd < 0 || !p.owner.mayKill(p.pid) {
		return nil
	}
	if pg, err := unix.Getpgid(p.pid); err == nil && pg == p.pid {
		p.owner.killGroup(p.pid)
	}
	return unix.PidfdSendSignal(p.fd, unix.SIGKILL, nil, 0)
}

// ForceKill is Kill again: the process is not our child.
func (p *pidProcess) ForceKill() error { return p.Kill() }

// livePid reads a pid file and opens a pidfd on the process it names, if
// that process is o's (else a *ForeignError). The process's start time
// is read before and after opening the pidfd, and its owner checked in
// between: if the start time differs the pid was reused and is not
// trusted.
func livePid(path string, o owner) (pid, fd int, err error) {
	pid, w, err := pidfile.ReadWriter(path) // the job's directory: never through a planted link or FIFO
	if err != nil {
		return 0, -1, err
	}
	if pid <= 1 {
		return 0, -1, fmt.Errorf("pid file %s names pid %d", path, pid)
	}
	before, err := StartTime(pid)
	if err != nil {
		return 0, -1, err
	}
	fd, err = unix.PidfdOpen(pid, 0)
	if err != nil {
		return 0, -1, fmt.Errorf("pid %d: %w", pid, err)
	}
	cerr := o.check(path, pid, w)
	after, err := StartTime(pid)
	if err == nil && after != before {
		err = fmt.Errorf("pid %d was reused", pid)
	}
	if err = errors.Join(err, cerr); err != nil {
		unix.Close(fd)
		return 0, -1, err
	}
	return pid, fd, nil
}

// StartTime returns a live (not zombie) process's start time in clock
// ticks since boot.
func StartTime(pid int) (uint64, error) {
	st, err := procstat.ReadStat(pid)
	if err != nil {
		return 0, fmt.Errorf("read process stat: %w", err)
	}
	if st.State == 'Z' {
		return 0, errors.New("process is a zombie")
	}
	return st.StartTicks, nil
}

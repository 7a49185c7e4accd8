package procinit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/sandbox"
	"github.com/vigil-bosh/vigil/internal/sandbox/cgroup"
)

// Main runs the init. It reads the Launch from fd 3 and returns the exit
// code for the process: the executable's code, 128+signal when a signal
// killed it, or one of the Exit* codes when it never ran. It is meant to be
// the whole life of the process: call it from main and exit with its result.
func Main() int {
	if len(os.Args) > 2 && os.Args[2] == EnterArg {
		return sandbox.Exec(ControlFD, ControlFD+1)
	}
	// The container's stdout and stderr, when given (before anything is
	// opened: the descriptors after the socket's are theirs).
	conOut, conErr := inheritedConsole()
	return start(conOut, conErr)
}

// nameProcess names the process after its argv[0] (vigil-init) where
// ps, top and pgrep read its name: executed from a memory file by its
// descriptor, it would otherwise be named after the descriptor's number.
func nameProcess() {
	name := filepath.Base(os.Args[0])
	if len(name) > 15 { // the kernel's limit (TASK_COMM_LEN less its NUL)
		name = name[:15]
	}
	_ = os.WriteFile("/proc/self/comm", []byte(name), 0)
}

// start reads the launch and runs the init to its end, with the console it
// inherited (nils without); it returns the init's exit code.
func start(conOut, conErr *os.File) int {
	nameProcess()
	// The executable must not inherit the control socket; and it is made
	// non-blocking so that its reader waits in the runtime's poller rather
	// than holding a thread of its own.
	unix.CloseOnExec(ControlFD)
	if err := unix.SetNonblock(ControlFD, true); err != nil {
		fmt.Fprintln(os.Stderr, "vigil init: no control socket on fd 3")
		return ExitBadLaunch
	}
	ctrl := os.NewFile(ControlFD, "control")
	it := &initProc{sigs: make(chan os.Signal, 64), ctrl: ctrl, caps: &capState{}, conOut: conOut, conErr: conErr}
	sandboxed := os.Getenv(SandboxEnv) == "1"
	os.Unsetenv(SandboxEnv)
	if !sandboxed {
		it.catchSignals() // at once: a spare is then ready for its launch
	}

	// A small buffer: the launch is one line of about a kilobyte, and a
	// longer one is gathered by ReadBytes; each buffered page is the
	// init's for its whole life.
	in := bufio.NewReaderSize(ctrl, 1024)
	line, err := in.ReadBytes('\n')
	var l Launch
	var spec []byte
	if err == nil {
		l, spec, err = decodeLaunch(line)
	}
	if errors.Is(err, io.EOF) && len(line) == 0 {
		return ExitBadLaunch // a spare whose supervisor let go of it, or died: nothing to say
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "vigil init: read launch: %v\n", err)
		return ExitBadLaunch
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "vigil init %s: become a subreaper: %v\n", l.Label, err)
	}
	it.launch, it.specJSON, it.cmds = l, spec, readCommands(in)
	return it.run()
}

// forwarded lists the signals the init passes on to the executable: the
// standard signals that can be caught, except SIGCHLD (the init's own
// business) and the synchronous faults and terminal-stop signals tini leaves
// alone too. Realtime signals are not forwarded: no BOSH job is known to use
// them, and registering each costs the init about 90 µs of start-up.
func forwarded() []os.Signal {
	skip := map[syscall.Signal]bool{
		unix.SIGKILL: true, unix.SIGSTOP: true, unix.SIGCHLD: true,
		unix.SIGSEGV: true, unix.SIGBUS: true, unix.SIGFPE: true, unix.SIGILL: true,
		unix.SIGTRAP: true, unix.SIGSYS: true, unix.SIGABRT: true,
		unix.SIGTTIN: true, unix.SIGTTOU: true,
	}
	var out []os.Signal
	for s := syscall.Signal(1); s <= 31; s++ {
		if !skip[s] {
			out = append(out, s)
		}
	}
	return out
}

// SandboxEnv=1 in an init's environment says that its launch will be
// sandboxed: the init then catches signals only once it has dropped its
// capabilities (catchSignals says why).
const SandboxEnv = "VIGIL_INIT_SANDBOX"

// catchSignals starts receiving the signals the init forwards, and
// SIGCHLD, once: before the init starts anything (the hook, the
// executable, the sandbox helper's exec), so that none is lost. Until
// then a signal ends the init, which has nothing running.
//
// Registering starts the runtime's signal threads (four or five threads
// where a Go program had two), and dropping the capabilities signals
// every thread, each of which then keeps a page or two of its signal
// stack: a sandboxed init without a hook registers after the drop, which
// saves it about 30 KiB and a thread. An init that is not sandboxed
// registers at once, so that a spare does it while it waits.
func (it *initProc) catchSignals() {
	if it.catching {
		return
	}
	it.catching = true
	signal.Notify(it.sigs, forwarded()...)
	signal.Notify(it.sigs, unix.SIGCHLD)
}

// readCommands delivers the supervisor's commands until the socket closes
// (the supervisor died or let go), then closes the channel. The goroutine
// ends with the socket; the process exits soon after in any case.
func readCommands(in *bufio.Reader) <-chan Command {
	out := make(chan Command, 4)
	go func() {
		defer close(out)
		for {
			line, err := in.ReadBytes('\n')
			if err != nil {
				return
			}
			if c, err := decodeCommand(line); err == nil {
				out <- c
			}
		}
	}()
	return out
}

type initProc struct {
	launch   Launch
	specJSON []byte // launch.Sandbox as the launch had it, for the sandbox helper
	ctrl     *os.File
	sigs     chan os.Signal
	catching bool // sigs receives (catchSignals)
	cmds     <-chan Command
	out      *copier // executable's stdout into fd 1
	errw     *copier // executable's stderr into fd 2
	child    int     // the executable's pid, once started
	status   unix.WaitStatus
	done     bool // the executable has been reaped

	hook       int // the pre_start hook's pid while it runs
	hookStatus unix.WaitStatus
	hookDone   bool

	notify *notifyPipe // the readiness fd's pipe, when the launch asks for one

	conOut, conErr *os.File // the container's stdout and stderr, when inherited (see Launch.Console)

	outputc chan struct{} // the copiers' drop changes (see outputReport)

	caps       *capState // whether a kill or a log's reopen must raise the init's capabilities
	capWarning string    // why the init keeps them, when it could not drop them
}

// report sends r to the supervisor. A supervisor that went away is not an
// error: the process keeps running without it.
func (it *initProc) report(r Report) {
	raw, err := it.ctrl.SyscallConn()
	if err != nil {
		return
	}
	msg := encode(r)
	_ = raw.Write(func(fd uintptr) bool {
		err := unix.Sendto(int(fd), msg, unix.MSG_NOSIGNAL, nil)
		return !errors.Is(err, unix.EAGAIN) // wait for room only when full
	})
}

func (it *initProc) fail(code int, format string, args ...any) int {
	_ = it.caps.restore() // for the kills: the init ends
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintf(os.Stderr, "vigil init %s: %s\n", it.launch.Label, msg)
	it.killAll()
	it.finishOutput()
	it.report(Report{Event: EventFailed, Error: msg})
	return code
}

func (it *initProc) run() int {
	logs := []struct {
		fd   int
		path string
	}{{1, it.launch.Stdout}, {2, it.launch.Stderr}} // in this order, so failures are reproducible
	for _, l := range logs {
		if err := redirect(l.fd, l.path); err != nil {
			return it.fail(ExitBadLaunch, "%v", err)
		}
	}
	var err error
	it.outputc = make(chan struct{}, 1)
	var conOut, conErr *console
	if it.launch.Console != "" && it.conOut != nil && it.conErr != nil {
		conOut, conErr = newConsole(it.conOut, it.launch.Console), newConsole(it.conErr, it.launch.Console)
	}
	stamps := it.launch.Timestamps
	if it.out, err = newCopier(os.Stdout, it.launch.Stdout, it.launch.Logs, it.outputc, stamps, conOut); err != nil {
		return it.fail(ExitBadLaunch, "stdout pipe: %v", err)
	}
	if it.errw, err = newCopier(os.Stderr, it.launch.Stderr, it.launch.Logs, it.outputc, stamps, conErr); err != nil {
		return it.fail(ExitBadLaunch, "stderr pipe: %v", err)
	}
	it.out.caps, it.errw.caps = it.caps, it.caps
	if it.launch.PreStart != "" {
		it.catchSignals() // a stop during the hook, and its exit
		if code, msg := it.runHook(); msg != "" {
			return it.fail(code, "%s", msg)
		}
	}
	if it.notify, err = openNotify(it.launch.NotifyFD); err != nil {
		return it.fail(ExitBadLaunch, "%v", err)
	}
	pid, hostPID, err := it.spawnExecutable()
	it.notify.closeWriter()
	if err != nil {
		return it.fail(ExitExecFailed, "%s", it.execError(err))
	}
	it.child = pid
	it.out.closeWriter()
	it.errw.closeWriter()
	var perr error
	it.caps.do(func() { perr = it.writePidFile() })
	if perr != nil {
		return it.fail(ExitBadLaunch, "%v", perr)
	}
	warnings := it.launch.Warnings
	if it.capWarning != "" {
		warnings = append(warnings, it.capWarning)
	}
	it.report(Report{Event: EventRunning, PID: hostPID, Warnings: warnings})
	for !it.done {
		it.step(nil)
	}
	if err := it.caps.restore(); err != nil {
		fmt.Fprintf(os.Stderr, "vigil init %s: %v\n", it.launch.Label, err)
	}
	it.killAll() // bpm's PID namespace would take the rest down with it
	oom := false
	if sb := it.launch.Sandbox; sb != nil && len(sb.Cgroups) > 0 {
		// Whatever escaped the init's tree is still in the cgroup. The init
		// removes it (there is no daemon after a detached start).
		g := cgroup.Open(sb.Cgroups)
		oom = g.OOMKills() > 0
		_ = g.Remove()
	}
	it.removePidFile()
	dropped := it.finishOutput()
	code, sig := exitOf(it.status)
	rep := Report{Event: EventExit, Code: code, Signal: sig, Dropped: dropped, OOM: oom && sig == int(unix.SIGKILL)}
	rep.DroppedStdout, rep.DroppedStderr = it.droppedCounts()
	rep.RotationFailures, _, _ = it.rotationState()
	it.recordExit(rep)
	it.report(rep)
	if sig != 0 {
		return 128 + sig
	}
	return code
}

// spawn starts path in its own process group with the launch environment
// and the output pipes, as a direct child of the init.
//
// It forks from whichever thread the runtime runs it on. A child's
// parent-death signal fires when the thread that forked it ends, not the
// process, and Go ends a thread only when a goroutine locked to it
// returns; the init's only such goroutine is one whose capabilities could
// not be lowered again (capState.do), which ends with the init or with
// the executable's output. Forking on the main thread instead would lock
// the init's work to it and cost every init a thread of its own.
func (it *initProc) spawn(path string, argv []string, dir string) (int, error) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return 0, err
	}
	defer devnull.Close()
	return syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Dir:   dir,
		Env:   it.launch.Env,
		Files: it.notify.files(devnull.Fd(), it.out.writer.Fd(), it.errw.writer.Fd()),
		// Should the init itself be killed outright, the executable dies
		// with it instead of running on unsupervised.
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
}

// step waits for one thing to happen and deals with it: a signal (SIGCHLD
// reaps, others go to the executable), a command, or the hook deadline.
// Before the executable runs, a stop signal, a kill command or the loss of
// the supervisor ends the wait with stopped; other signals are dropped (the
// hook gets none).
func (it *initProc) step(deadline <-chan time.Time) (timedOut, stopped bool) {
	select {
	case s := <-it.sigs:
		sig := s.(syscall.Signal)
		switch {
		case sig == unix.SIGCHLD:
			it.reap()
		case it.child > 0:
			it.caps.do(func() { _ = unix.Kill(it.child, sig) })
		case sig == unix.SIGTERM || sig == unix.SIGINT || sig == unix.SIGQUIT:
			return false, true // a stop during the hook
		}
	case c, ok := <-it.cmds:
		switch {
		case !ok:
			it.cmds = nil // the supervisor let go: carry on alone
			if it.child == 0 {
				// ...unless the executable has not started yet: a start
				// whose supervisor died (a daemon killed during the
				// pre_start hook) is abandoned, as bpm never starts the
				// container when bpm start dies during the hook. The next
				// daemon finds no pid file and starts the process afresh,
				// so it must not also start here.
				return false, true
			}
		case c.Cmd == CmdKill:
			if it.child == 0 {
				return false, true
			}
			it.caps.do(it.killAll)
		case c.Cmd == CmdReopen:
			it.out.reopen()
			it.errw.reopen()
			it.report(Report{Event: EventReopen})
		}
	case <-it.notify.lines():
		it.report(Report{Event: EventReady})
	case <-it.outputc:
		it.report(it.outputReport())
	case <-deadline:
		return true, false
	}
	return false, false
}

// finishOutput waits for the output copiers to drain what the dead
// processes wrote and returns the bytes lost to write errors.
func (it *initProc) finishOutput() int64 {
	var dropped int64
	for _, c := range []*copier{it.out, it.errw} {
		if c != nil {
			c.closeWriter()
			dropped += c.wait(2 * time.Second)
			c.console.close(time.Second)
		}
	}
	return dropped
}

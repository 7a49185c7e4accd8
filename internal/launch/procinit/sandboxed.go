package procinit

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/vigil-bosh/vigil/internal/sandbox"
)

// spawnExecutable starts the executable, confined when the launch has a
// sandbox. It returns the pid as the init sees it (for waiting and
// signalling) and as the host sees it (for the report): they differ when
// the init is PID 1 of its own PID namespace.
func (it *initProc) spawnExecutable() (pid, hostPID int, err error) {
	l := it.launch
	if l.Sandbox == nil {
		it.catchSignals()
		pid, err = it.spawn(l.Path, l.Args, l.Dir)
		return pid, pid, err
	}
	return it.spawnSandboxed(l.Sandbox)
}

// spawnSandboxed starts the helper ("init --enter") in new mount, IPC and
// UTS namespaces (in the init's own under isolation: host, spec.Host) as
// the init's direct child, in its own process group,
// with the output pipes; sends it the spec; and waits until it has exec'd
// the executable (its status pipe closes on exec) or reported an error.
func (it *initProc) spawnSandboxed(spec *sandbox.Spec) (pid, hostPID int, err error) {
	specR, specW, err := os.Pipe()
	if err != nil {
		return 0, 0, fmt.Errorf("sandbox pipe: %w", err)
	}
	defer specW.Close()
	statR, statW, err := os.Pipe()
	if err != nil {
		specR.Close()
		return 0, 0, fmt.Errorf("sandbox pipe: %w", err)
	}
	defer statR.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return 0, 0, err
	}
	defer devnull.Close()
	pid, err = syscall.ForkExec("/proc/self/exe", []string{os.Args[0], "init", EnterArg}, &syscall.ProcAttr{
		Dir:   "/",
		Env:   os.Environ(),
		Files: it.notify.files(devnull.Fd(), it.out.writer.Fd(), it.errw.writer.Fd(), specR.Fd(), statW.Fd()),
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL,
			Cloneflags: spec.Namespaces()},
	})
	specR.Close()
	statW.Close()
	if err != nil {
		return 0, 0, fmt.Errorf("start sandbox helper: %w", err)
	}
	it.lowerCapabilities()
	it.catchSignals() // before the spec: the helper execs once it has it
	raw := it.specJSON
	if raw == nil {
		raw = spec.AppendJSON(nil)
	}
	if _, err := specW.Write(raw); err != nil {
		return 0, 0, fmt.Errorf("send sandbox spec: %w", err)
	}
	specW.Close()
	sc := bufio.NewScanner(statR)
	sc.Buffer(make([]byte, 256), bufio.MaxScanTokenSize) // "pid N", or an error's line
	var msg string
	for sc.Scan() {
		word, rest, _ := strings.Cut(sc.Text(), " ")
		switch word {
		case "pid":
			hostPID, _ = strconv.Atoi(rest)
		case "error":
			msg = rest
		}
	}
	if msg != "" || hostPID == 0 {
		it.child, it.done = pid, false
		if msg == "" {
			msg = "sandbox helper died"
		}
		return 0, 0, errors.New(msg)
	}
	return pid, hostPID, nil
}

// lowerCapabilities drops the init's capabilities (dropCapabilities), or
// those of a privileged process's init to its executable's
// (holdPrivileged), as soon as the sandbox helper, which keeps its own to
// confine the executable, is forked: before the executable can run, and
// read the init's.
func (it *initProc) lowerCapabilities() {
	if it.launch.InitCaps != nil {
		if err := holdPrivileged(it.launch.InitCaps); err != nil {
			it.capWarning = "the init keeps its capabilities: " + err.Error()
		}
		return
	}
	lowered, err := dropCapabilities()
	if err != nil {
		it.capWarning = "the init keeps its capabilities: " + err.Error()
	}
	if lowered {
		it.caps.lower()
	}
}

// execError says why the executable did not start, once: the sandbox
// helper's message already begins "exec PATH:". An executable the
// sandboxed exec did not find although it exists on the host is not among
// what the sandbox mounts, and the message says so.
func (it *initProc) execError(err error) string {
	msg := err.Error()
	if it.launch.Sandbox == nil || it.launch.Sandbox.Host || !strings.HasPrefix(msg, "exec ") {
		return "exec " + it.launch.Path + ": " + msg
	}
	if strings.HasSuffix(msg, syscall.ENOENT.Error()) {
		if _, serr := os.Stat(it.launch.Path); serr == nil {
			msg += " inside the process's sandbox, though " + it.launch.Path + " exists on the host: the sandbox shows only " +
				"/bin, /etc, /lib, /lib64, /sbin, /usr, the job's own directories, the packages and additional_volumes " +
				"(and a script's #! interpreter must be among them too)"
		}
	}
	return msg
}

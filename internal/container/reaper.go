// Package container runs vigil as a container's entrypoint (Kubernetes):
// a reaper as PID 1 (or a subreaper below another init), the daemon below
// it, the jobs' drains before any process gets a signal, stop within the
// pod's grace period, drain stamps shared by the containers of a pod, and
// liveness and readiness for the kubelet.
package container

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// ReaperEnv marks the daemon process started by Reap, so that the same
// command line run again knows it is the daemon, not the reaper.
const ReaperEnv = "VIGIL_CONTAINER_DAEMON"

// Reap is the container's first process. It becomes a subreaper (it is
// PID 1 anyway in its own PID namespace), starts the same command again as
// the daemon with ReaperEnv set, forwards every signal to it, reaps every
// process that ends below it, and returns the daemon's exit code (128+N
// when a signal killed it). Orphans of any job are reaped here, never left
// as zombies. The daemon keeps its own children and reaps them itself.
func Reap(self string, args []string) int {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "vigil container: become a subreaper: %v\n", err)
	}
	sigs := make(chan os.Signal, 32)
	signal.Notify(sigs) // every signal: SIGCHLD reaps, the others go to the daemon
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), ReaperEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "vigil container: start the daemon: %v\n", err)
		return 1
	}
	daemon := cmd.Process.Pid
	for s := range sigs {
		sig := s.(syscall.Signal)
		if sig != unix.SIGCHLD {
			if sig != unix.SIGURG { // the Go runtime's own preemption signal
				_ = unix.Kill(daemon, sig)
			}
			continue
		}
		if code, done := reapAll(daemon); done {
			return code
		}
	}
	return 1
}

// reapAll reaps every child that has ended. When the daemon is among them
// it returns the daemon's exit code and true.
func reapAll(daemon int) (code int, done bool) {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return code, done
		}
		if pid != daemon {
			fmt.Fprintf(os.Stderr, "vigil container: reaped orphan %d\n", pid)
			continue
		}
		code, done = ws.ExitStatus(), true
		if ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	}
}

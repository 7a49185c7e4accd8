package procinit

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// runHook runs the pre_start hook to completion, as bpm does before the
// executable: same environment and output, no arguments, working directory
// "/". It returns an exit code and a message when the start must fail: the
// hook failed, timed out, or a stop arrived while it ran.
func (it *initProc) runHook() (int, string) {
	hook := it.launch.PreStart
	pid, err := it.spawn(hook, []string{hook}, "/")
	if err != nil {
		return ExitHookFailed, fmt.Sprintf("prestart hook failed: %v", err)
	}
	it.hook = pid
	var deadline <-chan time.Time
	if d := it.launch.HookTimeout; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		deadline = t.C
	}
	for !it.hookDone {
		timedOut, stopped := it.step(deadline)
		switch {
		case timedOut:
			_ = unix.Kill(-pid, unix.SIGKILL)
			return ExitHookFailed, fmt.Sprintf("prestart hook failed: timed out after %s", it.launch.HookTimeout)
		case stopped && it.cmds == nil:
			_ = unix.Kill(-pid, unix.SIGKILL)
			return ExitHookFailed, "the supervisor went away while the prestart hook ran: not starting"
		case stopped:
			_ = unix.Kill(-pid, unix.SIGKILL)
			return ExitHookFailed, "stopped while the prestart hook ran"
		}
	}
	if code, sig := exitOf(it.hookStatus); code != 0 || sig != 0 {
		if sig != 0 {
			return ExitHookFailed, fmt.Sprintf("prestart hook failed: signal: %s", unix.SignalName(unix.Signal(sig)))
		}
		return ExitHookFailed, fmt.Sprintf("prestart hook failed: exit status %d", code)
	}
	return 0, ""
}

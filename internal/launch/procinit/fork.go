package procinit

import "syscall"

// forker runs the init's forks on the thread the init started on. A
// child's parent-death signal (Pdeathsig) fires when the thread that
// forked it ends, not when the process does, and Go ends a thread when a
// goroutine locked to it returns; so Main locks itself to its thread for
// the init's whole life and does nothing but the forks asked of it. The
// init's work runs on another goroutine, unlocked: were it the locked one,
// each of its waits would hand the init's one processor to another thread
// and back (two thread switches, about a fifth of an init's start-up).
type forker chan func()

// forkExec is syscall.ForkExec on the forker's thread; it blocks until the
// fork is done.
func (f forker) forkExec(path string, argv []string, attr *syscall.ProcAttr) (pid int, err error) {
	done := make(chan struct{})
	f <- func() {
		pid, err = syscall.ForkExec(path, argv, attr)
		close(done)
	}
	<-done
	return pid, err
}

// serve runs the forks asked for until result delivers the init's exit
// code, and returns it. Main calls it on its locked goroutine.
func (f forker) serve(result <-chan int) int {
	for {
		select {
		case fn := <-f:
			fn()
		case code := <-result:
			return code
		}
	}
}

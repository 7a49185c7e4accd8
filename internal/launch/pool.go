package launch

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/initimage"
	"github.com/vigil-bosh/vigil/internal/launch/procinit"
	"github.com/vigil-bosh/vigil/internal/sandbox"
)

// Pool keeps inits started ahead of need, so that a restart does not wait
// for a new init to start its runtime and register its signals (about 4 ms,
// most of a restart). A spare init has done all of that and waits for its
// launch; it opens the process's log files itself once it gets one. When
// the pool is given a directory for them (PoolConfig.Records), it also
// writes each spare's init record ahead, so that a start only renames it
// into place (a new file on ext4 cost a restart 0.3 to 0.4 ms).
// The pool owns one goroutine, which refills it; Close stops it and ends
// the spares.
type Pool struct {
	cfg        PoolConfig
	cloneFlags uintptr // namespaces the spares are created in
	staging    string  // where the spares' records wait (cfg.Records, once made); "" when none are written ahead
	spares     chan *spare
	wake       chan struct{}
	stop       chan struct{}
	done       chan struct{}
	closing    sync.Once
}

// PoolConfig says which spares a Pool keeps.
type PoolConfig struct {
	Init string   // the init's program
	Env  []string // added to each spare's environment
	Size int      // spares kept ready; below 1 means 1
	// Isolated: spares are created in a PID namespace of their own when
	// vigil runs as root (a spare's namespace is fresh, so any isolated
	// process can use it); only processes started the same way take them.
	Isolated bool
	// Console, when given (stdout, stderr), is inherited by every spare,
	// for runners that copy output there (Options.Console); only those
	// take them.
	Console []*os.File
	// Records, when given, is where the spares' init records are written
	// ahead (boshpath.Layout.SpareRecords), a directory the pool owns: it
	// empties it when it starts and removes it when it is closed. It must
	// be on the file system of the init records, into which a start
	// renames one.
	Records string
}

// spare is an init that runs and waits for its launch on ctrl. record,
// when not "", is its init record written ahead (Pool.staging).
type spare struct {
	cmd    *exec.Cmd
	ctrl   *os.File
	record string
}

// NewPool starts a pool that keeps the spares cfg describes.
func NewPool(cfg PoolConfig) *Pool {
	var flags uintptr
	if cfg.Isolated && os.Geteuid() == 0 && sandbox.HasCapability(unix.CAP_SYS_ADMIN) {
		flags = unix.CLONE_NEWPID
	}
	p := &Pool{cfg: cfg, cloneFlags: flags, spares: make(chan *spare, max(cfg.Size, 1)),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	p.staging = stagingDir(cfg.Records)
	go p.fill()
	return p
}

// take returns a spare created with cloneFlags, with a console or not as
// asked, or nil when none is ready (or p is nil, or its spares are created
// otherwise). Either way it asks for the pool to be refilled.
func (p *Pool) take(cloneFlags uintptr, console bool) *spare {
	if p == nil || p.cloneFlags != cloneFlags || (len(p.cfg.Console) > 0) != console {
		return nil
	}
	defer p.poke()
	select {
	case s := <-p.spares:
		return s
	default:
		return nil
	}
}

func (p *Pool) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *Pool) fill() {
	defer close(p.done)
	for {
		for len(p.spares) < cap(p.spares) {
			s, err := startInit(p.cfg.Init, p.cfg.Env, "", nil, nil, p.cloneFlags, p.cfg.Console...)
			if err != nil {
				break // spawns fall back to a fresh init; try again when woken
			}
			s.stage(p.staging)
			select {
			case p.spares <- s:
			case <-p.stop:
				s.discard()
				return
			}
		}
		select {
		case <-p.wake:
		case <-p.stop:
			return
		}
		// A spare was taken: the start that took it runs now, and an
		// init's own start (about 1.5 ms of a CPU) would share the
		// machine with it.
		refill := time.NewTimer(refillDelay)
		select {
		case <-refill.C:
		case <-p.stop:
			refill.Stop()
			return
		}
	}
}

// refillDelay is how long a pool waits after a spare is taken before it
// starts another: with the spare started at once, a restart after SIGKILL
// took 4.8 to 5.0 ms at the median (three runs of 100 restarts, 100
// processes), 4.3 to 4.5 with the refill 25 ms later.
const refillDelay = 25 * time.Millisecond

// Close stops refilling and ends every spare. It returns once they are
// reaped. Closing a closed Pool does nothing.
func (p *Pool) Close() {
	p.closing.Do(p.close)
}

func (p *Pool) close() {
	close(p.stop)
	<-p.done
	for {
		select {
		case s := <-p.spares:
			s.discard()
		default:
			if p.staging != "" {
				_ = os.RemoveAll(p.staging)
			}
			return
		}
	}
}

// discard kills a spare that will never get a launch and reaps it.
func (s *spare) discard() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.ctrl.Close()
	if s.record != "" {
		_ = os.Remove(s.record)
	}
}

// startInit starts the program init as "vigil-init init [LABEL]" in a
// session of its own, with stdout (nil: /dev/null) and stderr (nil: this
// process's own, where an init's errors before it has its launch go; the
// launch's log files replace both), its end of a fresh control socket on
// fd 3 and, when given, the console (stdout, stderr) after it, said in its
// environment (procinit.ConsoleEnv), in the namespaces cloneFlags asks for.
func startInit(init string, env []string, label string, stdout, stderr *os.File, cloneFlags uintptr, console ...*os.File) (*spare, error) {
	// Our end is non-blocking so that its reader waits in the poller, not
	// in a thread of its own; the init's end blocks.
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err == nil {
		err = unix.SetNonblock(fds[1], false)
	}
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "control"), os.NewFile(uintptr(fds[1]), "control")
	defer theirs.Close()
	args := []string{initimage.Name, "init"} // what ps shows, whichever program init is
	if label != "" {
		args = append(args, label)
	}
	initEnv := []string{"GOMAXPROCS=1", "GODEBUG=asyncpreemptoff=1", "GOGC=50"}
	if len(console) > 0 {
		initEnv = append(initEnv, procinit.ConsoleEnv+"=1")
	}
	if cloneFlags&unix.CLONE_NEWPID != 0 { // a PID namespace of its own: the init of a sandbox
		initEnv = append(initEnv, procinit.SandboxEnv+"=1")
	}
	cmd := &exec.Cmd{
		Path:        init,
		Args:        args,
		Env:         append(initEnv, env...),
		Dir:         "/",
		ExtraFiles:  append([]*os.File{theirs}, console...),
		SysProcAttr: &syscall.SysProcAttr{Setsid: true, Cloneflags: cloneFlags},
	}
	if stdout != nil {
		cmd.Stdout = stdout
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		ours.Close()
		return nil, fmt.Errorf("start init: %w", err)
	}
	return &spare{cmd: cmd, ctrl: ours}, nil
}

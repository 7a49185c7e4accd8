package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// instance is one running supervisor with its own directory and report
// socket.
type instance struct {
	peer    string
	drv     driver
	spec    spec
	tr      *tracker
	cmd     *exec.Cmd
	log     *os.File
	launch  int64         // monotonic ns just before the supervisor was started
	started time.Duration // from the launch until the last child started (waitUp)
	exited  chan struct{} // closed when the supervisor process has exited
	closed  bool
	keep    bool // leave the directory for inspection
}

// launch lays out and starts one supervisor. tag makes the directory unique.
func (h *harness) launch(peer string, n int, v variant, tag string) (*instance, error) {
	dir := filepath.Join(h.tmp, peer+"-"+tag)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("instance dir: %w", err)
	}
	drv, err := newDriver(peer, h.vigilBin)
	if err != nil {
		return nil, err
	}
	sp := spec{Dir: dir, N: n, Child: h.child, Report: filepath.Join(dir, "report.sock"), Variant: v}
	if rp, ok := drv.(interface{ reportPath(dir string) string }); ok && rp.reportPath(dir) != "" {
		sp.Report = rp.reportPath(dir)
	}
	if err := drv.Setup(sp); err != nil {
		return nil, fmt.Errorf("setup %s: %w", peer, err)
	}
	tr, err := newTracker(sp.Report)
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "supervisor.out"))
	if err != nil {
		tr.close(context.Background())
		return nil, fmt.Errorf("supervisor log: %w", err)
	}
	cmd := drv.Command()
	cmd.Dir = dir
	if cmd.Env == nil {
		cmd.Env = baseEnv()
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group so the whole tree can be killed by pgid at the end;
	// die with the harness if it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	in := &instance{peer: peer, drv: drv, spec: sp, tr: tr, cmd: cmd, log: logf, exited: make(chan struct{}), keep: h.keep}
	in.launch = monoNow()
	if err := cmd.Start(); err != nil {
		tr.close(context.Background())
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", peer, err)
	}
	go func() {
		_ = cmd.Wait()
		close(in.exited)
	}()
	return in, nil
}

// waitUp blocks until n distinct children are alive at the same time and
// returns the time from launch until the last of them started.
func (in *instance) waitUp(ctx context.Context, n int, limit time.Duration) (time.Duration, error) {
	ctx, cancel := in.whileRunning(ctx)
	defer cancel()
	var last int64
	err := in.tr.wait(ctx, time.Now().Add(limit), func() bool {
		if in.tr.aliveCount() < n {
			return false
		}
		for _, k := range in.tr.reports {
			if k.Dead == 0 {
				last = max(last, k.Start)
			}
		}
		return true
	})
	if err != nil {
		in.tr.mu.Lock()
		got := in.tr.aliveCount()
		in.tr.mu.Unlock()
		return 0, fmt.Errorf("%d of %d children up: %w", got, n, err)
	}
	return time.Duration(last - in.launch), nil
}

// whileRunning derives a context that ends when the supervisor exits, so a
// supervisor that dies does not make the harness sit out a failure guard.
func (in *instance) whileRunning(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-in.exited:
			cancel(fmt.Errorf("%s exited (%s): %s", in.peer, in.cmd.ProcessState, in.logTail()))
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(nil) }
}

// logTail returns the end of the supervisor's own output.
func (in *instance) logTail() string {
	b, err := os.ReadFile(in.log.Name())
	if err != nil {
		return "no output"
	}
	return tail(string(b), 200)
}

// supervisorPids lists the supervisor's own processes: the tree under the
// daemon minus the supervised children (which report their pids).
func (in *instance) supervisorPids() ([]int, error) {
	select {
	case <-in.exited:
		return nil, errors.New("supervisor has exited")
	default:
	}
	all, err := descendants(in.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	if x, ok := in.drv.(interface{ ExtraPids() []int }); ok {
		for _, p := range x.ExtraPids() {
			if !slices.Contains(all, p) {
				all = append(all, p)
			}
		}
	}
	kids := in.tr.alivePids()
	// Children and zombies (helpers awaiting their reaper) are not counted.
	return slices.DeleteFunc(all, func(p int) bool { return kids[p] || !alive(p) }), nil
}

// memSplit is a supervisor's memory: the sum over its processes, the
// root process (the one the harness started) alone, and the average
// private memory of the others (the per-process supervisors: vigil's
// inits, runsv, s6-supervise, supervise), NaN when there are none.
type memSplit struct {
	Total, Root memUse
	PerPrivate  float64
	Procs       int
}

// memory reads the supervisor's processes' memory.
func (in *instance) memory() (memSplit, error) {
	pids, err := in.supervisorPids()
	if err != nil {
		return memSplit{}, err
	}
	var s memSplit
	var others, private uint64
	for _, p := range pids {
		m, err := readMem(p)
		if err != nil {
			continue // exited meanwhile
		}
		s.Total.RSS += m.RSS
		s.Total.PSS += m.PSS
		s.Total.Private += m.Private
		s.Procs++
		if p == in.cmd.Process.Pid {
			s.Root = m
		} else {
			others++
			private += m.Private
		}
	}
	s.PerPrivate = math.NaN()
	if others > 0 {
		s.PerPrivate = float64(private) / float64(others)
	}
	return s, nil
}

// supervisorCPU is the CPU time the supervisor's processes have used so
// far, with the children they waited for (see onCPU).
func (in *instance) supervisorCPU() (time.Duration, error) {
	pids, err := in.supervisorPids()
	if err != nil {
		return 0, err
	}
	var total time.Duration
	for _, p := range pids {
		if d, err := onCPU(p); err == nil { // a process that exited meanwhile is lost
			total += d
		}
	}
	return total, nil
}

// close shuts the supervisor down politely for up to polite, then kills its
// process group and every process that was below it, then every reported
// child still alive. It returns how many children the harness had to kill
// and removes the instance directory.
func (in *instance) close(ctx context.Context, polite time.Duration) (int, error) {
	if in.closed {
		return 0, nil
	}
	in.closed = true
	root := in.cmd.Process.Pid
	tree, _ := descendants(root)
	var shutErr error
	select {
	case <-in.exited:
	default:
		sctx, cancel := context.WithTimeout(ctx, polite)
		shutErr = in.drv.Shutdown(sctx, root)
		select {
		case <-in.exited:
		case <-sctx.Done():
		}
		cancel()
	}
	// Whatever is left of the tree: the group first, then stragglers that
	// moved to their own group or session (runsvdir -P, supervisord).
	if later, err := descendants(root); err == nil {
		tree = append(tree, later...)
	}
	_ = syscall.Kill(-root, syscall.SIGKILL)
	kids := in.tr.alivePids()
	for _, p := range tree {
		if p != root && !kids[p] {
			_ = syscall.Kill(p, syscall.SIGKILL)
			go reap(p) // orphans of a killed daemon are re-parented to us
		}
	}
	select {
	case <-in.exited:
	case <-time.After(5 * time.Second):
	}
	left := in.tr.close(ctx)
	in.log.Close()
	var rmErr error
	if in.keep {
		return left, shutErr
	}
	if err := os.RemoveAll(in.spec.Dir); err != nil {
		rmErr = fmt.Errorf("remove %s: %w", in.spec.Dir, err)
	}
	return left, errors.Join(shutErr, rmErr)
}

// becomeSubreaper makes orphaned grandchildren ours, so they are reaped
// even where PID 1 does not reap (as in some containers); monit would
// otherwise see a dead child as a running zombie.
func becomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_CHILD_SUBREAPER: %w", err)
	}
	return nil
}

// reapOrphans collects any zombie children left once every instance is
// closed and no command of ours is running, so none outlive the harness
// under a PID 1 that does not reap.
func reapOrphans() {
	var ws unix.WaitStatus
	for {
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
	}
}

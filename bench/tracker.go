package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// monoNow reads CLOCK_MONOTONIC, the clock the children report with.
func monoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(fmt.Sprintf("clock_gettime: %v", err)) // cannot happen on Linux
	}
	return ts.Nano()
}

// errTimeout marks a wait that ran into its failure guard.
var errTimeout = errors.New("timed out")

// sigEvent is a signal a TERM-ignoring child told us it caught.
type sigEvent struct {
	Name string
	At   int64 // harness monotonic ns when the line arrived
}

// kid is one child process as it described itself.
type kid struct {
	Pid     int
	Start   int64 // child's own CLOCK_MONOTONIC at start
	Recv    int64 // when the report arrived
	Dead    int64 // when its connection closed (it exited); 0 while alive
	Signals []sigEvent
	Killed  bool // the harness itself sent SIGKILL
	pidfd   int  // -1 when pidfd_open failed
}

// tracker owns one report socket and everything learned through it. All
// fields below mu are guarded by it; wake is closed and replaced on every
// change so waiters never poll.
type tracker struct {
	ln *net.UnixListener

	mu      sync.Mutex
	wake    chan struct{}
	reports []*kid // in arrival order; restarts append new entries
	byPid   map[int]*kid
	conns   []net.Conn
	bad     []string // malformed lines, for diagnostics
	closed  bool
}

func newTracker(path string) (*tracker, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on report socket: %w", err)
	}
	// Children that run as another user (vigil with isolation) must be
	// able to connect.
	if err := os.Chmod(path, 0o777); err != nil {
		ln.Close()
		return nil, fmt.Errorf("report socket: %w", err)
	}
	t := &tracker{ln: ln, wake: make(chan struct{}), byPid: make(map[int]*kid)}
	go t.accept()
	return t, nil
}

// peerPid is the pid of the process at the other end of c as this
// process sees it (SO_PEERCRED), or 0. A child in a PID namespace of its
// own (vigil with isolation) reports the pid it has there; this is its
// pid on the host.
func peerPid(c net.Conn) int {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0
	}
	var pid int
	_ = raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}

func (t *tracker) changed() { // mu held
	close(t.wake)
	t.wake = make(chan struct{})
}

func (t *tracker) accept() {
	for {
		c, err := t.ln.Accept()
		if err != nil {
			return // listener closed
		}
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			c.Close()
			return
		}
		t.conns = append(t.conns, c)
		t.mu.Unlock()
		go t.read(c)
	}
}

// read handles one child's connection: the report line, then signal names,
// then EOF when the child dies.
func (t *tracker) read(c net.Conn) {
	r := bufio.NewReader(c)
	var k *kid
	for {
		line, err := r.ReadString('\n')
		now := monoNow()
		if err != nil {
			t.mu.Lock()
			if k != nil && k.Dead == 0 {
				k.Dead = now
				t.changed()
			}
			t.mu.Unlock()
			if k != nil {
				go reap(k.Pid)
			}
			return
		}
		line = strings.TrimSpace(line)
		t.mu.Lock()
		if k == nil {
			k = t.addReport(line, now, peerPid(c))
		} else {
			k.Signals = append(k.Signals, sigEvent{Name: line, At: now})
		}
		t.changed()
		t.mu.Unlock()
	}
}

// addReport records a child's first line; host, when not 0, is its pid on
// the host, which wins over the pid it reported.
func (t *tracker) addReport(line string, now int64, host int) *kid { // mu held
	f := strings.Fields(line)
	var pid int
	var start int64
	var err error
	if len(f) == 2 {
		pid, err = strconv.Atoi(f[0])
		if err == nil {
			start, err = strconv.ParseInt(f[1], 10, 64)
		}
	}
	if len(f) != 2 || err != nil {
		t.bad = append(t.bad, line)
		return &kid{pidfd: -1} // detached: still absorbs later lines
	}
	if host != 0 {
		pid = host
	}
	k := &kid{Pid: pid, Start: start, Recv: now, pidfd: -1}
	// The child is certainly alive while its connection is open, so the
	// pidfd names this very process even if the pid is reused later.
	if fd, err := unix.PidfdOpen(pid, 0); err == nil {
		k.pidfd = fd
	}
	t.reports = append(t.reports, k)
	t.byPid[pid] = k
	return k
}

// reap collects pid if it became our child: the harness is a child
// subreaper, so daemons that double-fork (monit's start programs) leave their
// children to us. ECHILD means somebody else is the parent.
func reap(pid int) {
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, 0, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// wait blocks until cond (called with mu held) is true, ctx ends or the
// deadline passes.
func (t *tracker) wait(ctx context.Context, deadline time.Time, cond func() bool) error {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		t.mu.Lock()
		ok := cond()
		ch := t.wake
		t.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-timer.C:
			return errTimeout
		case <-ctx.Done():
			return fmt.Errorf("wait: %w", context.Cause(ctx))
		}
	}
}

// aliveCount is the number of reported children not yet dead (mu held).
func (t *tracker) aliveCount() int {
	n := 0
	for _, k := range t.reports {
		if k.Dead == 0 {
			n++
		}
	}
	return n
}

// snapshot copies the reports so callers can read them without the lock.
func (t *tracker) snapshot() []kid {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]kid, len(t.reports))
	for i, k := range t.reports {
		out[i] = *k
		out[i].Signals = append([]sigEvent(nil), k.Signals...)
	}
	return out
}

// alivePids lists the children that have not died.
func (t *tracker) alivePids() map[int]bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[int]bool)
	for _, k := range t.reports {
		if k.Dead == 0 {
			out[k.Pid] = true
		}
	}
	return out
}

// kill sends SIGKILL to one reported child through its pidfd.
func (t *tracker) kill(pid int) error {
	t.mu.Lock()
	k := t.byPid[pid]
	t.mu.Unlock()
	if k == nil {
		return fmt.Errorf("pid %d never reported", pid)
	}
	if k.pidfd < 0 {
		return fmt.Errorf("no pidfd for %d", pid)
	}
	if err := unix.PidfdSendSignal(k.pidfd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("pidfd_send_signal %d: %w", pid, err)
	}
	return nil
}

// killAlive SIGKILLs every child still alive, marks it as killed by the
// harness, waits briefly for the deaths and returns how many there were.
func (t *tracker) killAlive(ctx context.Context) int {
	t.mu.Lock()
	var victims []*kid
	for _, k := range t.reports {
		if k.Dead == 0 {
			k.Killed = true
			victims = append(victims, k)
		}
	}
	t.mu.Unlock()
	for _, k := range victims {
		if k.pidfd >= 0 {
			_ = unix.PidfdSendSignal(k.pidfd, unix.SIGKILL, nil, 0)
		}
	}
	if len(victims) > 0 {
		_ = t.wait(ctx, time.Now().Add(5*time.Second), func() bool { return t.aliveCount() == 0 })
	}
	return len(victims)
}

// close stops listening, kills what is still alive and releases the fds.
func (t *tracker) close(ctx context.Context) int {
	n := t.killAlive(ctx)
	t.ln.Close()
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	n += t.killAlive(ctx) // reports that raced with the first sweep
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.conns {
		c.Close()
	}
	for _, k := range t.reports {
		if k.pidfd >= 0 {
			unix.Close(k.pidfd)
			k.pidfd = -1
		}
	}
	_ = os.Remove(t.ln.Addr().String())
	return n
}

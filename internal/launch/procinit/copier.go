package procinit

import (
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// copier moves what the executable writes to a pipe into a log file. A
// write error (a full disk, a vanished directory) drops the data and counts
// it: the process never blocks on its log. The copier owns its goroutine,
// which ends when every writer of the pipe is gone or wait gives up.
//
// The log file is always the descriptor dst (the init's fd 1 or 2): a
// reopen or a rotation puts the new file under the same descriptor, so the
// init's own messages follow the log too.
type copier struct {
	reader, writer *os.File
	path           string       // the log's path, "" when it cannot be reopened
	rot            *LogRotation // nil: no rotation
	dst            *os.File
	reopenc        chan struct{}
	done           chan struct{}
	dropped        atomic.Int64
	dropping       atomic.Bool
	changed        chan<- struct{} // told when dropping or failing rotations start, double or end
	closeOnce      sync.Once
	stamps         bool                   // each line begins with the time it was read
	console        *console               // also copy the output there; nil: not
	caps           *capState              // raised for a reopen or a rotation (the log directory is the job user's); nil: never lowered
	rotFailures    atomic.Int64           // rotations that failed
	rotFailing     atomic.Bool            // the last rotation tried failed
	rotErr         atomic.Pointer[string] // the last failure's error

	// Owned by the loop goroutine:
	reported    int64  // dropped when changed was last told
	lineStart   bool   // the last byte written ended a line
	retryIn     int64  // bytes to write before trying a failed rotation again
	rotReported int64  // rotFailures when the supervisor was last told
	midLine     bool   // the last byte read did not end a line (for stamps)
	stampNow    []byte // the stamp of the last chunk, reused
	stamped     []byte // the last chunk with its stamps, reused
}

// newCopier starts a copier into dst, which was opened from path; changed
// (buffered, shared by the copiers of one init) is told of drop changes.
// With stamps each line begins with the time; con, when not nil, gets a
// copy of the output.
func newCopier(dst *os.File, path string, rot *LogRotation, changed chan<- struct{}, stamps bool, con *console) (*copier, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	if path == "" || (rot != nil && rot.MaxSize <= 0) {
		rot = nil
	}
	c := &copier{reader: r, writer: w, path: path, rot: rot, dst: dst, changed: changed, stamps: stamps, console: con,
		reopenc: make(chan struct{}, 1), done: make(chan struct{}), lineStart: true}
	go c.loop()
	return c, nil
}

// copyBuffer is the size of a copier's buffer: a 4 KiB page, a line or
// a chunk of several at a time (a pipe holds 64 KiB, which a busy writer
// leaves for a few more reads).
const copyBuffer = 4 << 10

func (c *copier) loop() {
	defer close(c.done)
	// The buffer comes with the first output: a stream the process never
	// writes to (many a job's stdout) costs the init no page for it.
	if c.awaitOutput() != nil {
		return
	}
	buf := make([]byte, copyBuffer)
	for {
		n, err := c.reader.Read(buf)
		if n > 0 {
			select {
			case <-c.reopenc:
				c.swap()
			default:
			}
			c.console.send(buf[:n])
			c.write(c.stamp(buf[:n]))
		}
		if err != nil {
			return
		}
	}
}

// awaitOutput waits, holding no buffer, until the pipe has something to
// read or every writer is gone; it fails only when the pipe was closed
// under it (wait gave up).
func (c *copier) awaitOutput() error {
	raw, err := c.reader.SyscallConn()
	if err != nil {
		return err
	}
	return raw.Read(func(fd uintptr) bool {
		// The poller only wakes on a change: ask the pipe itself first.
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 0)
		return n != 0 || (err != nil && err != unix.EINTR)
	})
}

// stamp puts the time before each line that begins in b, when the copier
// stamps lines. The stamped copy reuses the copier's own buffer, so that a
// busy stamped stream makes no garbage for the init's collector.
func (c *copier) stamp(b []byte) []byte {
	if !c.stamps {
		return b
	}
	atStart := !c.midLine
	c.stampNow = appendTimestamp(c.stampNow[:0], time.Now())
	c.stamped = prefixLines(c.stamped[:0], b, c.stampNow, &atStart)
	c.midLine = !atStart
	return c.stamped
}

// write puts b into the log, rotating on the way as often as the file is
// due (a chunk may be several files' worth).
func (c *copier) write(b []byte) {
	rotated := false
	for len(b) > 0 {
		size, ok := c.size()
		if !ok {
			c.drop(len(b)) // the file was deleted and its path cannot be reopened
			return
		}
		cut := c.rotationCut(b, size)
		if cut == 0 && rotated {
			cut = len(b) // a new file with no room (re-created under us): never rotate in a loop
		}
		c.put(b[:cut])
		b = b[cut:]
		rotated = false
		if len(b) > 0 {
			if !c.rotate() {
				c.put(b)
				return
			}
			rotated = true
		}
	}
}

// size returns the log file's size. A log file deleted under the copier
// (its directory removed, say) is reopened by path first, so that output
// does not go on filling an invisible file; ok is false when that fails.
func (c *copier) size() (size int64, ok bool) {
	var st unix.Stat_t
	if unix.Fstat(int(c.dst.Fd()), &st) != nil {
		return 0, true // let the write tell
	}
	if st.Nlink == 0 && c.path != "" {
		if c.open() != nil || unix.Fstat(int(c.dst.Fd()), &st) != nil {
			return 0, false
		}
	}
	return st.Size, true
}

// put writes b, counting what fails as dropped.
func (c *copier) put(b []byte) {
	if len(b) == 0 {
		return
	}
	w, err := c.dst.Write(b)
	if w > 0 {
		c.lineStart = b[w-1] == '\n'
	}
	if c.rot != nil {
		c.retryIn -= int64(w)
	}
	if err != nil {
		c.drop(len(b) - w)
		return
	}
	if c.dropping.Load() {
		c.dropping.Store(false)
		c.tell()
	}
}

// drop counts n lost bytes and tells when dropping starts or the count has
// doubled since last told.
func (c *copier) drop(n int) {
	total := c.dropped.Add(int64(n))
	if !c.dropping.Load() || total >= 2*c.reported {
		c.dropping.Store(true)
		c.tell()
	}
}

func (c *copier) tell() {
	c.reported = c.dropped.Load()
	c.signal()
}

// signal asks the init for an output report.
func (c *copier) signal() {
	select {
	case c.changed <- struct{}{}:
	default: // already pending: the report reads the latest counts
	}
}

// reopen asks for the log file to be reopened by path before the next write.
func (c *copier) reopen() {
	select {
	case c.reopenc <- struct{}{}:
	default:
	}
}

func (c *copier) swap() {
	if c.path != "" {
		_ = c.open() // on failure keep writing where we were
	}
}

// open opens the log's path again and puts it under dst's descriptor.
func (c *copier) open() (err error) {
	c.caps.do(func() { err = redirect(int(c.dst.Fd()), c.path) })
	return err
}

// closeWriter closes the init's own copy of the pipe's write end, so that
// the copier sees the end once the processes that hold it are gone.
func (c *copier) closeWriter() { c.closeOnce.Do(func() { c.writer.Close() }) }

// wait waits up to d for the copier to drain, then cuts it off, and returns
// the number of bytes dropped.
func (c *copier) wait(d time.Duration) int64 {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		c.reader.Close() // a writer outside the tree still holds the pipe
		<-c.done
	}
	return c.dropped.Load()
}

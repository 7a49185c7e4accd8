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
type copier struct {
	reader, writer *os.File
	path           string
	dst            *os.File
	reopenc        chan struct{}
	done           chan struct{}
	dropped        atomic.Int64
	closeOnce      sync.Once
}

func newCopier(dst *os.File, path string) (*copier, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	c := &copier{reader: r, writer: w, path: path, dst: dst,
		reopenc: make(chan struct{}, 1), done: make(chan struct{})}
	go c.loop()
	return c, nil
}

func (c *copier) loop() {
	defer close(c.done)
	buf := make([]byte, 16<<10)
	for {
		n, err := c.reader.Read(buf)
		if n > 0 {
			select {
			case <-c.reopenc:
				c.swap()
			default:
			}
			w, werr := c.dst.Write(buf[:n])
			if werr != nil {
				c.dropped.Add(int64(n - w))
			}
		}
		if err != nil {
			return
		}
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
	if c.path == "" {
		return
	}
	f, err := os.OpenFile(c.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return // keep writing where we were
	}
	c.dst.Close()
	c.dst = f
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

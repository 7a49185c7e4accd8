package procinit

import (
	"bytes"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// The descriptors on which an init may inherit the container's stdout and
// stderr (vigil container --console), after its control socket.
const (
	consoleOutFD = ControlFD + 1
	consoleErrFD = ControlFD + 2
)

// ConsoleEnv=1 in an init's environment says that it was given the
// console descriptors; without it the init takes none.
const ConsoleEnv = "VIGIL_INIT_CONSOLE"

// consoleQueue bounds the chunks waiting for a console: past it, output is
// dropped from the console (never from the log file) rather than wait.
const consoleQueue = 256

// inheritedConsole takes the console descriptors the init was given, if
// any, onto close-on-exec descriptors of its own, so that neither the hook
// nor the executable inherits them. It must run before the init opens
// anything (the descriptors would be taken for others'). Without them it
// returns nils.
func inheritedConsole() (stdout, stderr *os.File) {
	// Only when the daemon says it passed them: descriptors 4 and 5 are
	// otherwise whatever the runtime opened first (its epoll descriptor,
	// on some kernels), and taking them would close those.
	given := os.Getenv(ConsoleEnv) == "1"
	os.Unsetenv(ConsoleEnv)
	if !given {
		return nil, nil
	}
	take := func(fd int) *os.File {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			return nil // not inherited
		}
		dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 10)
		unix.Close(fd)
		if err != nil {
			return nil
		}
		return os.NewFile(uintptr(dup), "console")
	}
	return take(consoleOutFD), take(consoleErrFD)
}

// console copies a stream's output, each line prefixed, to the container's
// stdout or stderr without ever holding up the copier: chunks queue for a
// goroutine of its own that writes them; a full queue drops the chunk and
// counts it. The goroutine ends with close.
type console struct {
	f       *os.File
	prefix  []byte // "JOB/PROC | "
	atStart bool   // the next byte begins a line (owned by the copier)
	queue   chan []byte
	dropped atomic.Int64
	done    chan struct{}
}

func newConsole(f *os.File, prefix string) *console {
	c := &console{f: f, prefix: []byte(prefix + " | "), atStart: true, queue: make(chan []byte, consoleQueue), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for b := range c.queue {
			_, _ = c.f.Write(b) // a console that fails loses the output; the log has it
		}
	}()
	return c
}

// send queues b, with the prefix at each line's start; nil c does nothing.
func (c *console) send(b []byte) {
	if c == nil {
		return
	}
	select {
	case c.queue <- prefixLines(nil, b, c.prefix, &c.atStart):
	default:
		c.dropped.Add(int64(len(b)))
	}
}

// close ends the console once what is queued is written, waiting at most d.
func (c *console) close(d time.Duration) {
	if c == nil {
		return
	}
	close(c.queue)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C: // a console nobody reads: the process is gone, do not wait for it
	}
}

// prefixLines appends b to dst with prefix before each line that begins
// in b; atStart says whether b's first byte begins a line, and is updated
// for the byte after b.
func prefixLines(dst, b, prefix []byte, atStart *bool) []byte {
	dst = slices.Grow(dst, len(b)+(bytes.Count(b, []byte{'\n'})+1)*len(prefix)) // one allocation
	for len(b) > 0 {
		if *atStart {
			dst = append(dst, prefix...)
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			*atStart = false
			return append(dst, b...)
		}
		dst = append(dst, b[:i+1]...)
		b = b[i+1:]
		*atStart = true
	}
	return dst
}

// appendTimestamp appends the prefix of a stamped line to dst: the time,
// RFC 3339 in UTC with milliseconds, and a space.
func appendTimestamp(dst []byte, now time.Time) []byte {
	return now.UTC().AppendFormat(dst, "2006-01-02T15:04:05.000Z07:00 ")
}

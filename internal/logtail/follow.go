package logtail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// MaxLine is the longest line Follow emits whole: a longer one comes out in
// pieces of MaxLine bytes.
const MaxLine = 64 << 10

// Follow emits, in order and without their newlines, the lines written to
// the file at path from byte offset from on, until ctx is done (it returns
// ctx.Err()) or emit returns an error (it returns that error). A negative
// from starts at the end of the file as Follow opens it; a from beyond the
// end starts at 0, the file having been truncated since the offset was
// taken. Follow is driven by inotify alone, never by a timer, and blocks
// between changes.
//
// It follows the path, not one file: when the file is renamed away (a
// rotation) it reads what is left of it, then goes on at the start of the
// new file at path, waiting for one to appear; when the file shrinks below
// what was read (logrotate's copytruncate) it goes on from its start. A file
// missing at the start is waited for. A final line without a newline is held
// back until its newline arrives, or emitted when the file is replaced. The
// directory of path must exist; its removal ends Follow with an error.
func Follow(ctx context.Context, path string, from int64, emit func(line string) error) error {
	in, err := newInotify()
	if err != nil {
		return err
	}
	defer in.Close()
	fw := &follower{path: path, base: filepath.Base(path), in: in, emit: emit, fileWatch: -1, buf: make([]byte, 32<<10)}
	fw.dirWatch, err = fw.watch(filepath.Dir(path), unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_MOVED_FROM|
		unix.IN_DELETE|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_ONLYDIR)
	if err != nil {
		return fmt.Errorf("watch %s: %w", filepath.Dir(path), err)
	}
	defer fw.closeFile()
	// The watch is in place before the first look, so no change is missed.
	if err := fw.open(); err != nil {
		return err
	}
	if fw.f != nil {
		st, err := fw.f.Stat()
		if err != nil {
			return fmt.Errorf("stat %s: %w", path, err)
		}
		switch {
		case from < 0:
			fw.off = st.Size()
		case from > st.Size(): // truncated since the offset was taken
			fw.off = 0
		default:
			fw.off = from
		}
	}
	stop := context.AfterFunc(ctx, func() { _ = in.SetReadDeadline(time.Now()) })
	defer stop()
	events := make([]byte, 64<<10)
	for {
		if err := fw.catchUp(ctx); err != nil {
			return err
		}
		if err := fw.wait(events); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
	}
}

// follower is Follow's state: the file being read and where.
type follower struct {
	path, base string
	in         *os.File // the inotify instance, non-blocking
	dirWatch   int
	fileWatch  int      // watch on the open file itself, -1 when none
	f          *os.File // the file being read, nil while there is none
	off        int64    // next byte of f to read
	partial    []byte   // the start of a line whose newline has not come yet
	buf        []byte   // drain's read buffer, reused at every wake-up
	emit       func(string) error
}

func newInotify() (*os.File, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	return os.NewFile(uintptr(fd), "inotify"), nil
}

func (fw *follower) watch(path string, mask uint32) (int, error) {
	raw, err := fw.in.SyscallConn()
	if err != nil {
		return -1, err
	}
	wd := -1
	cerr := raw.Control(func(fd uintptr) { wd, err = unix.InotifyAddWatch(int(fd), path, mask) })
	return wd, errors.Join(cerr, err)
}

func (fw *follower) unwatch(wd int) {
	if raw, err := fw.in.SyscallConn(); err == nil {
		_ = raw.Control(func(fd uintptr) { _, _ = unix.InotifyRmWatch(int(fd), uint32(wd)) })
	}
}

// open opens the file now at path, if any, reading it from its start, and
// watches that very file (through /proc/self/fd, so not whatever the path
// names by the time the watch is added) for writes and truncation.
func (fw *follower) open() error {
	f, err := openLog(fw.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	wd, err := fw.watch("/proc/self/fd/"+strconv.Itoa(int(f.Fd())), unix.IN_MODIFY|unix.IN_ATTRIB)
	if err != nil {
		f.Close()
		return fmt.Errorf("watch %s: %w", fw.path, err)
	}
	fw.f, fw.off, fw.fileWatch = f, 0, wd
	return nil
}

func (fw *follower) closeFile() {
	if fw.f == nil {
		return
	}
	fw.unwatch(fw.fileWatch)
	fw.f.Close()
	fw.f, fw.fileWatch = nil, -1
}

// catchUp emits what was written since the last look, starts over on a
// truncated file, and moves to a new file at the path once the old one has
// been read to its end.
func (fw *follower) catchUp(ctx context.Context) error {
	for {
		if fw.f != nil {
			if err := fw.drain(ctx); err != nil {
				return err
			}
		}
		replaced, err := fw.replaced()
		if err != nil || !replaced {
			return err
		}
		if err := fw.flush(); err != nil {
			return err
		}
		fw.closeFile()
		if err := fw.open(); err != nil {
			return err
		}
	}
}

// replaced reports whether the file being read should be let go for the
// one at the path: the path names another file, or the file being read was
// deleted (holding a deleted file open would keep its directory from going
// away unnoticed). A path with no file is not a replacement: the writer may
// still be writing the renamed file until it reopens.
func (fw *follower) replaced() (bool, error) {
	var cur unix.Stat_t
	if fw.f != nil {
		if err := unix.Fstat(int(fw.f.Fd()), &cur); err != nil {
			return false, fmt.Errorf("stat %s: %w", fw.path, err)
		}
		if cur.Nlink == 0 {
			return true, nil
		}
	}
	var now unix.Stat_t
	err := unix.Lstat(fw.path, &now)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("stat %s: %w", fw.path, err)
	}
	return fw.f == nil || cur.Dev != now.Dev || cur.Ino != now.Ino, nil
}

// drain reads f from off to its end, emitting each complete line.
func (fw *follower) drain(ctx context.Context) error {
	buf := fw.buf
	for ctx.Err() == nil {
		st, err := fw.f.Stat()
		if err != nil {
			return fmt.Errorf("stat %s: %w", fw.path, err)
		}
		if st.Size() < fw.off { // truncated in place: start over
			if err := fw.flush(); err != nil {
				return err
			}
			fw.off = 0
		}
		n, err := fw.f.ReadAt(buf, fw.off)
		fw.off += int64(n)
		if n > 0 {
			if err := fw.push(buf[:n]); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) || n == 0 {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", fw.path, err)
		}
	}
	return ctx.Err()
}

// push emits the complete lines in b, keeping the unfinished rest; a line
// that grows past MaxLine is emitted in MaxLine pieces.
func (fw *follower) push(b []byte) error {
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			fw.partial = append(fw.partial, b...)
			return fw.split()
		}
		fw.partial = append(fw.partial, b[:i]...)
		b = b[i+1:]
		if err := fw.split(); err != nil {
			return err
		}
		line := string(fw.partial)
		fw.partial = fw.partial[:0]
		if err := fw.emit(line); err != nil {
			return err
		}
	}
}

// split emits MaxLine pieces of the held-back line while it is longer.
func (fw *follower) split() error {
	for len(fw.partial) > MaxLine {
		if err := fw.emit(string(fw.partial[:MaxLine])); err != nil {
			return err
		}
		fw.partial = append(fw.partial[:0], fw.partial[MaxLine:]...)
	}
	return nil
}

// flush emits the held-back line, if any.
func (fw *follower) flush() error {
	if len(fw.partial) == 0 {
		return nil
	}
	line := string(fw.partial)
	fw.partial = fw.partial[:0]
	return fw.emit(line)
}

// wait blocks until an event that concerns the followed path arrives.
func (fw *follower) wait(buf []byte) error {
	for {
		n, err := fw.in.Read(buf)
		if err != nil {
			return fmt.Errorf("read inotify: %w", err)
		}
		relevant, err := fw.relevant(buf[:n])
		if relevant || err != nil {
			return err
		}
	}
}

// relevant reports whether a batch of events concerns the followed path or
// its open file, and fails when the directory itself went away.
func (fw *follower) relevant(b []byte) (bool, error) {
	hit := false
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		name := b[unix.SizeofInotifyEvent : unix.SizeofInotifyEvent+int(ev.Len)]
		b = b[unix.SizeofInotifyEvent+int(ev.Len):]
		switch {
		case ev.Mask&unix.IN_Q_OVERFLOW != 0:
			hit = true
		case int(ev.Wd) == fw.fileWatch:
			hit = true
		case int(ev.Wd) != fw.dirWatch:
			// a watch on a file since closed
		case ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0:
			return false, fmt.Errorf("log directory %s removed or moved", filepath.Dir(fw.path))
		case string(bytes.TrimRight(name, "\x00")) == fw.base:
			hit = true
		}
	}
	return hit, nil
}

// errFound ends Await's Follow.
var errFound = errors.New("line found")

// Await blocks until a line equal to want is in the file at path, at or
// after offset from (as for Follow), and returns nil; or until ctx is done,
// returning ctx.Err(). Like Follow it waits on inotify, never on a timer.
func Await(ctx context.Context, path string, from int64, want string) error {
	err := Follow(ctx, path, from, func(line string) error {
		if line == want {
			return errFound
		}
		return nil
	})
	if errors.Is(err, errFound) {
		return nil
	}
	return err
}

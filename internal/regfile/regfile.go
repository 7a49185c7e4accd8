// Package regfile opens files in places that someone else can write: a
// job's log directory, a pid file a job's scripts write, a directory the
// containers of a pod share. Whatever was planted at the path, the open
// never follows a symlink in its last component, never blocks (a FIFO, a
// socket or a device there is refused at once instead of waiting for a
// peer), and hands back nothing but a regular file.
package regfile

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// ErrSymlink matches the error of an open that found a symlink at the path.
var ErrSymlink = errors.New("refusing to follow a symlink")

// ErrNotRegular matches the error of an open that found something other
// than a regular file at the path (a FIFO, a socket, a device, a directory).
var ErrNotRegular = errors.New("not a regular file")

// Open opens path with flag and perm (for O_CREATE) as os.OpenFile does,
// adding O_NOFOLLOW, O_NONBLOCK, O_NOCTTY and O_CLOEXEC, and returns the
// file only if it is a regular one, switched back to blocking mode. The
// caller closes it. A symlink at the path gives an error matching
// ErrSymlink (and unix.ELOOP); anything but a regular file, one matching
// ErrNotRegular.
func Open(path string, flag int, perm os.FileMode) (*os.File, error) {
	flag |= unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	fd, err := unix.Open(path, flag, uint32(perm.Perm()))
	for errors.Is(err, unix.EINTR) {
		fd, err = unix.Open(path, flag, uint32(perm.Perm()))
	}
	switch {
	case errors.Is(err, unix.ELOOP):
		return nil, &os.PathError{Op: "open", Path: path, Err: symlinkError{}}
	case errors.Is(err, unix.ENXIO):
		// A FIFO with no reader, or a socket, opened for writing.
		return nil, &os.PathError{Op: "open", Path: path, Err: notRegularError{what: "a FIFO or a socket"}}
	case errors.Is(err, unix.EISDIR):
		return nil, &os.PathError{Op: "open", Path: path, Err: notRegularError{what: "a directory"}}
	case err != nil:
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: notRegularError{what: kind(st.Mode)}}
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// Append opens path for appending, creating it with perm (see Open).
func Append(path string, perm os.FileMode) (*os.File, error) {
	return Open(path, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT, perm)
}

// ReadFile reads the regular file at path (see Open), refusing one larger
// than limit bytes.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path, unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("read %s: larger than %d bytes", path, limit)
	}
	return b, nil
}

type symlinkError struct{}

func (symlinkError) Error() string        { return "refusing to follow a symlink" }
func (symlinkError) Is(target error) bool { return target == ErrSymlink || target == unix.ELOOP }

type notRegularError struct{ what string }

func (e notRegularError) Error() string      { return "not a regular file: " + e.what }
func (notRegularError) Is(target error) bool { return target == ErrNotRegular }

func kind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	case unix.S_IFDIR:
		return "a directory"
	}
	return fmt.Sprintf("file type %#o", mode&unix.S_IFMT)
}

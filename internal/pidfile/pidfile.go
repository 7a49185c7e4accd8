// Package pidfile writes, reads and removes pid files at bpm's paths. Files
// are replaced atomically, so a reader sees either the old pid or the new
// one, never a partial number.
package pidfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/vigil-bosh/vigil/internal/atomicfile"
	"github.com/vigil-bosh/vigil/internal/regfile"
)

// Write stores pid followed by a newline in path (mode 0644) by writing a
// temporary file in the same directory and renaming it over path.
func Write(path string, pid int) error {
	if err := atomicfile.Write(path, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return fmt.Errorf("pid file: %w", err)
	}
	return nil
}

// maxSize bounds what Read takes in: a pid and a newline, with room to spare.
const maxSize = 4 << 10

// Writer is who can have written a pid file: its owner, and whether
// others than its owner may write it (its group or everyone).
type Writer struct {
	UID  uint32
	Open bool // group or others may write it
}

// ReadWriter is Read, with who can have written the file: its owner and
// mode, read from the descriptor the pid was read from. A job that can
// write the file's directory can replace the file, but not keep another
// user as its owner.
func ReadWriter(path string) (int, Writer, error) {
	f, err := regfile.Open(path, os.O_RDONLY, 0)
	if err != nil {
		return 0, Writer{}, fmt.Errorf("read pid file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, Writer{}, fmt.Errorf("read pid file: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, Writer{}, fmt.Errorf("read pid file %s: no owner", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil || len(b) > maxSize {
		return 0, Writer{}, fmt.Errorf("read pid file %s: %d bytes: %w", path, len(b), err)
	}
	pid, err := parse(path, b)
	return pid, Writer{UID: st.Uid, Open: st.Mode&0o022 != 0}, err
}

// Read returns the pid stored in path. A missing file gives an error that
// matches os.ErrNotExist. Pid files may live where a job writes (monit's
// checks name them), so the file must be a regular one, found without
// following a symlink and read without blocking on a FIFO.
func Read(path string) (int, error) {
	b, err := regfile.ReadFile(path, maxSize)
	if err != nil {
		return 0, fmt.Errorf("read pid file: %w", err)
	}
	return parse(path, b)
}

// parse reads a pid file's content.
func parse(path string, b []byte) (int, error) {
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("read pid file %s: not a pid: %q", path, strings.TrimSpace(string(b)))
	}
	return pid, nil
}

// Remove deletes path. A file that is already gone is not an error.
func Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove pid file: %w", err)
	}
	return nil
}

// RemoveIf deletes path if it still names pid: a pid file another
// instance has claimed since is left alone.
func RemoveIf(path string, pid int) error {
	if got, err := Read(path); err != nil || got != pid {
		return nil
	}
	return Remove(path)
}

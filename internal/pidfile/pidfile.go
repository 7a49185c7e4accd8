// Package pidfile writes, reads and removes pid files at bpm's paths. Files
// are replaced atomically, so a reader sees either the old pid or the new
// one, never a partial number.
package pidfile

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

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

// Read returns the pid stored in path. A missing file gives an error that
// matches os.ErrNotExist. Pid files may live where a job writes (monit's
// checks name them), so the file must be a regular one, found without
// following a symlink and read without blocking on a FIFO.
func Read(path string) (int, error) {
	b, err := regfile.ReadFile(path, maxSize)
	if err != nil {
		return 0, fmt.Errorf("read pid file: %w", err)
	}
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

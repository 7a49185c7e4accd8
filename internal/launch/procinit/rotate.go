package procinit

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strconv"
)

// LogRotation is rotation by size, done by the init itself so that it works
// for a detached process too: once a log file would grow past MaxSize,
// PATH.(Keep-1) becomes PATH.Keep (the old PATH.Keep is gone), …, PATH
// becomes PATH.1, and a new PATH is opened. A rotation falls between two
// lines: a file ends with a whole line, and goes past MaxSize only by the
// end of a line it already holds the start of (a line longer than MaxSize
// is split). The size is the file's real size, so a file truncated under
// the init (logrotate's copytruncate) simply starts filling again.
type LogRotation struct {
	MaxSize int64 `json:"max_size"`
	Keep    int   `json:"keep"` // at least 1
}

// rotationCut returns how much of b goes into the current file, whose size
// is size, before a rotation: all of b when no rotation is due.
func (c *copier) rotationCut(b []byte, size int64) int {
	if c.rot == nil || c.retryIn > 0 {
		return len(b)
	}
	room := c.rot.MaxSize - size
	if int64(len(b)) <= room {
		return len(b)
	}
	if room > 0 {
		if i := bytes.LastIndexByte(b[:room], '\n'); i >= 0 {
			return i + 1 // the whole lines that fit
		}
	}
	if !c.lineStart {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			return i + 1 // finish the line the file ends with
		}
		return int(max(room, 0)) // one long line: split it at the size
	}
	if size == 0 {
		return int(room) // a line longer than a whole file: split it
	}
	return 0
}

// rotate shifts the rotated files up by one, moves the log to PATH.1 and
// opens a new log at PATH. On failure the copier goes on with the file it
// has and tries again after another MaxSize bytes.
func (c *copier) rotate() bool {
	name := func(i int) string { return c.path + "." + strconv.Itoa(i) }
	var err error
	for i := c.rot.Keep - 1; i >= 1 && err == nil; i-- {
		err = shift(name(i), name(i+1)) // replaces PATH.Keep first
	}
	if err == nil {
		err = shift(c.path, name(1))
	}
	if err == nil {
		err = c.open()
	}
	if err != nil {
		c.retryIn = c.rot.MaxSize
		return false
	}
	c.lineStart = true
	return true
}

// shift renames from to to, a missing from being nothing to do.
func shift(from, to string) error {
	if err := os.Rename(from, to); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

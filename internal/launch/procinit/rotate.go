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
// has, records the failure (rotationFailed) and tries again after another
// MaxSize bytes.
//
// The log directory is the job user's (mode 0750), which the init, uid 0
// but with CAP_DAC_OVERRIDE only permitted once the executable runs, can
// write only with the capability raised: the renames and the open take it
// together, on one locked thread, for this one act. That gives a job
// nothing it does not have: its user may rename and remove every entry of
// that directory itself (its parent is root's, so the directory cannot be
// swapped), a rename moves a planted symlink or FIFO and never follows or
// opens it, and the new file is opened through regfile (no final symlink,
// regular files only, never blocking).
func (c *copier) rotate() bool {
	var err error
	c.caps.do(func() { err = c.shiftAndOpen() })
	if err != nil {
		c.retryIn = c.rot.MaxSize
		c.rotationFailed(err)
		return false
	}
	c.lineStart = true
	if c.rotFailing.Swap(false) {
		c.signal() // rotation works again
	}
	return true
}

// shiftAndOpen does the renames and the open of a rotation.
func (c *copier) shiftAndOpen() error {
	name := func(i int) string { return c.path + "." + strconv.Itoa(i) }
	for i := c.rot.Keep - 1; i >= 1; i-- {
		if err := shift(name(i), name(i+1)); err != nil { // replaces PATH.Keep first
			return err
		}
	}
	if err := shift(c.path, name(1)); err != nil {
		return err
	}
	return redirect(int(c.dst.Fd()), c.path)
}

// rotationFailed counts a failed rotation and keeps its error; the
// supervisor is told when rotations start failing and each time the count
// doubles while they fail (as for dropped output: a log rotated at 4 KiB
// that can never rotate sends a few reports, not one per 4 KiB).
func (c *copier) rotationFailed(err error) {
	msg := err.Error()
	c.rotErr.Store(&msg)
	n := c.rotFailures.Add(1)
	if !c.rotFailing.Swap(true) || n >= 2*c.rotReported {
		c.rotReported = n
		c.signal()
	}
}

// shift renames from to to, a missing from being nothing to do.
func shift(from, to string) error {
	if err := os.Rename(from, to); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

package procinit

import (
	"errors"
	"fmt"
	"os"

	"github.com/vigil-bosh/vigil/internal/regfile"
	"golang.org/x/sys/unix"
)

// outputReport is the EventOutput report: the bytes each stream has lost
// so far, and whether writes are failing now; the rotations that failed,
// whether they fail now, and the latest error.
func (it *initProc) outputReport() Report {
	r := Report{Event: EventOutput}
	r.DroppedStdout, r.DroppedStderr = it.droppedCounts()
	r.Dropping = it.out.isDropping() || it.errw.isDropping()
	r.RotationFailures, r.RotationFailing, r.RotationError = it.rotationState()
	return r
}

// rotationState returns the rotations both copiers failed, whether either
// fails now, and the error of the latest failure (a failing stream's
// first).
func (it *initProc) rotationState() (failures int64, failing bool, lastErr string) {
	for _, c := range []*copier{it.out, it.errw} {
		if c == nil {
			continue
		}
		failures += c.rotFailures.Load()
		now := c.rotFailing.Load()
		if e := c.rotErr.Load(); e != nil && (lastErr == "" || now && !failing) {
			lastErr = *e
		}
		failing = failing || now
	}
	return failures, failing, lastErr
}

// droppedCounts returns the bytes each copier has dropped.
func (it *initProc) droppedCounts() (stdout, stderr int64) {
	if it.out != nil {
		stdout = it.out.dropped.Load()
	}
	if it.errw != nil {
		stderr = it.errw.dropped.Load()
	}
	return stdout, stderr
}

// isDropping reports whether the copier's writes are failing now.
func (c *copier) isDropping() bool { return c != nil && c.dropping.Load() }

// OpenLog opens a process's log file for appending (created 0600),
// refusing to follow a symlink planted in its place (bpm's safeio rule,
// with bpm's text) and, without blocking, anything but a regular file (a
// FIFO the job planted would otherwise hold the open until it is read).
func OpenLog(path string) (*os.File, error) {
	f, err := regfile.Append(path, 0o600)
	if errors.Is(err, regfile.ErrSymlink) {
		return nil, fmt.Errorf("refusing to open symlink at %s: %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	return f, nil
}

// redirect points fd at the log file path (see OpenLog), so that an init
// started before its process was known, or a reopen after a rotation,
// writes where the process's output belongs. An empty path leaves fd as it
// is.
func redirect(fd int, path string) error {
	if path == "" {
		return nil
	}
	f, err := OpenLog(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Dup3(int(f.Fd()), fd, 0); err != nil {
		return fmt.Errorf("open log %s: %w", path, err)
	}
	return nil
}

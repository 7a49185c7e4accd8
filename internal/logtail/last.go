// Package logtail reads the end of log files: the last lines of a file
// (Last) and the lines appended to it as they arrive (Follow), across
// rotation by rename and truncation in place (logrotate's copytruncate).
//
// Files are opened without following a symlink at the final path element
// and must be regular files: a process that can write its own log directory
// cannot make a reader running as root show some other file.
package logtail

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/vigil-bosh/vigil/internal/regfile"
)

// Last returns up to the last n lines of the file at path, oldest first and
// without their newlines, reading at most maxBytes from its end. The final
// line counts even when it has no newline yet. A line cut by the maxBytes
// window is left out, unless the window holds no newline at all: then the
// window itself (the tail of one long line) is the only line. A missing file
// returns nil, nil; n or maxBytes below 1 return nil.
func Last(path string, n int, maxBytes int64) ([]string, error) {
	lines, _, err := Tail(path, n, maxBytes)
	return lines, err
}

// Tail is Last that also returns the offset just past what it read (0 for
// a missing file), for Follow to go on from without a line lost or shown
// twice. With n or maxBytes below 1 it reads nothing but still returns the
// file's size.
func Tail(path string, n int, maxBytes int64) (lines []string, end int64, err error) {
	f, err := openLog(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("stat %s: %w", path, err)
	}
	if n < 1 || maxBytes < 1 {
		return nil, st.Size(), nil
	}
	// One byte before the window tells whether it starts on a line start.
	start := max(st.Size()-maxBytes, 0)
	if start > 0 {
		start--
	}
	buf := make([]byte, st.Size()-start)
	got, err := f.ReadAt(buf, start)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, fmt.Errorf("read %s: %w", path, err)
	}
	buf = buf[:got]
	end = start + int64(got)
	cut := false
	if st.Size() > maxBytes && len(buf) > 0 {
		cut = buf[0] != '\n'
		buf = buf[1:]
	}
	return lastLines(buf, cut, n), end, nil
}

// lastLines splits the window buf into lines and keeps the last n. cut says
// the window starts inside the file, so its first line may be partial.
func lastLines(buf []byte, cut bool, n int) []string {
	if len(buf) == 0 {
		return nil
	}
	buf = bytes.TrimSuffix(buf, []byte("\n"))
	if cut {
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		} else if len(buf) == 0 {
			return nil
		}
	}
	var out []string
	for len(out) < n {
		i := bytes.LastIndexByte(buf, '\n')
		out = append(out, string(buf[i+1:]))
		if i < 0 {
			break
		}
		buf = buf[:i]
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// openLog opens path for reading, refusing a symlink in its place and
// anything but a regular file, without blocking on a FIFO.
func openLog(path string) (*os.File, error) {
	f, err := regfile.Open(path, os.O_RDONLY, 0)
	if errors.Is(err, regfile.ErrSymlink) {
		return nil, fmt.Errorf("refusing symlink at %s: %w", path, err)
	}
	return f, err
}

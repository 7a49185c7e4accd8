package procinit

import (
	"bufio"
	"fmt"
	"os"
)

// notifyPipe is s6's readiness notification: the executable holds the write
// end as a chosen fd; the init turns every line it writes into a report.
// A nil *notifyPipe is valid and does nothing.
type notifyPipe struct {
	fd   int
	r, w *os.File
	c    chan struct{}
}

// openNotify creates the pipe for fd (none when fd is zero). Its reader
// goroutine ends when the executable (and all its children) closed the
// write end.
func openNotify(fd int) (*notifyPipe, error) {
	if fd <= 0 {
		return nil, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("notification pipe: %w", err)
	}
	n := &notifyPipe{fd: fd, r: r, w: w, c: make(chan struct{}, 16)}
	go func() {
		defer r.Close()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			select {
			case n.c <- struct{}{}:
			default: // readiness already pending: one report says it
			}
		}
	}()
	return n, nil
}

// files places the write end at the notification fd, after base (the
// fds the child gets anyway); the slots between are closed (-1). A fd that
// collides with one of base is not given.
func (n *notifyPipe) files(base ...uintptr) []uintptr {
	if n == nil || n.fd < len(base) {
		return base
	}
	out := append([]uintptr{}, base...)
	for len(out) < n.fd {
		out = append(out, ^uintptr(0))
	}
	return append(out, n.w.Fd())
}

// closeWriter drops the init's copy of the write end once the child has it.
func (n *notifyPipe) closeWriter() {
	if n != nil {
		_ = n.w.Close()
	}
}

// lines receives once per line written (nil, so never, without a pipe).
func (n *notifyPipe) lines() <-chan struct{} {
	if n == nil {
		return nil
	}
	return n.c
}

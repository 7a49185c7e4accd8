package monitdiff

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// tickWait bounds the wait for one of the daemon's cycles: a start program
// may hold a cycle for its whole timeout (30 s by default).
const tickWait = 2 * time.Minute

// clock serves the scenario's clock check: each request is the start of
// one of the daemon's cycles. The handler reports it and answers only
// once released, so the daemon waits at the start of that cycle while the
// harness looks.
type clock struct {
	ticks chan chan struct{} // each request's release channel
	held  chan struct{}      // the release of the request being held, or nil
	srv   *http.Server
	done  chan struct{} // closed by close: every handler answers at once
	wg    sync.WaitGroup
}

// newClock serves on ln until close.
func newClock(ln net.Listener) *clock {
	c := &clock{ticks: make(chan chan struct{}), done: make(chan struct{})}
	c.srv = &http.Server{Handler: http.HandlerFunc(c.serve), ReadHeaderTimeout: time.Minute}
	c.wg.Go(func() { _ = c.srv.Serve(ln) })
	return c
}

func (c *clock) serve(w http.ResponseWriter, r *http.Request) {
	release := make(chan struct{})
	select {
	case c.ticks <- release:
		select {
		case <-release:
		case <-c.done:
		case <-r.Context().Done():
		}
	case <-c.done:
	case <-r.Context().Done():
	}
	_, _ = w.Write([]byte("tick\n"))
}

// release lets the held cycle go on.
func (c *clock) release() {
	if c.held != nil {
		close(c.held)
		c.held = nil
	}
}

// wait releases the held cycle, lets n-1 cycles pass and holds the n-th.
func (c *clock) wait(ctx context.Context, n int) error {
	c.release()
	for i := range n {
		t := time.NewTimer(tickWait)
		select {
		case r := <-c.ticks:
			t.Stop()
			if i < n-1 {
				close(r)
			} else {
				c.held = r
			}
		case <-t.C:
			return fmt.Errorf("no cycle of the daemon within %s (%d of %d)", tickWait, i, n)
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("wait for a cycle: %w", ctx.Err())
		}
	}
	return nil
}

// close answers every request and stops serving; it returns once the
// server's goroutines have ended.
func (c *clock) close() {
	c.release()
	close(c.done)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		c.srv.Close()
	}
	c.wg.Wait()
}

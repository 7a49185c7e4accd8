//go:build conformance

package boshagent

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// DialIn returns a dialer whose connections are made in the network
// namespace ns (an open /proc/PID/ns/net): each dial runs on an OS thread
// of its own that joins ns, and that thread is discarded afterwards (its
// goroutine ends locked to it), so no other goroutine ever runs in ns.
// The socket keeps its namespace for its life. ns must stay open while
// the dialer is used; the caller closes it.
func DialIn(ns *os.File) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		type result struct {
			c   net.Conn
			err error
		}
		done := make(chan result, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread goes with this goroutine
			if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
				done <- result{err: fmt.Errorf("join the rig's network namespace: %w", err)}
				return
			}
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			done <- result{c, err}
		}()
		r := <-done
		return r.c, r.err
	}
}

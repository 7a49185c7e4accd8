// Package connlimit bounds what the clients of a listener can hold of the
// process serving it: at most n connections are open at once. Accept
// waits for a slot before it takes the next connection from the kernel,
// so that connections beyond the bound wait in the listen backlog (and,
// once that is full, in the clients' SYN retries) at no cost to the
// process: no descriptor, no goroutine, no buffer. A flood of
// connections cannot exhaust the process's descriptors and starve its
// other work (a user lookup, a cgroup, the control socket).
package connlimit

import (
	"net"
	"sync"
	"syscall"
)

// PerListener is the bound vigil puts on each of its listeners (the
// control socket, the monit API, the status page): far above what their
// clients hold (the agent, a few browsers, a few event streams), far
// below the descriptors a daemon has.
const PerListener = 64

// Listener wraps ln so that at most n of its connections are open at once.
// A connection's slot is given back when the connection is closed. Close
// also ends an Accept waiting for a slot.
func Listener(ln net.Listener, n int) net.Listener {
	return &listener{Listener: ln, slots: make(chan struct{}, n), closed: make(chan struct{})}
}

type listener struct {
	net.Listener
	slots  chan struct{} // one element per open connection
	closed chan struct{}
	once   sync.Once
}

// Accept waits for a free slot, then for a connection.
func (l *listener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &conn{Conn: c, release: func() { <-l.slots }}, nil
}

// Close closes the listener and ends a wait for a slot.
func (l *listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// conn is an accepted connection holding a slot until it is closed.
type conn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// SyscallConn reaches the descriptor of the wrapped connection (for its
// peer's credentials, say), when it has one.
func (c *conn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, syscall.EINVAL
	}
	return sc.SyscallConn()
}

// NetConn returns the wrapped connection.
func (c *conn) NetConn() net.Conn { return c.Conn }

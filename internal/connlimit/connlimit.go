// Package connlimit bounds what the clients of a listener can hold of the
// process serving it, per peer: each peer (the uid at the other end, from
// the kernel) holds at most PerPeer connections at once, and the peers
// that are neither root nor the serving process's own user hold at most
// Shared together. Root's connections never wait on another user's: a
// local user who opens thousands of slow connections holds its own slots
// and no one else's, and the BOSH agent (root) is still served.
//
// Accept takes each connection from the kernel at once, finds its peer
// (Identify) and closes it at once when that peer's slots are all held:
// a connection over the bound costs an accept and a close, never a
// descriptor, a goroutine or a buffer for longer. A flood of connections
// cannot exhaust the process's descriptors and starve its other work (a
// user lookup, a cgroup, the control socket): a listener holds at most
// PerPeer connections of each privileged peer (root, the process's own
// user) and Shared of all the others together.
package connlimit

import (
	"net"
	"os"
	"sync"
	"syscall"
)

// The bounds vigil puts on each of its listeners (the control socket,
// the monit API, the status page, the metrics, a container's probes):
// far above what one client holds (the agent, a few browsers, a few
// event streams), far below the descriptors a daemon has.
const (
	PerPeer = 64
	Shared  = 256
)

// Limits are a listener's bounds.
type Limits struct {
	PerPeer int // connections one peer may hold at once
	Shared  int // connections every unprivileged peer together may hold at once
	// Observe, if set, is told of each change: the peer, the connections
	// it holds after it, and whether a connection of its was refused (closed
	// at once: its slots were all held). It runs under the listener's lock,
	// on the goroutine that accepted or closed: it must not block.
	Observe func(p Peer, held int, refused bool)
}

// Defaults are PerPeer and Shared.
func Defaults() Limits { return Limits{PerPeer: PerPeer, Shared: Shared} }

// Listener wraps ln so that its connections are bounded by lim. A
// listener Listener already returned is returned as it is, so that a
// caller (a test) can give a server its own bounds. A connection's slot is
// given back when the connection is closed.
func Listener(ln net.Listener, lim Limits) net.Listener {
	if l, ok := ln.(*listener); ok {
		return l
	}
	return &listener{Listener: ln, lim: lim, self: uint32(os.Geteuid()), held: map[peerKey]int{}}
}

type listener struct {
	net.Listener
	lim  Limits
	self uint32 // the serving process's user: privileged, as root is
	diag diag   // closed by Close

	mu     sync.Mutex
	held   map[peerKey]int // open connections by peer
	shared int             // those of unprivileged peers
}

// Accept returns the next connection whose peer has a free slot, closing
// the others as they come.
func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		p := l.diag.peer(c)
		if l.take(p) {
			return &conn{Conn: c, release: func() { l.give(p) }}, nil
		}
		c.Close()
	}
}

// Close closes the listener and its netlink socket; an Accept in
// progress ends.
func (l *listener) Close() error {
	err := l.Listener.Close()
	l.diag.close()
	return err
}

// take gives p a slot if it has one free.
func (l *listener) take(p Peer) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	k, priv := p.key(), p.Privileged(l.self)
	n := l.held[k]
	ok := n < l.lim.PerPeer && (priv || l.shared < l.lim.Shared)
	if ok {
		n++
		l.held[k] = n
		if !priv {
			l.shared++
		}
	}
	if l.lim.Observe != nil {
		l.lim.Observe(p, n, !ok)
	}
	return ok
}

// give takes p's slot back.
func (l *listener) give(p Peer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := p.key()
	n := l.held[k] - 1
	if n == 0 {
		delete(l.held, k)
	} else {
		l.held[k] = n
	}
	if !p.Privileged(l.self) {
		l.shared--
	}
	if l.lim.Observe != nil {
		l.lim.Observe(p, n, false)
	}
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

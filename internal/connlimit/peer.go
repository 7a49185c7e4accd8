package connlimit

import (
	"fmt"
	"net"
	"net/netip"

	"golang.org/x/sys/unix"
)

// Peer is who is at the other end of a connection, as the kernel says:
// the uid of a unix socket's peer (SO_PEERCRED, at its connect), or of
// the socket at the other end of a TCP connection when that socket is
// this machine's, in this network namespace (its owner, from the kernel's
// socket table: tcpOwner). A peer whose uid cannot be found (another
// host; a socket already closed; anything but a unix or TCP connection)
// is a stranger, never root: known by its address alone.
type Peer struct {
	UID   uint32
	Known bool       // UID is the kernel's word
	Addr  netip.Addr // a TCP peer's address (IPv4 unmapped); zero for a unix one
}

// Privileged says whether p is root or self (the serving process's
// user): a peer whose connections do not count against Shared.
func (p Peer) Privileged(self uint32) bool { return p.Known && (p.UID == 0 || p.UID == self) }

func (p Peer) String() string {
	if p.Known {
		return fmt.Sprintf("uid %d", p.UID)
	}
	if p.Addr.IsValid() {
		return "unknown user at " + p.Addr.String()
	}
	return "unknown user"
}

// peerKey is what slots are counted by: the uid of a known peer, the
// address of a stranger (so that one host's flood does not hold
// another's slots).
type peerKey struct {
	uid   uint32
	known bool
	addr  netip.Addr
}

func (p Peer) key() peerKey {
	if p.Known {
		return peerKey{uid: p.UID, known: true}
	}
	return peerKey{addr: p.Addr}
}

// Identify finds the peer of c, a connection accepted from a unix or TCP
// listener (or one wrapping such a connection, with NetConn).
func Identify(c net.Conn) Peer {
	var d diag
	defer d.close()
	return d.peer(c)
}

// peer is Identify, with d's netlink socket.
func (d *diag) peer(c net.Conn) Peer {
	for {
		w, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = w.NetConn()
	}
	switch c := c.(type) {
	case *net.UnixConn:
		return unixPeer(c)
	case *net.TCPConn:
		remote := addrPort(c.RemoteAddr())
		p := Peer{Addr: remote.Addr().Unmap()}
		p.UID, p.Known = d.tcpOwner(remote, addrPort(c.LocalAddr()))
		return p
	}
	return Peer{}
}

// unixPeer reads the credentials the kernel recorded at the peer's
// connect.
func unixPeer(c *net.UnixConn) Peer {
	raw, err := c.SyscallConn()
	if err != nil {
		return Peer{}
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || cerr != nil {
		return Peer{}
	}
	return Peer{UID: cred.Uid, Known: true}
}

func addrPort(a net.Addr) netip.AddrPort {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.AddrPort()
	}
	return netip.AddrPort{}
}

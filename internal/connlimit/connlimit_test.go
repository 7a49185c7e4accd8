package connlimit_test

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/vigil-bosh/vigil/internal/connlimit"
	"github.com/vigil-bosh/vigil/internal/connlimit/connlimittest"
)

func TestMain(m *testing.M) {
	connlimittest.Main()
	os.Exit(m.Run())
}

// change is one call of Limits.Observe.
type change struct {
	p       connlimit.Peer
	held    int
	refused bool
}

// bounded listens on loopback with the bounds per and shared, telling
// each change on the channel it returns. Its Accept runs on a goroutine
// of the test's, once for each token sent, and delivers what it accepts.
func bounded(t *testing.T, per, shared int) (ln net.Listener, changes <-chan change, tokens chan<- struct{}, accepted <-chan net.Conn) {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan change, 4096)
	ln = connlimit.Listener(inner, connlimit.Limits{PerPeer: per, Shared: shared, Observe: func(p connlimit.Peer, held int, refused bool) {
		ch <- change{p, held, refused}
	}})
	if connlimit.Listener(ln, connlimit.Defaults()) != ln {
		t.Fatal("a bounded listener was bounded again")
	}
	tok, acc := make(chan struct{}, 16), make(chan net.Conn, 16)
	go func() {
		defer close(acc)
		for range tok {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			acc <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		close(tok)
		for c := range acc {
			c.Close()
		}
	})
	return ln, ch, tok, acc
}

func dial(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// expect waits for the next change and fails unless it is want.
func expect(t *testing.T, changes <-chan change, want change) {
	t.Helper()
	if got := <-changes; got != want {
		t.Fatalf("change %+v, want %+v", got, want)
	}
}

var root = connlimit.Peer{UID: 0, Known: true, Addr: netipLoopback()}

// TestBoundPerPeer: with 3 slots a peer, root's fourth connection is
// closed at once while its three are held, and a slot given back (a
// double close gives back one) lets the next in.
func TestBoundPerPeer(t *testing.T) {
	ln, changes, tokens, accepted := bounded(t, 3, 5)
	var held []net.Conn
	for i := range 3 {
		tokens <- struct{}{}
		dial(t, ln)
		expect(t, changes, change{root, i + 1, false})
		held = append(held, <-accepted)
	}
	tokens <- struct{}{}
	refused := dial(t, ln)
	expect(t, changes, change{root, 3, true})
	if _, err := refused.Read(make([]byte, 1)); err == nil {
		t.Fatal("a connection over the bound was not closed")
	}
	held[0].Close()
	held[0].Close()
	expect(t, changes, change{root, 2, false})
	dial(t, ln)
	expect(t, changes, change{root, 3, false})
	<-accepted
	select {
	case c := <-changes:
		t.Fatalf("a double close changed the count: %+v", c)
	default:
	}
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v", err)
	}
}

// TestStrangersShareTheirBound: peers whose uid is unknown (here a client
// that closed its socket before the accept: the kernel no longer ties it
// to an owner, and calls it uid 0) are strangers, never root; with
// another user they share the unprivileged bound, which root's
// connections never count against.
func TestStrangersShareTheirBound(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a client as another user")
	}
	ln, changes, tokens, accepted := bounded(t, 3, 4)
	connlimittest.Flood(t, "tcp", ln.Addr().String(), 3, 65534)
	other := connlimit.Peer{UID: 65534, Known: true, Addr: netipLoopback()}
	for i := range 3 {
		tokens <- struct{}{}
		expect(t, changes, change{other, i + 1, false})
		<-accepted
	}
	// The client is gone before the accept, which then finds its peer.
	stranger := connlimit.Peer{Addr: netipLoopback()}
	dial(t, ln).Close()
	tokens <- struct{}{}
	expect(t, changes, change{stranger, 1, false})
	<-accepted
	dial(t, ln).Close()
	tokens <- struct{}{}
	expect(t, changes, change{stranger, 1, true}) // four unprivileged: the shared bound
	dial(t, ln)
	expect(t, changes, change{root, 1, false}) // root counts apart
	<-accepted
}

// TestIdentifyUnixPeer: a unix socket's peer is its uid, from
// SO_PEERCRED.
func TestIdentifyUnixPeer(t *testing.T) {
	s := connected(t, "unix", filepath.Join(t.TempDir(), "s"))
	if p := connlimit.Identify(s); p != (connlimit.Peer{UID: uint32(os.Geteuid()), Known: true}) {
		t.Fatalf("peer %+v", p)
	}
}

// TestIdentifyIPv6Loopback: a TCP peer on ::1 is found as on 127.0.0.1.
func TestIdentifyIPv6Loopback(t *testing.T) {
	if ln, err := net.Listen("tcp", "[::1]:0"); err != nil {
		t.Skip("no IPv6 loopback:", err)
	} else {
		ln.Close()
	}
	s := connected(t, "tcp", "[::1]:0")
	if p := connlimit.Identify(s); !p.Known || p.UID != uint32(os.Geteuid()) {
		t.Fatalf("peer %+v", p)
	}
}

// connected listens on address, connects to it and returns the server's
// end of the connection; everything is closed when the test ends.
func connected(t *testing.T, network, address string) net.Conn {
	t.Helper()
	ln, err := net.Listen(network, address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	c, err := net.Dial(network, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func netipLoopback() netip.Addr { return netip.MustParseAddr("127.0.0.1") }

package connlimit

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDiagOwner reads the kernel's replies: a socket that is not there,
// one in TIME_WAIT, a listener or a half-open one (the kernel reports uid
// 0 for those), one its owner closed (no inode) and another socket than
// the one asked for are all strangers; a live socket gives its owner.
func TestDiagOwner(t *testing.T) {
	src, dst := netip.MustParseAddrPort("127.0.0.1:40000"), netip.MustParseAddrPort("127.0.0.1:2822")
	req := diagRequest(unix.AF_INET, src, dst, 1)
	id := req[nlmsgHdrLen+reqIDOffset:][:48]
	reply := func(typ uint16, state byte, uid, inode uint32, sockID []byte) []byte {
		b := make([]byte, nlmsgHdrLen+diagMsgLen)
		ne := binary.NativeEndian
		ne.PutUint32(b, uint32(len(b)))
		ne.PutUint16(b[4:], typ)
		m := b[nlmsgHdrLen:]
		m[0], m[1] = unix.AF_INET, state
		copy(m[msgIDOffset:], sockID)
		ne.PutUint32(m[diagUIDOffset:], uid)
		ne.PutUint32(m[diagInoOffset:], inode)
		return b
	}
	other := append([]byte(nil), id...)
	other[1]++ // another source port
	const established = 1
	for _, tc := range []struct {
		name   string
		reply  []byte
		uid    uint32
		wantOK bool
	}{
		{"live socket", reply(unix.SOCK_DIAG_BY_FAMILY, established, 1000, 77, id), 1000, true},
		{"root's live socket", reply(unix.SOCK_DIAG_BY_FAMILY, established, 0, 77, id), 0, true},
		{"no such socket", reply(unix.NLMSG_ERROR, 0, 0, 0, id), 0, false},
		{"time wait", reply(unix.SOCK_DIAG_BY_FAMILY, tcpTimeWait, 0, 0, id), 0, false},
		{"listener", reply(unix.SOCK_DIAG_BY_FAMILY, tcpListen, 0, 77, id), 0, false},
		{"half open", reply(unix.SOCK_DIAG_BY_FAMILY, tcpNewSynRecv, 0, 77, id), 0, false},
		{"closed by its owner", reply(unix.SOCK_DIAG_BY_FAMILY, established, 0, 0, id), 0, false},
		{"another socket", reply(unix.SOCK_DIAG_BY_FAMILY, established, 0, 77, other), 0, false},
		{"short", reply(unix.SOCK_DIAG_BY_FAMILY, established, 0, 77, id)[:40], 0, false},
	} {
		uid, ok := diagOwner(tc.reply, id)
		if uid != tc.uid || ok != tc.wantOK {
			t.Errorf("%s: uid %d, %v; want %d, %v", tc.name, uid, ok, tc.uid, tc.wantOK)
		}
	}
}

// BenchmarkTCPOwner measures finding a loopback TCP peer's uid, what each
// accepted connection costs before it is served or refused: over the
// netlink socket a listener keeps, and over one opened for each lookup
// (as Identify does).
func BenchmarkTCPOwner(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	remote, local := addrPort(s.RemoteAddr()), addrPort(s.LocalAddr())
	b.Run("kept", func(b *testing.B) {
		var d diag
		defer d.close()
		for b.Loop() {
			if _, ok := d.tcpOwner(remote, local); !ok {
				b.Fatal("peer not found")
			}
		}
	})
	b.Run("each", func(b *testing.B) {
		for b.Loop() {
			var d diag
			if _, ok := d.tcpOwner(remote, local); !ok {
				b.Fatal("peer not found")
			}
			d.close()
		}
	})
}

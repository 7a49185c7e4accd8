package monit

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/connlimit"
	"github.com/vigil-bosh/vigil/internal/connlimit/connlimittest"
)

func TestMain(m *testing.M) {
	connlimittest.Main() // the flooder of TestAgentServedWhileAnotherUserHoldsEverySlot
	os.Exit(m.Run())
}

// TestAgentServedWhileAnotherUserHoldsEverySlot: a local user other than
// root (uid 65534) opens 2000 connections to the agent's API that never
// finish their headers; it holds every slot a peer has, the rest of its
// connections are refused, and the agent's status request (root's) is
// answered, taken while that user held all its slots. Before per-peer
// bounds the 64 slots were the listener's: each agent request waited
// behind the flood in the backlog (2 to 17 s, or never).
func TestAgentServedWhileAnotherUserHoldsEverySlot(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client as another user")
	}
	const conns = 2000
	e, _, _ := fixture(t, chain)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.Run(ctx)
	srv, err := NewServer(e, func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := connlimittest.NewWatch()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, connlimit.Listener(inner, w.Limits())) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	connlimittest.Flood(t, "tcp", inner.Addr().String(), conns, 65534)
	w.AwaitFull(t, 65534, conns-connlimit.PerPeer)
	a := agent{base: "http://" + inner.Addr().String(), user: "vcap", pass: "random-password"}
	t0 := time.Now()
	st := a.status(t)
	took := time.Since(t0)
	if len(st.Services.Services) == 0 {
		t.Fatalf("status without services: %+v", st)
	}
	held := w.HeldWhenServed(0, 65534)
	if len(held) != 1 || held[0] != connlimit.PerPeer {
		t.Fatalf("uid 65534 held %v slots when root's connections were taken, want [%d]", held, connlimit.PerPeer)
	}
	t.Logf("the agent's status answered in %s while uid 65534 held its %d slots (%d of its connections refused)",
		took, connlimit.PerPeer, w.Refused(65534))
}

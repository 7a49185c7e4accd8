package control

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/connlimit"
	"github.com/vigil-bosh/vigil/internal/connlimit/connlimittest"
)

// floodConns is how many slow connections another user opens in the
// per-peer tests.
const floodConns = 2000

// TestRootServedWhileAnotherUserHoldsEverySlot: a user other than root
// (uid 65534, the socket's mode opened to it) opens 2000 connections that
// never finish their headers; it holds every slot a peer has, the rest of
// its connections are refused, and root's status request is still
// answered, taken while that user held all its slots. Before per-peer
// bounds the 64 slots were the listener's: root's request waited behind
// the flood in the backlog.
func TestRootServedWhileAnotherUserHoldsEverySlot(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client as another user")
	}
	dir, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "run", "vigil.sock")
	inner, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Dir(path), path} {
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	w := connlimittest.NewWatch()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, connlimit.Listener(inner, w.Limits()), &fakeManager{}, time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	connlimittest.Flood(t, "unix", path, floodConns, 65534)
	w.AwaitFull(t, 65534, floodConns-connlimit.PerPeer)
	t0 := time.Now()
	st, err := NewClient(path).Status(context.Background())
	took := time.Since(t0)
	if err != nil || st.Daemon.PID != 7 {
		t.Fatalf("root's status during the flood: %+v, %v", st, err)
	}
	held := w.HeldWhenServed(0, 65534)
	if len(held) != 1 || held[0] != connlimit.PerPeer {
		t.Fatalf("uid 65534 held %v slots when root's connections were taken, want [%d]", held, connlimit.PerPeer)
	}
	t.Logf("root's status answered in %s while uid 65534 held its %d slots (%d of its connections refused)",
		took, connlimit.PerPeer, w.Refused(65534))
}

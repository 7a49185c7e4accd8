package monit

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestHTTPLimits: the agent's API listens on loopback unless configured
// otherwise and refuses other peers then; bodies over 4 KiB are refused;
// a client that never finishes its headers is disconnected (the header
// timeout) instead of holding a connection forever.
func TestHTTPLimits(t *testing.T) {
	if got := Addr(&monitrc.HTTPD{Port: 2822}); got != "127.0.0.1:2822" {
		t.Errorf("default address %s", got)
	}
	e, _, _ := fixture(t, chain)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.Run(ctx)
	srv, err := NewServer(e, func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	for peer, want := range map[string]int{"10.1.2.3:40000": http.StatusForbidden, "127.0.0.1:40000": http.StatusOK} {
		req := httptest.NewRequest("GET", "/_status2?format=xml", nil)
		req.RemoteAddr = peer
		req.SetBasicAuth("vcap", "random-password")
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("peer %s: %d, want %d", peer, rec.Code, want)
		}
	}

	a := agent{base: serve(t, e), user: "vcap", pass: "random-password"}
	if code, body := a.do("POST", "/api", "action=start&pad="+strings.Repeat("x", maxBody)); code != http.StatusBadRequest {
		t.Errorf("oversized body: %d %s", code, body)
	}
	c, err := net.Dial("tcp", strings.TrimPrefix(a.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /_status HTTP/1.1\r\nHost: 127.0.0.1\r\n"); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(testproc.Guard)) // failure guard only
	b, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("a client that never ends its headers kept its connection for %s", testproc.Guard)
	}
	if len(b) > 0 && !strings.HasPrefix(string(b), "HTTP/1.1 408") {
		t.Fatalf("answered %q", b)
	}
}

// TestRefusedConnectionsAreClosed: a request without credentials, or
// with wrong ones, gets its 401 and its connection closed at once, so that
// a flood of refused clients cannot hold the server's descriptors for the
// keep-alive time.
func TestRefusedConnectionsAreClosed(t *testing.T) {
	e, _, _ := fixture(t, chain)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.Run(ctx)
	addr := strings.TrimPrefix(serve(t, e), "http://")
	for _, auth := range []string{"", "Authorization: Basic dmNhcDp3cm9uZw==\r\n"} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if code := testproc.ClosedAfterReply(t, c, "GET /_status HTTP/1.1\r\nHost: x\r\n"+auth+"\r\n"); code != http.StatusUnauthorized {
			t.Errorf("status %d", code)
		}
	}
}

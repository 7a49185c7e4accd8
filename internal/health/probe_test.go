package health

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func port(t *testing.T, addr string) int {
	t.Helper()
	_, p, _ := net.SplitHostPort(addr)
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestHTTP(t *testing.T) {
	var sick atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Probe") != "yes" || r.URL.Path != "/healthz" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		if sick.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("all good"))
	}))
	defer srv.Close()
	p := Probe{HTTP: &HTTP{Port: port(t, srv.Listener.Addr().String()), Path: "/healthz", Headers: map[string]string{"X-Probe": "yes"}}}
	if r := p.Check(context.Background(), time.Second); !r.OK || r.Latency <= 0 {
		t.Fatalf("healthy server: %+v", r)
	}
	p.HTTP.Body = "good"
	if r := p.Check(context.Background(), time.Second); !r.OK {
		t.Fatalf("body match: %+v", r)
	}
	p.HTTP.Body = "bad"
	if r := p.Check(context.Background(), time.Second); r.OK || !strings.Contains(r.Message, "body") {
		t.Fatalf("body mismatch: %+v", r)
	}
	p.HTTP.Body = ""
	sick.Store(true)
	if r := p.Check(context.Background(), time.Second); r.OK || !strings.Contains(r.Message, "503") {
		t.Fatalf("sick server: %+v", r)
	}
	p.HTTP.StatusMin, p.HTTP.StatusMax = 500, 503
	if r := p.Check(context.Background(), time.Second); !r.OK {
		t.Fatalf("custom range: %+v", r)
	}
}

func TestHTTPHangIsBounded(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	p := Probe{HTTP: &HTTP{Port: port(t, srv.Listener.Addr().String())}}
	start := time.Now()
	r := p.Check(context.Background(), 100*time.Millisecond)
	if r.OK || !strings.Contains(r.Message, "timed out") {
		t.Fatalf("hanging server: %+v", r)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("check took %v", el)
	}
}

func TestTCPAndUnix(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := Probe{TCP: &TCP{Port: port(t, l.Addr().String())}}
	if r := p.Check(context.Background(), time.Second); !r.OK {
		t.Fatalf("listening: %+v", r)
	}
	_ = l.Close() // turn unhealthy on command
	if r := p.Check(context.Background(), time.Second); r.OK {
		t.Fatalf("closed: %+v", r)
	}
	sock := filepath.Join(t.TempDir(), "s")
	u, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	p = Probe{Unix: sock}
	if r := p.Check(context.Background(), time.Second); !r.OK {
		t.Fatalf("unix listening: %+v", r)
	}
	_ = u.Close()
	if r := p.Check(context.Background(), time.Second); r.OK {
		t.Fatalf("unix closed: %+v", r)
	}
}

func TestExec(t *testing.T) {
	env := append(os.Environ(), "PROBE_WORD=hello")
	ok := Probe{Exec: &Exec{Argv: []string{"/bin/sh", "-c", `test "$PROBE_WORD" = hello`}, Env: env}}
	if r := ok.Check(context.Background(), 5*time.Second); !r.OK {
		t.Fatalf("exit 0 with the environment: %+v", r)
	}
	bad := Probe{Exec: &Exec{Argv: []string{"/bin/sh", "-c", "exit 3"}}}
	if r := bad.Check(context.Background(), 5*time.Second); r.OK {
		t.Fatalf("exit 3: %+v", r)
	}
	hang := Probe{Exec: &Exec{Argv: []string{"/bin/sh", "-c", "exec sleep 60"}}}
	start := time.Now()
	if r := hang.Check(context.Background(), 100*time.Millisecond); r.OK || time.Since(start) > 5*time.Second {
		t.Fatalf("hanging command: %+v after %v", r, time.Since(start))
	}
	if r := (Probe{}).Check(context.Background(), 0); r.OK {
		t.Fatal("empty probe passed")
	}
}

func TestNotifySocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify")
	s, err := ListenNotify(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := net.Dial("unixgram", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("STATUS=warming up\nREADY=1\n")); err != nil {
		t.Fatal(err)
	}
	n, err := s.Receive()
	if err != nil || !n.Ready || n.Status != "warming up" {
		t.Fatalf("notice %+v, %v", n, err)
	}
	if _, err := c.Write([]byte("WATCHDOG=1")); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Receive(); err != nil || !n.Watchdog || n.Ready {
		t.Fatalf("watchdog notice %+v, %v", n, err)
	}
}

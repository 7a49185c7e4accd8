package control

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// guard bounds a wait in these tests, as a failure guard only.
const guard = time.Minute

// eventManager is a fakeManager that streams what the test feeds it.
type eventManager struct {
	fakeManager
	recent chan int      // the recent count of each subscription
	feed   chan Event    // events to stream
	ended  chan struct{} // receives once a subscription's context ends
}

func newEventManager() *eventManager {
	return &eventManager{recent: make(chan int, 4), feed: make(chan Event), ended: make(chan struct{}, 4)}
}

func (m *eventManager) Events(ctx context.Context, recent int) (<-chan Event, error) {
	m.recent <- recent
	ch := make(chan Event)
	go func() {
		defer close(ch)
		for {
			select {
			case ev := <-m.feed:
				select {
				case ch <- ev:
				case <-ctx.Done():
				}
			case <-ctx.Done():
				m.ended <- struct{}{}
				return
			}
		}
	}()
	return ch, nil
}

func receive[T any](t *testing.T, ch <-chan T, what string) (T, bool) {
	t.Helper()
	select {
	case v, ok := <-ch:
		return v, ok
	case <-time.After(guard):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero, false
}

// TestEventStream: events arrive in order as NDJSON over the socket, and a
// client that goes away ends the daemon's subscription.
func TestEventStream(t *testing.T) {
	m := newEventManager()
	_, c := serve(t, m)
	ctx, cancel := context.WithCancel(t.Context())
	events, err := c.Events(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := receive(t, m.recent, "the subscription"); n != 3 {
		t.Fatalf("recent %d, want 3", n)
	}
	sent := []Event{
		{Seq: 1, Job: "web", Process: "server", Kind: EventExited, Exit: &Exit{Code: 1, Description: "exited with code 1"}, Restarts: 2},
		{Seq: 2, Job: "web", Process: "server", Kind: EventRestarted, PID: 42, Restarts: 3, DownSeconds: 0.25},
	}
	for _, ev := range sent {
		m.feed <- ev
		got, ok := receive(t, events, "an event")
		if !ok || got.Seq != ev.Seq || got.Kind != ev.Kind || got.PID != ev.PID || got.DownSeconds != ev.DownSeconds ||
			(ev.Exit != nil && (got.Exit == nil || got.Exit.Code != 1)) {
			t.Fatalf("got %+v, sent %+v", got, ev)
		}
	}
	cancel()
	receive(t, m.ended, "the daemon's side to end")
	for range events { // closed once the reader is gone
	}
}

// serveLong serves m with an hour's grace; shutDown ends the server and
// fails the test unless Serve returns well before that.
func serveLong(t *testing.T, m Manager) (path string, shutDown func()) {
	dir, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path = filepath.Join(dir, "vigil.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, m, time.Hour) }()
	return path, func() {
		t.Helper()
		stop()
		if err, _ := receive(t, done, "Serve to return"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEventStreamEndsWithServer: shutting the server down ends a stream at
// once (not after the grace period), and the client sees it end while its
// own context is live: the daemon went away.
func TestEventStreamEndsWithServer(t *testing.T) {
	m := newEventManager()
	path, shutDown := serveLong(t, m)
	events, err := NewClient(path).Events(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	receive(t, m.recent, "the subscription")
	shutDown()
	if _, ok := receive(t, events, "the stream to end"); ok || t.Context().Err() != nil {
		t.Fatal("the stream did not end with the server")
	}
}

func TestEventsNotSupported(t *testing.T) {
	_, c := serve(t, &fakeManager{}) // as the systemd back end: no events
	_, err := c.Events(t.Context(), 0)
	if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "not supported by this back end") {
		t.Fatalf("error %v", err)
	}
	_, c = serve(t, newEventManager())
	resp, err := c.do(t.Context(), http.MethodGet, "/v1/events?recent=lots", nil)
	if err != nil {
		t.Fatal(err)
	}
	err = readError(resp, nil)
	resp.Body.Close()
	if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "recent") {
		t.Fatalf("bad recent: %v", err)
	}
}

// TestRequestObserver: each answered request is observed with its route
// and status; event streams are not.
func TestRequestObserver(t *testing.T) {
	type obs struct {
		route string
		code  int
		d     time.Duration
	}
	seen := make(chan obs, 8)
	m := newEventManager()
	_, c := serve(t, m, WithRequestObserver(func(route string, code int, d time.Duration) { seen <- obs{route, code, d} }))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if _, err := c.Events(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Status(t.Context()); err != nil {
		t.Fatal(err)
	}
	if o, _ := receive(t, seen, "an observation"); o.route != "GET /v1/status" || o.code != http.StatusOK || o.d <= 0 {
		t.Fatalf("observed %+v (the stream must not be)", o)
	}
	c.Signal(t.Context(), SignalRequest{Job: "j", Process: "missing", Signal: "HUP"})
	if o, _ := receive(t, seen, "an observation"); o.route != "POST /v1/signal" || o.code != http.StatusNotFound {
		t.Fatalf("observed %+v", o)
	}
	if resp, err := c.do(t.Context(), http.MethodGet, "/v1/nothing", nil); err == nil {
		resp.Body.Close()
	}
	if o, _ := receive(t, seen, "an observation"); o.route != "" || o.code != http.StatusNotFound {
		t.Fatalf("observed %+v", o)
	}
}

// flood is a Manager whose event stream holds more than any socket buffer
// takes, all ready at once.
type flood struct {
	fakeManager
	subscribed chan struct{}
}

func (f *flood) Events(context.Context, int) (<-chan Event, error) {
	ch := make(chan Event, 1000)
	for range cap(ch) {
		ch <- Event{Kind: EventExited, Message: strings.Repeat("x", 4096)}
	}
	close(f.subscribed)
	return ch, nil
}

// TestStalledReaderDoesNotHoldShutdown: a client that never reads leaves
// the server stuck writing 4 MB of events (before or after the shutdown
// begins); the shutdown still ends the stream at once.
func TestStalledReaderDoesNotHoldShutdown(t *testing.T) {
	m := &flood{subscribed: make(chan struct{})}
	path, shutDown := serveLong(t, m)
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "GET /v1/events HTTP/1.1\r\nHost: vigil\r\n\r\n") // and never read
	receive(t, m.subscribed, "the subscription")
	shutDown()
}

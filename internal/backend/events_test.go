package backend

import (
	"context"
	"strings"
	"testing"

	"github.com/vigil-bosh/vigil/control"
)

// TestEventHubLostAndRecent: a reader that does not keep up loses events
// and is then told how many; the daemon never waits for it. A new reader
// gets the recent events first; ending its context closes its channel.
func TestEventHubLostAndRecent(t *testing.T) {
	var h Hub
	ctx, cancel := context.WithCancel(t.Context())
	slow := h.Subscribe(ctx, 0)
	for i := range subscriberBuffer + 10 {
		h.Publish(control.Event{Kind: control.EventStarted, Restarts: i})
	}
	for i := range subscriberBuffer {
		if ev := <-slow; ev.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
	}
	h.Publish(control.Event{Kind: control.EventStopped})
	if ev := <-slow; ev.Kind != control.EventLost || ev.Lost != 10 || !strings.Contains(ev.Message, "10 events lost") {
		t.Fatalf("marker %+v", ev)
	}
	if ev := <-slow; ev.Kind != control.EventStopped || ev.Seq != subscriberBuffer+11 {
		t.Fatalf("after the marker %+v", ev)
	}
	late := h.Subscribe(t.Context(), 3)
	for want := uint64(subscriberBuffer + 9); want <= subscriberBuffer+11; want++ {
		if ev := <-late; ev.Seq != want {
			t.Fatalf("recent event seq %d, want %d", ev.Seq, want)
		}
	}
	cancel()
	for range slow { // closed once its context is done
	}
	if none := h.Subscribe(t.Context(), -1); len(none) != 0 {
		t.Fatalf("%d recent events for a negative count", len(none))
	}
}

// TestAskedNamesWhoAsked: an action asked under a context that names its
// requester is an EventAction saying what and who; one the daemon does by
// itself (no requester) publishes nothing.
func TestAskedNamesWhoAsked(t *testing.T) {
	var h Hub
	evs := h.Subscribe(t.Context(), 0)
	h.Asked(t.Context(), "web", "", "reload")
	h.Asked(control.WithRequester(t.Context(), "page user admin"), "web", "server", "stop")
	h.Publish(control.Event{Kind: control.EventStopped})
	ev := <-evs
	if ev.Kind != control.EventAction || ev.Job != "web" || ev.Process != "server" || ev.Message != "stop, asked by page user admin" {
		t.Fatalf("first event %+v, want the asked stop", ev)
	}
	if ev := <-evs; ev.Kind != control.EventStopped {
		t.Fatalf("then %+v", ev)
	}
}

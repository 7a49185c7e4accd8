package daemon

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestOperatorActionsAreEvents: a stop, a signal and a reload asked over
// the control socket are each an action event naming what and the uid
// that asked, the stop's before its stopping; the first load, which no
// one asked for, is none.
func TestOperatorActionsAreEvents(t *testing.T) {
	h := newHarness(t)
	h.writeJob("web", pr{"server", "serve", nil})
	h.start(supervise.Timing{})
	h.rep.Expect(t, "ready")
	events, err := h.c.Events(t.Context(), 100)
	if err != nil {
		t.Fatal(err)
	}
	expectEvents(t, events, "web/server", control.EventStarted) // the first load: no action before it
	if err := h.c.Signal(t.Context(), control.SignalRequest{Job: "web", Process: "server", Signal: "HUP"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.Act(t.Context(), control.ActionRequest{Action: control.ActionStop, Job: "web", Process: "server"}); err != nil {
		t.Fatal(err)
	}
	got := expectEvents(t, events, "web/server", control.EventAction, control.EventAction, control.EventStopping)
	by := fmt.Sprintf(", asked by uid %d (", os.Getuid())
	if !strings.HasPrefix(got[0].Message, "signal HUP"+by) || !strings.HasPrefix(got[1].Message, "stop"+by) {
		t.Fatalf("action events %q, %q", got[0].Message, got[1].Message)
	}
	if _, err := h.c.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if ev := expectEvents(t, events, "/", control.EventAction)[0]; !strings.HasPrefix(ev.Message, "reload"+by) {
		t.Fatalf("reload event %q", ev.Message)
	}
}

// receiveEvent returns the next event of ch, failing the test if none
// comes within the guard or the stream ends.
func receiveEvent(t *testing.T, ch <-chan control.Event) control.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("the event stream ended")
		}
		return ev
	case <-time.After(testproc.Guard): // failure guard
		t.Fatal("no event came")
	}
	return control.Event{}
}

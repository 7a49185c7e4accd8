package systemd

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// pokeWatcher is a Watcher the test drives: each poke is one change seen.
type pokeWatcher struct {
	watching chan struct{} // closed once Watch runs
	poke     chan struct{}
	handled  chan struct{} // receives once each poke has been handled
}

func (w *pokeWatcher) Watch(ctx context.Context, units func() []string, changed func()) {
	close(w.watching)
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.poke:
			changed()
			w.handled <- struct{}{}
		}
	}
}

// TestDriverStreamsEvents: the systemd back end derives events from the
// units' states each time its Watcher sees a change, and serves them on
// the control API's event stream, as the native one does.
func TestDriverStreamsEvents(t *testing.T) {
	h, d := newFakeHost(t)
	w := &pokeWatcher{watching: make(chan struct{}), poke: make(chan struct{}), handled: make(chan struct{})}
	d.cfg.Watcher = w
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	select {
	case <-w.watching:
	case err := <-done:
		t.Fatalf("run ended: %v", err)
	}
	events, err := control.NewClient(h.l.ControlSocket()).Events(t.Context(), 16)
	if err != nil {
		t.Fatal(err)
	}
	expect := func(id string, kinds ...string) {
		t.Helper()
		guard := time.NewTimer(testproc.Guard)
		defer guard.Stop()
		var got []string
		for len(got) < len(kinds) {
			select {
			case ev := <-events:
				if ev.Job+"/"+ev.Process == id {
					got = append(got, ev.Kind)
				}
			case <-guard.C:
				t.Fatalf("%s: events %v, want %v", id, got, kinds)
			}
		}
		if !slices.Equal(got, kinds) {
			t.Fatalf("%s: events %v, want %v", id, got, kinds)
		}
	}
	expect("web/worker", control.EventStarted) // from the first reading, after the first load
	changed := d.Changes()
	poke := func(state string) {
		h.setState(t, "vigil-web-worker.service", state)
		w.poke <- struct{}{}
		<-w.handled
	}
	poke("activating auto-restart 3")
	expect("web/worker", control.EventBackoff)
	select {
	case <-changed:
	default:
		t.Fatal("a change seen did not wake the watchers of Changes")
	}
	poke("active running 3")
	expect("web/worker", control.EventRestarted)
	poke("failed failed 5")
	expect("web/worker", control.EventExited, control.EventGaveUp)
	if !d.events.Tracks(supervise.ID{Job: "db", Process: "postgres"}) {
		t.Fatal("the hub does not follow db/postgres")
	}
}

func TestServiceID(t *testing.T) {
	for _, id := range []supervise.ID{{Job: "web", Process: "server"}, {Job: "a-b", Process: "c.d"}, {Job: "x_1", Process: "y:z"}} {
		got, ok := serviceID(ServiceName(id.Job, id.Process))
		if !ok || got != id {
			t.Errorf("%v: got %v %v", id, got, ok)
		}
	}
	for _, name := range []string{"vigil-web.target", "garden.service", "vigil-web.service", `vigil-a\x2-b.service`, "vigil-a-b-c.service"} {
		if id, ok := serviceID(name); ok {
			t.Errorf("%s: read as %v", name, id)
		}
	}
}

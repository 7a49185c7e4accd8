package daemon

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/supervise/restart"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// expectEvents reads the events of job/proc from ch (skipping others)
// and checks that the next ones have kinds, in order; it returns them.
func expectEvents(t *testing.T, ch <-chan control.Event, id string, kinds ...string) []control.Event {
	t.Helper()
	guard := time.NewTimer(testproc.Guard)
	defer guard.Stop()
	var got []control.Event
	for len(got) < len(kinds) {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("the stream ended after %v", got)
			}
			if ev.Job+"/"+ev.Process != id {
				continue
			}
			if ev.Kind != kinds[len(got)] {
				t.Fatalf("%s: event %d is %s (%s), want %s; before it: %+v", id, len(got), ev.Kind, ev.Message, kinds[len(got)], got)
			}
			got = append(got, ev)
		case <-guard.C:
			t.Fatalf("%s: timed out waiting for %v, got %+v", id, kinds, got)
		}
	}
	return got
}

// TestEventsOverSocket: a process killed with SIGKILL shows as exited,
// then restarted, in order, over the control socket; a configuration that
// fails to load is an event too.
func TestEventsOverSocket(t *testing.T) {
	h := newHarness(t)
	h.writeJob("web", pr{"server", "serve", nil})
	h.start(supervise.Timing{})
	first := h.rep.Expect(t, "ready")
	events, err := h.c.Events(t.Context(), 10)
	if err != nil {
		t.Fatal(err)
	}
	expectEvents(t, events, "web/server", control.EventStarted) // from the recent ones
	unix.Kill(first.PID, unix.SIGKILL)
	got := expectEvents(t, events, "web/server", control.EventExited, control.EventRestarted)
	if e := got[0].Exit; e == nil || e.Signal != "SIGKILL" || got[0].Restarts != 1 || got[1].Seq <= got[0].Seq {
		t.Fatalf("exit event %+v", got[0])
	}
	if got[1].DownSeconds <= 0 || got[1].PID == 0 || got[1].PID != h.status("web", "server").PID {
		t.Fatalf("restart event %+v", got[1])
	}
	h.rep.Expect(t, "ready")

	h.writeFile("web", "processes:\n- name: server\n  executable: [unclosed\n")
	if _, err := h.c.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	ev := expectEvents(t, events, "web/", control.EventConfigError)[0]
	if !strings.Contains(ev.Message, "bpm.yml") {
		t.Fatalf("config error event %+v", ev)
	}
}

// TestEventsGiveUp: a process that keeps crashing is restarted up to its
// limit, and then the daemon gives up on it.
func TestEventsGiveUp(t *testing.T) {
	h := newHarness(t)
	h.writeJob("flaky", pr{"crash", "exit", []string{testproc.EnvCode + "=1"}})
	h.start(supervise.Timing{Restart: restart.Policy{Initial: time.Millisecond, Limit: restart.Limit{Count: 2, Within: time.Hour}}})
	events, _ := h.d.Events(t.Context(), 1024) // from the first start on (all the hub keeps)
	var kinds []string
	guard := time.NewTimer(testproc.Guard)
	defer guard.Stop()
	for len(kinds) == 0 || kinds[len(kinds)-1] != control.EventGaveUp {
		select {
		case ev := <-events:
			kinds = append(kinds, ev.Kind)
			if ev.Kind == control.EventExited && (ev.Exit == nil || ev.Exit.Code != 1) {
				t.Fatalf("exit event %+v", ev)
			}
		case <-guard.C:
			t.Fatalf("never gave up: %v", kinds)
		}
	}
	if n := strings.Count(strings.Join(kinds, " "), control.EventExited); n != 3 {
		t.Fatalf("%d exits before giving up, want 3: %v", n, kinds)
	}
	if st := h.status("flaky", "crash"); st.State != "failed" || st.Restarts != 2 {
		t.Fatalf("status %+v", st)
	}
}

// TestEventsProbeFailure: a readiness probe that starts failing is an
// event, and so is the process turning not ready; both turn back.
func TestEventsProbeFailure(t *testing.T) {
	srv := newSwitchServer(t)
	h := newHarness(t)
	h.writeProbed("web", fmt.Sprintf("  health:\n    readiness: {http: {port: %d}, period: 20ms, failure_threshold: 1}\n", srv.port))
	h.start(supervise.Timing{})
	h.waitFor("ready", func() bool { return h.status("web", "server").Ready })
	events, err := h.c.Events(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	srv.set(true)
	got := expectEvents(t, events, "web/server", control.EventProbeFailed, control.EventNotReady)
	if !strings.Contains(got[0].Message, "readiness probe failed") {
		t.Fatalf("probe event %+v", got[0])
	}
	srv.set(false)
	expectEvents(t, events, "web/server", control.EventProbeRecovered, control.EventReady)
}

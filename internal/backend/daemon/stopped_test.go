package daemon

import (
	"testing"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

// TestOperatorStopSurvivesRestart: a process an operator stopped stays
// stopped when the daemon restarts (as an unmonitored monit service does);
// one started again starts again with the next daemon. A daemon's own
// shutdown is not an operator's stop.
func TestOperatorStopSurvivesRestart(t *testing.T) {
	h := newHarness(t)
	h.writeJob("web", pr{"server", "serve", nil}, pr{"worker", "serve", nil})
	h.start(supervise.Timing{})
	h.rep.Expect(t, "ready")
	h.rep.Expect(t, "ready")
	act := func(action string) {
		t.Helper()
		if _, err := h.c.Act(t.Context(), control.ActionRequest{Action: action, Job: "web", Process: "server"}); err != nil {
			t.Fatal(err)
		}
	}
	act(control.ActionStop)
	restart := func() {
		t.Helper()
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		h.start(supervise.Timing{})
	}

	restart()
	h.rep.Expect(t, "ready") // the worker, and only it
	if st := h.status("web", "server"); st.State != "stopped" || st.PID != 0 {
		t.Fatalf("the stopped server after a restart: %+v", st)
	}
	if st := h.status("web", "worker"); st.State != "running" {
		t.Fatalf("the worker after a restart: %+v", st)
	}

	act(control.ActionStart)
	h.rep.Expect(t, "ready")
	restart()
	h.rep.Expect(t, "ready")
	h.rep.Expect(t, "ready")
	for _, p := range []string{"server", "worker"} {
		if st := h.status("web", p); st.State != "running" {
			t.Fatalf("%s after start and restart: %+v", p, st)
		}
	}
}

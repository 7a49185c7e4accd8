package daemon

import (
	"errors"
	"strings"
	"testing"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

// TestEscapingNamesRefused: a job or process name that could escape its
// directory is a bad request in every control call that takes one, before
// anything is looked up.
func TestEscapingNamesRefused(t *testing.T) {
	h := newHarness(t)
	h.writeJob("web", pr{"server", "serve", nil})
	h.start(supervise.Timing{})
	h.rep.Expect(t, "ready")
	for _, bad := range []string{"..", ".", "../etc", "a/b", "/etc", "web/../web", "web\x00"} {
		for _, req := range []control.ActionRequest{
			{Action: "start", Job: bad},
			{Action: "stop", Job: "web", Process: bad},
		} {
			if _, err := h.c.Act(t.Context(), req); !errors.Is(err, control.ErrBadRequest) {
				t.Errorf("act %+v: %v", req, err)
			}
		}
		for _, req := range []control.SignalRequest{
			{Job: bad, Process: "server", Signal: "HUP"},
			{Job: "web", Process: bad, Signal: "HUP"},
		} {
			if err := h.c.Signal(t.Context(), req); !errors.Is(err, control.ErrBadRequest) || !strings.Contains(err.Error(), "name") {
				t.Errorf("signal %+v: %v", req, err)
			}
		}
	}
	if st := h.status("web", "server"); st.State != "running" || st.Restarts != 0 {
		t.Fatalf("web after the refusals: %+v", st)
	}
}

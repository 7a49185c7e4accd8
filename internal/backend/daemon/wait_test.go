package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestStartWaitsForRunning: a start that waits for running fails with the
// exit of a process that dies right after its exec, where a settled start
// says "running".
func TestStartWaitsForRunning(t *testing.T) {
	h := newHarness(t)
	h.writeJob("flaky", pr{"crash", "exit", []string{testproc.EnvCode + "=3"}})
	h.start(supervise.Timing{})
	h.rep.Expect(t, "exiting 3")
	if _, err := h.c.Act(t.Context(), control.ActionRequest{Action: "stop", Job: "flaky"}); err != nil {
		t.Fatal(err)
	}
	// An uptime far longer than the process lives: only its exit can end
	// the wait, however loaded the machine.
	ps, err := h.c.Act(t.Context(), control.ActionRequest{Action: "start", Job: "flaky", Wait: control.WaitRunning,
		UptimeSeconds: 3600})
	if !errors.Is(err, control.ErrFailed) || !strings.Contains(err.Error(), "flaky/crash exited after it started: exited with code 3") ||
		len(ps) != 1 || ps[0].LastExit == nil || ps[0].LastExit.Code != 3 {
		t.Fatalf("start --wait running: %+v %v", ps, err)
	}
	// WaitNone answers at once, before anything has run.
	h.c.Act(t.Context(), control.ActionRequest{Action: "stop", Job: "flaky"})
	ps, err = h.c.Act(t.Context(), control.ActionRequest{Action: "start", Job: "flaky", Wait: control.WaitNone})
	if err != nil || len(ps) != 1 {
		t.Fatalf("start --wait none: %+v %v", ps, err)
	}
	if _, err := h.c.Act(t.Context(), control.ActionRequest{Action: "start", Job: "flaky", Wait: "healthy"}); !errors.Is(err, control.ErrBadRequest) {
		t.Fatalf("an unknown wait: %v", err)
	}
}

// TestStartWaitsForReady: a start that waits for ready returns only once
// the readiness probe passes, and times out saying which probe fails.
func TestStartWaitsForReady(t *testing.T) {
	h := newHarness(t)
	flag := filepath.Join(h.layout.Root(), "ready-flag")
	h.writeProbed("web", "  health:\n    readiness:\n      exec: [/bin/test, -e, "+flag+"]\n      period: 100ms\n")
	h.start(supervise.Timing{})
	h.rep.Expect(t, "ready")
	_, err := h.c.Act(t.Context(), control.ActionRequest{Action: "restart", Job: "web", Wait: control.WaitReady, TimeoutSeconds: 0.5})
	if !errors.Is(err, control.ErrTimeout) || !strings.Contains(err.Error(), "web/server not ready; readiness probe failing") {
		t.Fatalf("restart --wait ready --timeout 0.5s: %v", err)
	}
	type reply struct {
		ps  []control.ProcessStatus
		err error
	}
	replied := make(chan reply, 1)
	go func() {
		ps, err := h.c.Act(context.Background(), control.ActionRequest{Action: "restart", Job: "web", Wait: control.WaitReady})
		replied <- reply{ps, err}
	}()
	// The new instance has failed its probe once: by then a wait that
	// ended at the exec would have answered long since.
	h.rep.Expect(t, "ready")
	h.waitFor("a failed readiness probe of the new instance", func() bool {
		st := h.status("web", "server")
		return st.Restarts == 0 && st.State == "running" && len(st.Probes) == 1 && st.Probes[0].Failures > 0 &&
			st.Probes[0].At.After(st.Since)
	})
	select {
	case r := <-replied:
		t.Fatalf("the restart answered before the process was ready: %+v %v", r.ps, r.err)
	default:
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := <-replied
	if r.err != nil || len(r.ps) != 1 || !r.ps[0].Ready {
		t.Fatalf("restart --wait ready: %+v %v", r.ps, r.err)
	}
}

package daemon

import (
	"testing"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

// TestStatusUsage: a running process's status carries its resource use,
// its descendants included; a stopped one has none.
func TestStatusUsage(t *testing.T) {
	h := newHarness(t)
	h.writeJob("web", pr{"server", "serve", nil}, pr{"tree", "grandchild", nil})
	h.start(supervise.Timing{})
	h.rep.Expect(t, "ready")
	h.rep.Expect(t, "ready") // the grandchild's serve, and the server
	h.rep.Expect(t, "ready")
	one := h.status("web", "server").Usage
	if one == nil || one.RSSBytes <= 0 || one.OpenFDs < 3 || one.Processes != 1 || one.CPUSeconds < 0 {
		t.Fatalf("server's usage %+v", one)
	}
	two := h.status("web", "tree").Usage
	if two == nil || two.Processes != 2 || two.RSSBytes <= one.RSSBytes {
		t.Fatalf("usage of a process with a child %+v (one alone: %+v)", two, one)
	}
	if _, err := h.c.Act(t.Context(), control.ActionRequest{Action: control.ActionStop, Job: "web", Process: "server"}); err != nil {
		t.Fatal(err)
	}
	if u := h.status("web", "server").Usage; u != nil {
		t.Fatalf("a stopped process uses %+v", u)
	}
}

// TestUsageUnderAnInit: with only the init's pid known (the systemd
// back end), the use is that of the init's children, and the descriptors
// are those of its only child, the executable.
func TestUsageUnderAnInit(t *testing.T) {
	h := newHarness(t)
	h.writeJob("web", pr{"server", "serve", nil})
	h.start(supervise.Timing{})
	h.rep.Expect(t, "ready")
	st := h.status("web", "server")
	ps := []control.ProcessStatus{
		{Job: "web", Process: "server", State: "running", PID: st.PID}, // no ExecPID
		{Job: "web", Process: "down", State: "stopped"},
	}
	var usage backend.UsageCache
	if err := usage.Fill(ps); err != nil {
		t.Fatal(err)
	}
	if u := ps[0].Usage; u == nil || u.Processes != 1 || u.RSSBytes <= 0 || u.OpenFDs < 3 {
		t.Fatalf("usage below the init: %+v", u)
	}
	if ps[1].Usage != nil {
		t.Fatalf("a stopped process has usage %+v", ps[1].Usage)
	}
}

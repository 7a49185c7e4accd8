package daemon

import (
	"os"
	"testing"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/supervise"
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
	var usage UsageCache
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

// TestUsagePassShared: statuses within a pass's second share its figures,
// descriptor counts included: nothing is read in /proc again for them.
func TestUsagePassShared(t *testing.T) {
	self := os.Getpid()
	ps := func() []control.ProcessStatus {
		return []control.ProcessStatus{{Job: "j", Process: "p", State: "running", PID: self, ExecPID: self}}
	}
	var usage UsageCache
	first := ps()
	if err := usage.Fill(first); err != nil || first[0].Usage == nil {
		t.Fatalf("fill: %v, %+v", err, first[0].Usage)
	}
	// Open more descriptors: a fresh count would see them.
	var files []*os.File
	for range 5 {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	second := ps()
	if err := usage.Fill(second); err != nil {
		t.Fatal(err)
	}
	if second[0].Usage.OpenFDs != first[0].Usage.OpenFDs {
		t.Fatalf("the second status counted descriptors again: %d, then %d", first[0].Usage.OpenFDs, second[0].Usage.OpenFDs)
	}
}

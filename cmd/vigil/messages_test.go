package main

import (
	"slices"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
)

// TestLastRuns: a crash loop's stderr, the same line at each start, is
// shown once with its count, not once a restart.
func TestLastRuns(t *testing.T) {
	lines := []string{"starting", "cannot bind", "cannot bind", "cannot bind", "other", "cannot bind", "cannot bind"}
	got := lastRuns(lines, 3, false)
	want := []lineRun{{"cannot bind", 3, false}, {"other", 1, false}, {"cannot bind", 2, false}}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if got := lastRuns([]string{"x", "x"}, 10, true); !slices.Equal(got, []lineRun{{"x", 2, true}}) {
		t.Errorf("a run from the start of a cut window: %+v", got)
	}
}

// TestDrainWording: vigil drain and status say how the daemon's drain
// went in words, not "drain drained by the daemon (asked by request)".
func TestDrainWording(t *testing.T) {
	began := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ended := began.Add(3 * time.Second)
	d := control.DrainState{State: control.DrainDone, By: "request", Began: began, Ended: &ended}
	if got := drainSentence(d); got != "the daemon drained every job (begun by a drain request)" {
		t.Errorf("drain: %q", got)
	}
	d.State, d.By, d.Error = control.DrainFailed, "signal", "web: drain exited 1"
	if got := drainSentence(d); got != "the daemon's drain failed (begun by SIGTERM)" {
		t.Errorf("drain: %q", got)
	}
	if got := drainLine(d, began.Add(10*time.Second)); got != "drain: failed (begun by SIGTERM 10s ago, took 3s): web: drain exited 1" {
		t.Errorf("status: %q", got)
	}
}

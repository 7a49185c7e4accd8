package launch

import (
	"log/slog"
	"slices"
	"testing"

	"github.com/vigil-bosh/vigil/internal/launch/procinit"
)

// TestDropsAddUpAcrossInstances feeds the reports of two instances in turn:
// the runner's counts are the sum of each init's cumulative counts, and the
// log tells when writes start failing and when they succeed again.
func TestDropsAddUpAcrossInstances(t *testing.T) {
	logs := make(logEvents, 8)
	d := &drops{log: slog.New(logs), label: "job/p"}
	out := func(stdout, stderr int64, dropping bool) procinit.Report {
		return procinit.Report{Event: procinit.EventOutput, DroppedStdout: stdout, DroppedStderr: stderr, Dropping: dropping}
	}
	var first, second outputSeen
	first = d.note(first, out(100, 0, true))
	first = d.note(first, out(250, 10, true)) // doubled
	second = d.note(second, out(7, 0, true))  // a new instance starts counting at 0
	first = d.note(first, procinit.Report{Event: procinit.EventExit, DroppedStdout: 300, DroppedStderr: 10})
	second = d.note(second, out(7, 0, false))
	if o, e := d.stdout.Load(), d.stderr.Load(); o != 307 || e != 10 {
		t.Fatalf("dropped %d, %d; want 307, 10", o, e)
	}
	var got []string
	for len(logs) > 0 {
		got = append(got, <-logs)
	}
	want := []string{"log writes failing: dropping output", "log writes failing: dropping output", "log writes succeed again"}
	if !slices.Equal(got, want) {
		t.Fatalf("logged %q, want %q", got, want)
	}
	var none *drops
	if s := none.note(outputSeen{}, out(5, 5, true)); s != (outputSeen{}) {
		t.Fatalf("a nil drops noted %+v", s)
	}
}

package container

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/lifecycle"
)

// TestBudgetEndJudgedByTheProcess: when the drain budget ends, a drain
// whose job's processes have exited is done, whether its script waited to
// be called again (a dynamic drain's negative answer) or still ran; one
// whose process still runs has failed.
func TestBudgetEndJudgedByTheProcess(t *testing.T) {
	dir := t.TempDir()
	l, _ := boshpath.New(dir)
	drain := func(job, body string) {
		p := filepath.Join(l.JobBinDir(job), "drain")
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	drain("gone", "echo -5")             // waiting to be called again; its process has exited
	drain("stays", "echo -5")            // the same, but its process still runs
	drain("hung", "exec sleep 1000")     // still running its script; its process has exited
	drain("fine", "echo 0")              // done before the budget
	drain("broken", "echo nonsense >&2") // no answer, whatever the budget
	m := &fakeManager{st: control.Status{Processes: []control.ProcessStatus{
		{Job: "gone", Process: "gone", State: "stopped", Unmonitored: true},
		{Job: "stays", Process: "a", State: "stopped", Unmonitored: true},
		{Job: "stays", Process: "b", State: "running", Unmonitored: true},
		{Job: "hung", Process: "hung", State: "backoff", Unmonitored: true},
		{Job: "fine", Process: "fine", State: "running", Unmonitored: true},
		{Job: "broken", Process: "broken", State: "stopped", Unmonitored: true},
	}}}
	err := DrainAll(context.Background(), m, lifecycle.DrainOptions{Layout: l, Kind: lifecycle.Shutdown,
		Budget: 300 * time.Millisecond, Wait: waitNoneButZero})
	want := "2 of 5 drain scripts failed. Failed Jobs: broken, stays. Successful Jobs: fine, gone, hung."
	if err == nil || !strings.HasPrefix(err.Error(), want+"\n") {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	if !strings.Contains(err.Error(), "stays: timed out waiting 5s to call again: the drain budget of 300ms ran out") ||
		!strings.Contains(err.Error(), `broken: Script did not return a signed integer: printed ""`) {
		t.Fatalf("why: %v", err)
	}
}

// waitNoneButZero is a drain's clock on which only a wait of 0 ends: a
// negative answer waits until the budget ends.
func waitNoneButZero(d time.Duration) <-chan time.Time {
	if d > 0 {
		return nil
	}
	c := make(chan time.Time, 1)
	c <- time.Time{}
	return c
}

// recorder keeps the log records and events of a report.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
	events  []control.Event
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec)
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }
func (r *recorder) publish(ev control.Event)           { r.events = append(r.events, ev) }

// line renders a record as level, message and attributes.
func line(rec slog.Record) string {
	s := rec.Level.String() + " " + rec.Message
	rec.Attrs(func(a slog.Attr) bool {
		s += " " + a.Key + "=" + a.Value.String()
		return true
	})
	return s
}

// TestDrainOutcomesReported: each job's drain is logged at its level with
// the script's answer and exit, published as an event, and the summary is
// an error when one failed, never "drained" at INFO.
func TestDrainOutcomesReported(t *testing.T) {
	rec := &recorder{}
	notInteger := errors.New(`Script did not return a signed integer: printed "" (exit status 1)`)
	outs := []outcome{
		{Result: lifecycle.Result{Job: "broken", Err: notInteger, Duration: 20 * time.Millisecond, Exit: "exit status 1"}},
		{Result: lifecycle.Result{Job: "slow", Duration: 2 * time.Second, Output: "0", Exit: "exit status 0"}},
		{Result: lifecycle.Result{Job: "waited", Err: lifecycle.ErrTimedOut, Output: "-5", Exit: "exit status 0"}, gone: true},
	}
	err := report(slog.New(rec), rec.publish, outs)
	if err == nil || !strings.HasPrefix(err.Error(), "1 of 3 drain scripts failed. Failed Jobs: broken. Successful Jobs: slow, waited.") {
		t.Fatalf("summary %v", err)
	}
	var lines []string
	for _, r := range rec.records {
		lines = append(lines, line(r))
	}
	want := []string{
		`ERROR drain failed job=broken output= exit=exit status 1 duration=20ms error=` + notInteger.Error(),
		`INFO drain done job=slow output=0 exit=exit status 0 duration=2s`,
		`INFO drain done: its processes had exited when the budget ran out job=waited output=-5 exit=exit status 0 duration=0s ended=timed out`,
		`ERROR drains failed error=` + err.Error(),
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("log:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	kinds := []string{}
	for _, ev := range rec.events {
		kinds = append(kinds, ev.Job+" "+ev.Kind)
	}
	if strings.Join(kinds, ", ") != "broken drain-failed, slow drained, waited drained" ||
		rec.events[0].Message != notInteger.Error()+`; output "", exit status 1` {
		t.Fatalf("events %+v", rec.events)
	}
	rec = &recorder{}
	if err := report(slog.New(rec), rec.publish, outs[1:2]); err != nil || line(rec.records[1]) != "INFO drained jobs=1" {
		t.Fatalf("all done: %v %v", err, rec.records)
	}
}
